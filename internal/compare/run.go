package compare

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// LatencySource says where a result's durations were measured.
type LatencySource string

// Latency sources. Only results of the same source compare.
const (
	// LatencyServerLog: durations the server logged
	// (log_min_duration_statement); server-side.
	LatencyServerLog LatencySource = "server_log"
	// LatencyClient: round trips measured by the replaying client;
	// they include network and client time.
	LatencyClient LatencySource = "client"
	// LatencyPgStatStatements: execution times from pg_stat_statements
	// deltas; server-side, but without parse/bind and, unless
	// track_planning is on, without planning.
	LatencyPgStatStatements LatencySource = "pg_stat_statements"
)

func (s LatencySource) valid() bool {
	switch s {
	case LatencyServerLog, LatencyClient, LatencyPgStatStatements:
		return true
	}
	return false
}

// Run is the part of an analysis or replay result that a comparison reads.
// Fields that a kind does not have are zero.
type Run struct {
	// Name is where the result came from (a file name), for messages.
	Name string `json:"-"`

	Kind          string        `json:"kind"` // "analysis" or "replay"
	LatencySource LatencySource `json:"latency_source"`
	Partial       bool          `json:"partial,omitempty"`
	// WallSeconds is how long a replay took; 0 for an analysis.
	WallSeconds float64 `json:"wall_seconds,omitempty"`
	// Speed is a replay's pace against the original; 0 is as fast as
	// possible, the only pace whose rate measures the target's capacity.
	Speed float64 `json:"speed"`
	// ClientCPUSeconds is the CPU a replay's own process used; 0 when
	// the platform does not tell.
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
	// TargetLocal: a replay's target was on the replayer's machine, so
	// the two competed for its CPU.
	TargetLocal bool `json:"target_local,omitempty"`

	Statements struct {
		Total  int64 `json:"total"`
		Failed int64 `json:"failed"`
	} `json:"statements"`
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate"`
	// Errors are a replay's error samples, which tie SQLSTATEs to
	// fingerprints.
	Errors    []ErrorSample `json:"errors,omitempty"`
	FirstTime string        `json:"first_time,omitempty"`
	LastTime  string        `json:"last_time,omitempty"`
	Queries   []Query       `json:"queries"`
	// ClientQueries are a replay's client round trips when Queries are
	// server-side (replay --target-log); shown beside them, never
	// compared (see RoundTrips).
	ClientQueries []querystats.Row `json:"client_queries,omitempty"`
	// Timeline is optional: per-bucket calls and p95 over the run.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// Query is one fingerprint's row: querystats.Row and what results may add.
type Query struct {
	querystats.Row
	// ErrorsBySQLState is optional (not yet written by analyze).
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate,omitempty"`
}

// ErrorSample is a replay's example of an error.
type ErrorSample struct {
	SQLState    string `json:"sqlstate"`
	Fingerprint string `json:"fingerprint"`
	Message     string `json:"message"`
	Count       int64  `json:"count"`
}

// Timeline is a run's activity over time, in buckets of BucketMS from
// Start. The arrays have one entry per bucket; Errors and P95MS may be
// absent. P95MS is 0 for a bucket without a timed call. A replay's Start
// is the log time of its first statement, so both runs share an axis
// measured from their own start.
type Timeline struct {
	Start    string    `json:"start"`
	BucketMS int64     `json:"bucket_ms"`
	Calls    []int64   `json:"calls"`
	Errors   []int64   `json:"errors,omitempty"`
	P95MS    []float64 `json:"p95_ms,omitempty"`
}

// Parse reads a result of analyze or replay. A missing latency_source is
// server_log for an analysis (its durations come from the server log) and
// client for a replay.
func Parse(data []byte, name string) (*Run, error) {
	r := &Run{Name: name}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: not a pgrehearse result: %w", name, err)
	}
	switch r.Kind {
	case "analysis":
		if r.LatencySource == "" {
			r.LatencySource = LatencyServerLog
		}
	case "replay":
		if r.LatencySource == "" {
			r.LatencySource = LatencyClient
		}
	case "":
		return nil, fmt.Errorf("%s: not a pgrehearse result (no \"kind\"); write one with analyze --json or replay --json", name)
	default:
		return nil, fmt.Errorf("%s: kind %q cannot be compared; want the JSON of analyze or replay", name, r.Kind)
	}
	if !r.LatencySource.valid() {
		return nil, fmt.Errorf("%s: unknown latency_source %q (want server_log, client or pg_stat_statements)", name, r.LatencySource)
	}
	if t := r.Timeline; t != nil && t.BucketMS <= 0 {
		return nil, fmt.Errorf("%s: timeline.bucket_ms must be positive, got %d", name, t.BucketMS)
	}
	return r, nil
}

// SpanSeconds is how long the run lasted: a replay's wall time, else the
// time between its first and last statement; 0 when unknown.
func (r *Run) SpanSeconds() float64 {
	if r.WallSeconds > 0 {
		return r.WallSeconds
	}
	first, err1 := time.Parse(time.RFC3339Nano, r.FirstTime)
	last, err2 := time.Parse(time.RFC3339Nano, r.LastTime)
	if err1 != nil || err2 != nil || !last.After(first) {
		return 0
	}
	return last.Sub(first).Seconds()
}

// hasHist reports whether every timed row carries a histogram.
func (r *Run) hasHist() bool {
	for _, q := range r.Queries {
		if q.TimedCalls > 0 && q.Hist == "" {
			return false
		}
	}
	return len(r.Queries) > 0
}
