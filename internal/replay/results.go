package replay

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
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
	UnknownSQLState        = "unknown"
)

// Result is what a replay did. Its JSON form is the contract of
// `pgrehearse replay --json`, in the shape of `analyze --json` (kind,
// statements, errors_by_sqlstate, files, first_time, last_time, queries) so
// the two compare directly.
type Result struct {
	Kind string `json:"kind"` // always "replay"
	// Partial marks a replay that stopped early (interrupted, or a read
	// error): it covers only what ran.
	Partial bool    `json:"partial,omitempty"`
	DryRun  bool    `json:"dry_run,omitempty"`
	Speed   float64 `json:"speed"`
	// WallSeconds is how long the replay took.
	WallSeconds float64 `json:"wall_seconds"`
	// ClientCPUSeconds is the CPU time the replayer itself used (reading
	// the log, sending, accounting), where the platform tells.
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
	// TargetLocal: the target is on the replayer's machine (unix socket
	// or loopback), so the replayer's CPU was taken from the server; at
	// speed 0 the rate is then a lower bound of the target's own.
	TargetLocal bool `json:"target_local,omitempty"`

	Statements StatementCounts `json:"statements"`
	Sessions   SessionCounts   `json:"sessions"`
	// Lag is how late statements were issued against their schedule;
	// nil at speed 0, where there is no schedule.
	Lag              *Lag             `json:"lag_ms"`
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate"`
	// Errors are examples of the target's errors, one per SQLSTATE and
	// fingerprint, most frequent first (at most MaxErrorSamples).
	Errors   []ErrorSample `json:"errors"`
	Outcomes Outcomes      `json:"outcomes"`
	Filtered Filtered      `json:"filtered"`
	Reader   ReaderCounts  `json:"reader"`
	// Sync is what synchronizing the sessions cost (see SyncStats).
	Sync *SyncStats `json:"sync,omitempty"`

	Files     []string `json:"files"`
	FirstTime string   `json:"first_time,omitempty"`
	LastTime  string   `json:"last_time,omitempty"`
	// LatencySource says where the figures of Queries were measured:
	// LatencyClient (round trips timed by the replayer), or
	// LatencyServerLog (the target's own log, see Replayer.ServerSide).
	// The two are never mixed in one list: a client round trip adds
	// network and client time that a server-side figure does not have.
	LatencySource string           `json:"latency_source"`
	Queries       []querystats.Row `json:"queries"`
	// ClientQueries are the client-side figures when Queries are
	// server-side; absent otherwise (Queries are then the client's).
	ClientQueries []querystats.Row `json:"client_queries,omitempty"`
	// TargetLog describes the target's log when Queries come from it.
	TargetLog *TargetLog `json:"target_log,omitempty"`

	// Set holds the per-query figures behind Queries; ClientSet those
	// behind ClientQueries.
	Set       *querystats.Set `json:"-"`
	ClientSet *querystats.Set `json:"-"`
}

// StatementCounts: Total == Executed + Failed + sum(Skipped), always.
type StatementCounts struct {
	Total    int64            `json:"total"`
	Executed int64            `json:"executed"`
	Failed   int64            `json:"failed"`
	Skipped  map[string]int64 `json:"skipped"`
	// Empty counts query strings holding no statement; not in Total.
	Empty int64 `json:"empty"`
}

// SkippedTotal is the sum of Skipped.
func (c StatementCounts) SkippedTotal() int64 {
	var n int64
	for _, v := range c.Skipped {
		n += v
	}
	return n
}

// SessionCounts count original sessions and their connections.
type SessionCounts struct {
	Total         int64 `json:"total"`
	Reconnects    int64 `json:"reconnects"`
	ConnectFailed int64 `json:"connect_failed"`
	// ConnectRetries counts connection attempts refused because the
	// server's listen queue was full (EAGAIN on its unix socket) and
	// tried again: the original's clients got through, so a burst of
	// connections is not a failure of the target.
	ConnectRetries int64 `json:"connect_retries"`
	// ConnectFailedAsOriginal counts sessions that failed to connect on
	// the target as they had in the original (a FATAL right after the
	// connection was authorized); not in ConnectFailed.
	ConnectFailedAsOriginal int64 `json:"connect_failed_as_original"`
	// ConnectFailures group the failed connections by what failed.
	ConnectFailures []ConnectFailure `json:"connect_failures,omitempty"`
}

// ConnectFailure is one way sessions failed to connect.
type ConnectFailure struct {
	User     string `json:"user"`
	Database string `json:"database"`
	SQLState string `json:"sqlstate,omitempty"`
	Message  string `json:"message"`
	Sessions int64  `json:"sessions"`
}

// Lag figures, in milliseconds.
type Lag struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// ErrorSample is an error of the target.
type ErrorSample struct {
	SQLState    string `json:"sqlstate"`
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	Message     string `json:"message"`
	Count       int64  `json:"count"`
}

// MaxErrorSamples bounds Result.Errors.
const MaxErrorSamples = 50

// Outcomes compare the original's failures with the target's, counted in
// execution events (a query string is one) among those that ran.
type Outcomes struct {
	// Ran counts execution events run on the target.
	Ran int64 `json:"ran"`
	// OriginalFailed: failed in the log; BothFailed of those failed on
	// the target too; FailedOnlyOnTarget succeeded in the log but not on
	// the target; FailedOnlyInOriginal the reverse.
	OriginalFailed       int64 `json:"original_failed"`
	BothFailed           int64 `json:"both_failed"`
	FailedOnlyOnTarget   int64 `json:"failed_only_on_target"`
	FailedOnlyInOriginal int64 `json:"failed_only_in_original"`
	// Error rates in percent of Ran.
	OriginalErrorRate float64 `json:"original_error_rate_pct"`
	TargetErrorRate   float64 `json:"target_error_rate_pct"`
}

// Filtered counts what the filters removed, outside Statements.
type Filtered struct {
	Events     int64 `json:"events"`
	Statements int64 `json:"statements"` // execution events among Events
	Sessions   int64 `json:"sessions"`
}

// ReaderCounts describe the dispatcher's reading.
type ReaderCounts struct {
	Events int64 `json:"events"`
	// BudgetWaits counts the times the dispatcher waited for queues to
	// drain; OverBudget the events it read past the budget because no
	// statement was completing (see the package comment).
	BudgetWaits int64 `json:"budget_waits"`
	OverBudget  int64 `json:"over_budget"`
	// MaxBufferedBytes is the most the queues held at once (estimated).
	MaxBufferedBytes int64 `json:"max_buffered_bytes"`
}

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
	lag     *hdrhistogram.Histogram
	errors  map[string]int64
	samples map[sampleKey]*ErrorSample
	_       [64]byte
}

type sampleKey struct{ code, fp string }

// maxLagUS is the largest lag recorded exactly: an hour.
const maxLagUS = 3600e6

func newShard() *shard {
	return &shard{
		set:     querystats.NewSet(),
		lag:     hdrhistogram.New(1, maxLagUS, 3),
		errors:  map[string]int64{},
		samples: map[sampleKey]*ErrorSample{},
	}
}

func (s *shard) recordLag(us int64) {
	s.lag.RecordValue(min(max(us, 0), maxLagUS))
}

// connFailures groups failed connections.
type connFailures struct {
	mu sync.Mutex
	m  map[ConnectFailure]int64
}

func (c *connFailures) add(f ConnectFailure) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[ConnectFailure]int64{}
	}
	c.m[f]++
	c.mu.Unlock()
}

func (c *connFailures) remove(f ConnectFailure) {
	c.mu.Lock()
	if c.m[f]--; c.m[f] <= 0 {
		delete(c.m, f)
	}
	c.mu.Unlock()
}

func (c *connFailures) list() []ConnectFailure {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ConnectFailure, 0, len(c.m))
	for f, n := range c.m {
		f.Sessions = n
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Sessions != out[j].Sessions {
			return out[i].Sessions > out[j].Sessions
		}
		return out[i].User+"\x00"+out[i].Database < out[j].User+"\x00"+out[j].Database
	})
	return out
}

// fillCounts copies the counters into res.
func (c *counters) fill(res *Result) {
	res.Statements = StatementCounts{
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
	o := Outcomes{
		Ran:                  c.ran.Load(),
		OriginalFailed:       c.origFailed.Load(),
		BothFailed:           c.bothFailed.Load(),
		FailedOnlyOnTarget:   c.onlyTarget.Load(),
		FailedOnlyInOriginal: c.onlyOrig.Load(),
	}
	if o.Ran > 0 {
		o.OriginalErrorRate = 100 * float64(o.BothFailed+o.FailedOnlyInOriginal) / float64(o.Ran)
		o.TargetErrorRate = 100 * float64(o.BothFailed+o.FailedOnlyOnTarget) / float64(o.Ran)
	}
	res.Outcomes = o
	res.Filtered = Filtered{Events: c.filteredEvents.Load(), Statements: c.filteredStatements.Load(), Sessions: c.filteredSessions.Load()}
	res.Reader = ReaderCounts{Events: c.events.Load(), BudgetWaits: c.budgetWaits.Load(), OverBudget: c.overBudget.Load(), MaxBufferedBytes: c.maxBuffered.Load()}
}

// mergeShards adds the shards' figures to res.
func mergeShards(res *Result, shards []*shard, paced bool) error {
	set := querystats.NewSet()
	lag := hdrhistogram.New(1, maxLagUS, 3)
	samples := map[sampleKey]*ErrorSample{}
	res.ErrorsBySQLState = map[string]int64{}
	for _, s := range shards {
		s.mu.Lock()
		set.Merge(s.set)
		lag.Merge(s.lag)
		for k, v := range s.errors {
			res.ErrorsBySQLState[k] += v
		}
		for k, v := range s.samples {
			if o, ok := samples[k]; ok {
				o.Count += v.Count
			} else {
				c := *v
				samples[k] = &c
			}
		}
		s.mu.Unlock()
	}
	rows, err := set.Rows(querystats.RowOptions{})
	if err != nil {
		return err
	}
	res.Set = set
	res.Queries = rows
	if paced {
		res.Lag = &Lag{
			P50: float64(lag.ValueAtQuantile(50)) / 1000,
			P99: float64(lag.ValueAtQuantile(99)) / 1000,
			Max: float64(lag.Max()) / 1000,
		}
		if lag.TotalCount() == 0 {
			res.Lag = &Lag{}
		}
	}
	res.Errors = make([]ErrorSample, 0, len(samples))
	for _, k := range slices.SortedFunc(maps.Keys(samples), func(a, b sampleKey) int {
		if d := samples[b].Count - samples[a].Count; d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		if a.code != b.code {
			if a.code < b.code {
				return -1
			}
			return 1
		}
		if a.fp < b.fp {
			return -1
		}
		if a.fp > b.fp {
			return 1
		}
		return 0
	}) {
		if len(res.Errors) == MaxErrorSamples {
			break
		}
		res.Errors = append(res.Errors, *samples[k])
	}
	return nil
}
