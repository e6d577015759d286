package replay

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Skip reasons: why a statement read from the log was not run. They are
// results' (results.SkipReason), the vocabulary of the results boundary,
// named here too for the engine's brevity.
const (
	SkipParamsMissing     = results.SkipParamsMissing
	SkipParamsTruncated   = results.SkipParamsTruncated
	SkipCopyData          = results.SkipCopyData
	SkipNotReadOnly       = results.SkipNotReadOnly
	SkipExecuteUnknown    = results.SkipExecuteUnknown
	SkipPrepareSkipped    = results.SkipPrepareSkipped
	SkipConnectFailed     = results.SkipConnectFailed
	SkipConnectionLost    = results.SkipConnectionLost
	SkipBrokenTransaction = results.SkipBrokenTransaction
	SkipTargetGone        = results.SkipTargetGone
	SkipInterrupted       = results.SkipInterrupted
)

var skipReasons = [...]results.SkipReason{SkipParamsMissing, SkipParamsTruncated, SkipCopyData, SkipNotReadOnly, SkipExecuteUnknown, SkipPrepareSkipped,
	SkipConnectFailed, SkipConnectionLost, SkipBrokenTransaction, SkipTargetGone, SkipInterrupted}

func skipIndex(reason results.SkipReason) int { return slices.Index(skipReasons[:], reason) }

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
	connectFailedAlike                                        atomic.Int64

	ran, origFailed, bothFailed, onlyTarget, onlyOrig atomic.Int64

	// filtered counts what the dispatcher could not replay: events
	// without a session, a session's end without its start; what the
	// sources' selection left out comes with their counts.
	filteredEvents, filteredStatements           atomic.Int64
	events, budgetWaits, overBudget, maxBuffered atomic.Int64

	completions atomic.Int64 // events finished, for the stall watch
	errors      atomic.Int64
	lastIssued  atomic.Int64 // log time of the latest statement issued
}

// shard aggregates the figures of some sessions under one lock, so that
// sessions seldom meet on a lock and no session owns a histogram.
type shard struct {
	mu      sync.Mutex
	set     *querystats.Set
	lag     *results.Recorder
	errors  map[string]int64
	samples map[sampleKey]*results.ErrorSample
	_       [64]byte
}

type sampleKey struct{ code, fp string }

func newShard() *shard {
	return &shard{
		set:     querystats.NewSet(),
		lag:     results.NewRecorder(),
		errors:  map[string]int64{},
		samples: map[sampleKey]*results.ErrorSample{},
	}
}

func (s *shard) recordLag(us int64) { s.lag.Record(us) }

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
	res.Sessions.ConnectFailedAsOriginal = c.connectFailedAlike.Load()
	res.Outcomes = results.Outcomes{
		Ran:                  c.ran.Load(),
		OriginalFailed:       c.origFailed.Load(),
		BothFailed:           c.bothFailed.Load(),
		FailedOnlyOnTarget:   c.onlyTarget.Load(),
		FailedOnlyInOriginal: c.onlyOrig.Load(),
	}
	res.Outcomes.SetRates()
	res.Filtered = results.Filtered{Events: c.filteredEvents.Load(), Statements: c.filteredStatements.Load()}
	res.Reader = results.ReaderCounts{Events: c.events.Load(), BudgetWaits: c.budgetWaits.Load(), OverBudget: c.overBudget.Load(), MaxBufferedBytes: c.maxBuffered.Load()}
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

// warnLag warns, when the replay fell behind its schedule by more than
// maxLag at p99, that its timings are doubtful, and why it may have.
func warnLag(res *results.Result, maxLag time.Duration) {
	if maxLag <= 0 || res.Lag == nil || res.Lag.P99 <= float64(maxLag.Microseconds())/1000 {
		return
	}
	w := fmt.Sprintf("the replay fell behind its schedule: lag p99 %.1f ms, max %.1f ms (above %v), so the target saw another load than the original's and the timings are doubtful",
		res.Lag.P99, res.Lag.Max, maxLag)
	if res.WallSeconds > 0 && res.ClientCPUSeconds > 0 {
		w += fmt.Sprintf("; the replayer itself used %.1f s of CPU in %.1f s (%.1f cores)", res.ClientCPUSeconds, res.WallSeconds, res.ClientCPUSeconds/res.WallSeconds)
		if res.TargetLocal {
			w += ", on the target's machine: the two competed for its CPU"
		}
	}
	res.Warnings = append(res.Warnings, w)
}

// mergeShards adds the shards' figures to res.
func mergeShards(res *results.Result, shards []*shard, paced bool) error {
	set := querystats.NewSet()
	lag := results.NewRecorder()
	var samples []results.ErrorSample
	res.ErrorsBySQLState = map[string]int64{}
	for _, s := range shards {
		s.mu.Lock()
		set.Merge(s.set)
		lag.Merge(s.lag)
		for k, v := range s.errors {
			res.ErrorsBySQLState[k] += v
		}
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
