package replay

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Skip reasons: why a statement read from the log was not run. They are
// results' (results.SkipReason), the vocabulary of the results boundary,
// named here too for the engine's brevity.
const (
	SkipParamsMissing     = results.SkipParamsMissing
	SkipParamsTruncated   = results.SkipParamsTruncated
	SkipCopyData          = results.SkipCopyData
	SkipFastPath          = results.SkipFastPath
	SkipNotReadOnly       = results.SkipNotReadOnly
	SkipExecuteUnknown    = results.SkipExecuteUnknown
	SkipPrepareSkipped    = results.SkipPrepareSkipped
	SkipConnectFailed     = results.SkipConnectFailed
	SkipConnectionLost    = results.SkipConnectionLost
	SkipBrokenTransaction = results.SkipBrokenTransaction
	SkipDependencyLost    = results.SkipDependencyLost
	SkipTargetGone        = results.SkipTargetGone
	SkipInterrupted       = results.SkipInterrupted
)

var skipReasons = [...]results.SkipReason{SkipParamsMissing, SkipParamsTruncated, SkipCopyData, SkipFastPath, SkipNotReadOnly, SkipExecuteUnknown, SkipPrepareSkipped,
	SkipConnectFailed, SkipConnectionLost, SkipBrokenTransaction, SkipDependencyLost, SkipTargetGone, SkipInterrupted}

func skipIndex(reason results.SkipReason) int { return slices.Index(skipReasons[:], reason) }

// explainedCauses are the causes of differing answers counted in
// Outcomes.AnswerDiffersExplained, in counters.answerExplained's order.
var explainedCauses = [...]querystats.AnswerCause{querystats.CauseVolatile, querystats.CauseServerState, querystats.CauseSequence,
	querystats.CauseRaced, querystats.CauseRacedRelation, querystats.CauseSessionState,
	querystats.CauseAfterDivergence, querystats.CauseAfterDivergenceRelation}

// faultSkip says, by skipIndex, whether a reason is a fault's: a commit
// skipped so did not happen on the target (see syncRun.lose).
var faultSkip = func() (f [len(skipReasons)]bool) {
	for i, r := range skipReasons {
		f[i] = r.Lost()
	}
	return f
}()

// errStopping ends an execution that the stop reached before it was sent.
var errStopping = errors.New("the replay is stopping")

// ConnectionLostSQLState keys errors_by_sqlstate for a connection that broke
// without a server error (08006, connection_failure); CanceledSQLState for
// statements cut by the hard deadline without one.
const (
	ConnectionLostSQLState = "08006"
	CanceledSQLState       = "57014"
	UnknownSQLState        = results.UnknownSQLState
)

// counters are updated by every goroutine with atomics; the live progress
// reads them.
type counters struct {
	total, executed, failed, empty atomic.Int64
	skipped                        [len(skipReasons)]atomic.Int64 // by skipIndex

	sessions, open, reconnects, connectFailed, connectRetries atomic.Int64
	// dialFailed: connection attempts that failed (each retry one),
	// beside the setup times the shards record (results.Connections).
	dialFailed atomic.Int64
	// createdRetries: statements run again, a relation another shard
	// creates not there yet (awaitCreatedElsewhere).
	createdRetries     atomic.Int64
	connectFailedAlike atomic.Int64

	ran, origFailed, bothFailed, onlyTarget, onlyOrig atomic.Int64
	answered, answerDiffers                           atomic.Int64
	// answerExplained (by explainedCauses' order), answerTargetData and
	// answerUnexplained split answerDiffers by what explains them
	// (answerCause).
	answerExplained                     [len(explainedCauses)]atomic.Int64
	answerTargetData, answerUnexplained atomic.Int64
	// targetDataTables counts answerTargetData by table (an execution
	// that reads several counts under each). Both count every execution
	// the target's data would explain; dataReads splits them, at the
	// end, into those that recur and the suspect (fill).
	targetDataTables tally
	dataReads        dataReads
	// onlyTargetSessionState: failures only on the target in sessions
	// recorded from the middle that their state from before explains.
	onlyTargetSessionState atomic.Int64
	// preamble*: the preambles of sessions recorded from the middle.
	preambleSessions, preambleRan, preambleFailed atomic.Int64

	// filtered counts what the dispatcher could not replay: events
	// without a session, a session's end without its start; what the
	// sources' selection left out comes with their counts.
	filteredEvents, filteredStatements           atomic.Int64
	events, budgetWaits, overBudget, maxBuffered atomic.Int64
	budgetWaitNS                                 atomic.Int64 // the reader's time waiting at the budget

	completions atomic.Int64 // events finished, for the stall watch
	errors      atomic.Int64
	lastIssued  atomic.Int64 // log time of the latest statement issued

	// replayerDelayed: statements held up by a session in a sync wait;
	// lagTargetUS and lagReplayerUS: the lag by its cause (lagSource).
	replayerDelayed            atomic.Int64
	lagTargetUS, lagReplayerUS atomic.Int64
	// At the stop: statements in flight cancelled on the server, open
	// transactions rolled back.
	cancelled, rolledBack atomic.Int64
	// silentConns: connections cut by the I/O watch, the target
	// answering others.
	silentConns atomic.Int64
	// realigned: failed strings that left a block open on the target
	// which the log had closed, rolled back.
	realigned atomic.Int64
}

// shard aggregates the figures of some sessions under one lock, so that
// sessions seldom meet on a lock and no session owns a histogram.
type shard struct {
	mu  sync.Mutex
	set *querystats.Set
	lag *results.Recorder
	// conns are the setup times of the connections its sessions made
	// (results.Connections), µs.
	conns   *results.Recorder
	errors  map[string]int64
	samples map[sampleKey]*results.ErrorSample
	// onlyTarget and bakedIDs: the errors of statements that succeeded
	// in the original, by cause (results.Outcomes).
	onlyTarget    map[string]int64
	bakedIDs      int64
	afterFastPath int64
	// races are the executions whose differing answers only a race
	// not yet settled would explain (pendingRace); settleAt is the
	// length at which the settled ones are decided.
	races    []pendingRace
	settleAt int
	// after holds the round trips issued after the schedule's window,
	// apart (window.go); nil until the first.
	after *querystats.Set
	_     [64]byte
}

// pendingRace is an execution whose differing answers only a race would
// explain, compared before its syncdep.Race was settled: a transaction
// the tracker reads after the statement (its COMMIT answered later in
// the log) may still find that it raced. Deciding at once would make the
// explanation depend on how far ahead the dispatcher had read when the
// statement's answer came, which a busy machine changes: 1 of 2,570
// answers was left unexplained so in TestCaptureRacesExplained (issue
// 44). stats are the queries whose differing answers the race would
// explain, cause the execution's cause then.
type pendingRace struct {
	race   *syncdep.Race
	stats  []*querystats.Stats
	cause  querystats.AnswerCause
	tables []string
	// reach is the execution's (syncdep.Step.Reach): tainted once it
	// is found to race, asked of the taint before the target's data
	// is blamed.
	reach *syncdep.Reach
	// wide: an answer differs in more than values (answerTally.rows):
	// a read of many rows meets the taint (syncdep.Taint.Affects); row:
	// the integers of the one row its values differ in, asked of the
	// taint otherwise (syncdep.Taint.AffectsRow).
	wide bool
	row  []int64
	// note is the execution, kept once decided (Options.KeepAnswers);
	// nil when not asked. key names the rows it reads (readKey), with
	// tables.
	note *results.DifferingAnswer
	key  string
}

// minSettle is how many pending races a shard keeps before it decides
// those settled meanwhile.
const minSettle = 1024

// addPendingRace keeps p, with the shard's lock held, deciding the
// settled ones when they grew to settleAt.
func (s *shard) addPendingRace(r *Replayer, p pendingRace) {
	s.races = append(s.races, p)
	if len(s.races) >= max(s.settleAt, minSettle) {
		s.settleRaces(r, false)
		s.settleAt = 2 * len(s.races)
	}
}

// settleRaces decides the pending races that are settled (all: every
// one, once the tracker read the whole log), with the shard's lock held:
// the differing answers explained by a race, or unexplained.
func (s *shard) settleRaces(r *Replayer, all bool) {
	kept := s.races[:0]
	for _, p := range s.races {
		if !all && !p.race.Settled() {
			kept = append(kept, p)
			continue
		}
		cause, what := raceCause(p.race.Kind())
		var after querystats.AnswerCause
		if cause == "" {
			after, what = afterDivergence(r.taint.Affects(p.reach, p.wide), taintedRead)
		}
		if cause == "" && after == "" {
			after, what = afterDivergence(r.taint.AffectsRow(p.reach, p.row), taintedRow)
		}
		if cause != "" || after != "" || len(p.tables) == 0 {
			// Its answers diverged for another reason than the
			// target's data: what it wrote is tainted (taints).
			r.taint.Add(p.reach)
		}
		switch {
		case after != "":
			for _, st := range p.stats {
				st.ExplainAnswer(after, what)
			}
			r.countAnswer(p.note, after, nil, "")
		case cause != "":
			for _, st := range p.stats {
				st.ExplainAnswer(cause, what)
			}
			if p.cause == querystats.CauseRaced {
				// The placeholder answerTally.add left: the race's kind.
				p.cause = cause
			}
			r.countAnswer(p.note, p.cause, nil, "")
		case len(p.tables) > 0:
			// No concurrent transaction touched what it reads.
			r.countAnswer(p.note, querystats.CauseTargetData, p.tables, p.key)
		default:
			r.countAnswer(p.note, "", nil, "")
		}
	}
	clear(s.races[len(kept):])
	s.races = kept
}

type sampleKey struct{ code, fp string }

func newShard() *shard {
	return &shard{
		set:        querystats.NewSet(),
		lag:        results.NewRecorder(),
		conns:      results.NewRecorder(),
		errors:     map[string]int64{},
		samples:    map[sampleKey]*results.ErrorSample{},
		onlyTarget: map[string]int64{},
	}
}

func (s *shard) recordLag(us int64) { s.lag.Record(us) }

// recordConnect records a connection's setup time.
func (s *shard) recordConnect(d time.Duration) {
	s.mu.Lock()
	s.conns.Record(d.Microseconds())
	s.mu.Unlock()
}

// connFailures groups failed connections.
type connFailures struct {
	mu sync.Mutex
	m  map[results.ConnectFailure]int64
}

func (c *connFailures) add(f results.ConnectFailure) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[results.ConnectFailure]int64{}
	}
	c.m[f]++
	c.mu.Unlock()
}

func (c *connFailures) remove(f results.ConnectFailure) {
	c.mu.Lock()
	if c.m[f]--; c.m[f] <= 0 {
		delete(c.m, f)
	}
	c.mu.Unlock()
}

func (c *connFailures) list() []results.ConnectFailure {
	c.mu.Lock()
	defer c.mu.Unlock()
	return results.SortConnectFailures(c.m)
}

// fill copies the counters into res.
func (c *counters) fill(res *results.Result) {
	res.Statements = results.StatementCounts{
		Total:    c.total.Load(),
		Executed: c.executed.Load(),
		Failed:   c.failed.Load(),
		Empty:    c.empty.Load(),
		Skipped:  map[results.SkipReason]int64{},
	}
	for i, r := range skipReasons {
		if n := c.skipped[i].Load(); n > 0 {
			res.Statements.Skipped[r] = n
		}
	}
	res.Sessions.Total = c.sessions.Load()
	res.Sessions.Reconnects = c.reconnects.Load()
	res.Sessions.ConnectFailed = c.connectFailed.Load()
	res.Sessions.ConnectRetries = c.connectRetries.Load()
	res.Sessions.CreatedElsewhereRetries = c.createdRetries.Load()
	res.Sessions.ConnectFailedAsOriginal = c.connectFailedAlike.Load()
	res.Outcomes = results.Outcomes{
		Ran:                  c.ran.Load(),
		OriginalFailed:       c.origFailed.Load(),
		BothFailed:           c.bothFailed.Load(),
		FailedOnlyOnTarget:   c.onlyTarget.Load(),
		FailedOnlyInOriginal: c.onlyOrig.Load(),
		Answered:             c.answered.Load(),
		AnswerDiffers:        c.answerDiffers.Load(),
	}
	for i, cause := range explainedCauses {
		if n := c.answerExplained[i].Load(); n > 0 {
			if res.Outcomes.AnswerDiffersExplained == nil {
				res.Outcomes.AnswerDiffersExplained = map[string]int64{}
			}
			res.Outcomes.AnswerDiffersExplained[string(cause)] = n
		}
	}
	res.Outcomes.AnswerDiffersUnexplained = c.answerUnexplained.Load()
	res.Outcomes.AnswerDiffersTargetData, res.Outcomes.AnswerDiffersTargetDataByTable,
		res.Outcomes.AnswerDiffersSuspect, res.Outcomes.AnswerDiffersSuspectByTable = c.dataReads.split()
	res.Outcomes.OnlyOnTargetSessionState = c.onlyTargetSessionState.Load()
	if n := c.preambleSessions.Load(); n > 0 {
		res.Preamble = &results.Preamble{Sessions: n, Statements: c.preambleRan.Load(), Failed: c.preambleFailed.Load()}
	}
	res.Outcomes.SetRates()
	res.Filtered = results.Filtered{Events: c.filteredEvents.Load(), Statements: c.filteredStatements.Load()}
	res.Reader = results.ReaderCounts{Events: c.events.Load(), BudgetWaits: c.budgetWaits.Load(), OverBudget: c.overBudget.Load(), MaxBufferedBytes: c.maxBuffered.Load(),
		BudgetWaitMS: float64(c.budgetWaitNS.Load()) / 1e6}
	res.ReplayerDelayed = c.replayerDelayed.Load()
	if t, r := c.lagTargetUS.Load(), c.lagReplayerUS.Load(); t+r > 0 {
		res.LagSources = &results.LagSources{TargetMS: float64(t) / 1000, ReplayerMS: float64(r) / 1000}
	}
}

// account counts the statements lost to faults, and marks the result
// incomplete when they are more than maxLost of the total.
func account(res *results.Result, maxLost float64) {
	var lost int64
	var why []string
	for _, reason := range results.LostReasons() {
		if n := res.Statements.Skipped[reason]; n > 0 {
			lost += n
			why = append(why, fmt.Sprintf("%d %s", n, reason))
		}
	}
	res.Lost = lost
	total := res.Statements.Total
	if lost == 0 || total == 0 || float64(lost) <= maxLost*float64(total) {
		return
	}
	res.MarkIncomplete(results.IncompleteLost, fmt.Sprintf("%d of %d statements (%.2f%%) were not replayed because of faults (%s), more than the %.2f%% allowed",
		lost, total, 100*float64(lost)/float64(total), strings.Join(why, ", "), 100*maxLost))
}

// LagWarning starts the warning of a replay that fell behind its
// schedule, which NoteTargetWaits completes.
const LagWarning = "the replay fell behind its schedule"

// warnLag warns, when the replay fell behind its schedule by more than
// maxLag at p99, that its timings are doubtful, and which side was slow:
// the target (sessions were still waiting for their previous statement
// when the next was due: res.LagSources) or the replayer (its CPU, its
// goroutines scheduled late: sched is the p99 of the runtime's
// scheduling delay during the run, 0 when unknown).
func warnLag(res *results.Result, maxLag, sched time.Duration) {
	// The threshold is recorded, so that a comparison judges the replay
	// by the rule it warned by (results.Result.Lagged).
	ms := float64(maxLag.Microseconds()) / 1000
	res.MaxLagMS = &ms
	if _, lagged := res.Lagged(); !lagged {
		return
	}
	w := fmt.Sprintf("%s: lag p99 %.1f ms, max %.1f ms (above %v), so the target saw another load than the original's and the timings are doubtful",
		LagWarning, res.Lag.P99, res.Lag.Max, maxLag)
	replayer := ""
	if res.WallSeconds > 0 && res.ClientCPUSeconds > 0 {
		replayer = fmt.Sprintf("it used %.1f s of CPU in %.1f s (%.1f cores of %d)", res.ClientCPUSeconds, res.WallSeconds,
			res.ClientCPUSeconds/res.WallSeconds, runtime.NumCPU())
		if res.TargetLocal {
			replayer += ", on the target's machine: the two competed for its CPU"
		}
	}
	if sched > 0 {
		replayer = strings.TrimPrefix(replayer+fmt.Sprintf("; its goroutines waited up to %v (p99) to be scheduled", sched.Round(10*time.Microsecond)), "; ")
	}
	src := res.LagSources
	switch {
	case src != nil && src.TargetMS >= src.ReplayerMS:
		w += fmt.Sprintf("; the target was the slow side: %.0f%% of the lateness was statements whose session was still waiting on the target (its previous statement, its connection, its client's previous session) when they were due",
			100*src.TargetMS/(src.TargetMS+src.ReplayerMS))
		if replayer != "" {
			w += " (the replayer: " + replayer + ")"
		}
	case src != nil:
		w += fmt.Sprintf("; the replayer was the slow side: %.0f%% of the lateness came with the session free on the target", 100*src.ReplayerMS/(src.TargetMS+src.ReplayerMS))
		if replayer != "" {
			w += ": " + replayer
		}
	case replayer != "":
		w += "; the replayer " + replayer
	}
	res.Warnings = append(res.Warnings, w)
}

// WaitShare is one wait event of the target's sessions and its share of
// the samples, as an observer read them during the replay.
type WaitShare struct {
	Event string // "Lock/transactionid", "CPU", "IO/DataFileRead"...
	Share float64
}

// NoteTargetWaits completes the lag warning of res, if it has one, with
// what the target's sessions were doing meanwhile (the top wait events an
// observer sampled), so that a slow target says why.
func NoteTargetWaits(res *results.Result, waits []WaitShare) {
	if len(waits) == 0 {
		return
	}
	for i, w := range res.Warnings {
		if !strings.HasPrefix(w, LagWarning) {
			continue
		}
		parts := make([]string, 0, 3)
		for _, ws := range waits[:min(len(waits), 3)] {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", ws.Event, 100*ws.Share))
		}
		res.Warnings[i] = w + "; the target's sessions meanwhile: " + strings.Join(parts, ", ")
		return
	}
}

// mergeShards adds the shards' figures to res; dialFailed is the
// connection attempts that failed, nil in a dry run (no connection).
func mergeShards(res *results.Result, shards []*shard, paced bool, dialFailed *int64) error {
	set := querystats.NewSet()
	lag := results.NewRecorder()
	conns := results.NewRecorder()
	var samples []results.ErrorSample
	res.ErrorsBySQLState = map[string]int64{}
	res.Outcomes.OnlyOnTargetBySQLState = map[string]int64{}
	for _, s := range shards {
		s.mu.Lock()
		set.Merge(s.set)
		lag.Merge(s.lag)
		conns.Merge(s.conns)
		for k, v := range s.errors {
			res.ErrorsBySQLState[k] += v
		}
		for k, v := range s.onlyTarget {
			res.Outcomes.OnlyOnTargetBySQLState[k] += v
		}
		res.Outcomes.OnlyOnTargetBakedIDs += s.bakedIDs
		res.Outcomes.OnlyOnTargetAfterFastPath += s.afterFastPath
		for _, v := range s.samples {
			samples = append(samples, *v)
		}
		s.mu.Unlock()
	}
	rows, err := set.Rows(querystats.RowOptions{Hist: true})
	if err != nil {
		return err
	}
	res.Queries = rows
	if paced {
		if res.Lag, err = lag.Distribution(); err != nil {
			return err
		}
	}
	if dialFailed != nil {
		if res.Connections, err = results.ConnectionsOf(conns, *dialFailed); err != nil {
			return err
		}
	}
	// One list of the shards' samples, each of which is one per key:
	// merging only sorts and bounds them.
	res.Errors = results.MergeErrorSamples(samples)
	return nil
}

// tally counts by name under a lock: for rare events (destructive
// statements), never on the path of every statement.
type tally struct {
	mu sync.Mutex
	m  map[string]int64
}

func (t *tally) note(name string) {
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]int64{}
	}
	t.m[name]++
	t.mu.Unlock()
}

// counts returns a copy of the counts, nil when there are none.
func (t *tally) counts() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) == 0 {
		return nil
	}
	return maps.Clone(t.m)
}

// answerCause is the counter of the executions whose differing answers
// cause explains ("": unexplained).
func (c *counters) answerCause(cause querystats.AnswerCause) *atomic.Int64 {
	if cause == querystats.CauseTargetData {
		return &c.answerTargetData
	}
	if i := slices.Index(explainedCauses[:], cause); i >= 0 {
		return &c.answerExplained[i]
	}
	return &c.answerUnexplained
}

// countAnswer counts an execution whose differing answers cause explains
// (counters.countAnswer), and keeps it as note says (nil: not asked).
// Of the target's data, key names the rows it reads (readKey).
func (r *Replayer) countAnswer(note *results.DifferingAnswer, cause querystats.AnswerCause, tables []string, key string) {
	kept := -1
	if note != nil {
		note.Cause = cause
		if cause == querystats.CauseTargetData {
			note.Tables = tables
		}
		kept = r.answers.add(*note)
	}
	r.c.countAnswer(cause, tables, key, kept)
}

// answerNotes are the differing answers a replay keeps
// (Options.KeepAnswers), at most results.MaxDifferingAnswers; dropped
// counts the others. Safe for concurrent use.
type answerNotes struct {
	mu      sync.Mutex
	list    []results.DifferingAnswer
	dropped int64
}

// add keeps a, and returns its index in the list; -1 when dropped.
func (n *answerNotes) add(a results.DifferingAnswer) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.list) < results.MaxDifferingAnswers {
		n.list = append(n.list, a)
		return len(n.list) - 1
	}
	n.dropped++
	return -1
}

// take is what was kept, and how many were dropped.
func (n *answerNotes) take() ([]results.DifferingAnswer, int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.list, n.dropped
}

// countAnswer counts an execution whose differing answers cause explains
// ("": unexplained); tables are the relations it reads or writes, under
// which the target's data differing is counted, key the rows it reads
// (readKey) and kept its index among the answers kept (-1: none).
func (c *counters) countAnswer(cause querystats.AnswerCause, tables []string, key string, kept int) {
	c.answerCause(cause).Add(1)
	if cause == querystats.CauseTargetData {
		for _, t := range tables {
			c.targetDataTables.note(t)
		}
		c.dataReads.add(key, tables, kept)
	}
}
