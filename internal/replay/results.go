package replay

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Skip reasons: why a statement read from the log was not run.
const (
	SkipParamsMissing   = "parameters not logged"
	SkipParamsTruncated = "parameters truncated"
	SkipCopyData        = "copy data not in log"
	SkipNotReadOnly     = "not read-only"
	// With --read-only, an SQL-level EXECUTE whose PREPARE the session
	// did not show (it ran before the log or the --start window), so
	// whether it writes is unknown; or whose PREPARE was skipped.
	SkipExecuteUnknown = "EXECUTE of a statement prepared outside the log"
	SkipPrepareSkipped = "EXECUTE of a statement whose PREPARE was skipped"
	SkipConnectFailed  = "connection failed"
	SkipConnectionLost = "connection lost"
	SkipInterrupted    = "interrupted"
)

var skipReasons = []string{SkipParamsMissing, SkipParamsTruncated, SkipCopyData, SkipNotReadOnly, SkipExecuteUnknown, SkipPrepareSkipped, SkipConnectFailed, SkipConnectionLost, SkipInterrupted}

func skipIndex(reason string) int { return slices.Index(skipReasons, reason) }

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
	skipped                        [9]atomic.Int64 // by skipIndex

	sessions, open, reconnects, connectFailed, connectRetries atomic.Int64
	connectFailedAlike                                        atomic.Int64

	ran, origFailed, bothFailed, onlyTarget, onlyOrig atomic.Int64

	filteredEvents, filteredStatements, filteredSessions atomic.Int64
	events, budgetWaits, overBudget, maxBuffered         atomic.Int64

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
		Skipped:  map[string]int64{},
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
	res.Filtered = results.Filtered{Events: c.filteredEvents.Load(), Statements: c.filteredStatements.Load(), Sessions: c.filteredSessions.Load()}
	res.Reader = results.ReaderCounts{Events: c.events.Load(), BudgetWaits: c.budgetWaits.Load(), OverBudget: c.overBudget.Load(), MaxBufferedBytes: c.maxBuffered.Load()}
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
