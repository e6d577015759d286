package compare

import (
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Transaction control (issue 76). BEGIN and COMMIT sent as named
// prepared statements (pgbench -M prepared, and the replay of such a
// log, which keeps the protocol form it read) are counted by
// pg_stat_statements once per statement prepared, not per execution, on
// every version from 14 to 18: its utility hook (pgss_ProcessUtility in
// contrib/pg_stat_statements/pg_stat_statements.c) sets the queryId of
// the statement it runs to 0, and a named statement's cached plan is the
// same statement at every execution, so the executions after the first
// carry queryId 0, which pgss_store ignores (measured on 14-18: 10
// executions of each in 2 sessions counted 2, where the simple and the
// unnamed extended protocol counted 20; TestTxControlPGSS). No reading of
// pg_stat_statements recovers them: they are never stored. Their mean falls back to the round trips, which carry the
// machine's pace from round to round: an identical candidate read BEGIN
// at 1.14x (0.71-1.85) and COMMIT at 1.41x (0.89-2.26), undecided on
// mean>+50%. And where pg_stat_statements does count them, its COMMIT
// time leaves out the commit itself: the WAL flush runs after the
// statement's execution returns (0.001 ms a call counted, 35 ms a round
// trip, under commit_delay=20000 with fsync on), so a slower disk or
// synchronous_commit would never show on the server's time.
//
// So: BEGIN (and START TRANSACTION) does no work on the server and is
// not judged by the latency rules (TxBegin); COMMIT (and END) is never
// judged on the server's time, but on its round trips, each run's paced
// by its BEGIN's round trip (TxPace) where every run has both: BEGIN's
// round trip is the protocol's and the machine's alone, so the ratio
// takes the round's pace out and leaves the commit's own time.

// TxControl is what a transaction-control statement does to the
// judging of its latency; empty for any other statement.
type TxControl string

// Transaction-control statements.
const (
	// TxBegin opens a transaction (BEGIN, START TRANSACTION): it does no
	// work on the server, its round trip is the protocol's and the
	// machine's; its latency is shown and never judged by a rule.
	TxBegin TxControl = "begin"
	// TxCommit ends one (COMMIT, END): its round trip holds the WAL
	// flush, which pg_stat_statements' time leaves out; judged on the
	// round trips, paced by BEGIN's (TxPace).
	TxCommit TxControl = "commit"
)

// txControlOf is what query (a normalized text) is as transaction
// control, by its parse (fingerprint.Classify).
func txControlOf(query string) TxControl {
	switch fingerprint.Classify(query).Tx {
	case fingerprint.TxBegin:
		return TxBegin
	case fingerprint.TxCommit:
		// COMMIT AND CHAIN too: it commits, then opens the next.
		return TxCommit
	}
	return ""
}

// TxPace is how a COMMIT's round trips were paced (QueryLevels.Pace):
// each run's mean round trip times PaceMS over the run's mean round
// trip of BEGIN, the median of BEGIN's over the runs of both sides.
type TxPace struct {
	// By is the fingerprint of the BEGIN whose round trips pace it.
	By string `json:"by"`
	// PaceMS is the median over every run of BEGIN's mean round trip.
	PaceMS float64 `json:"pace_ms"`
	// BaselineRunsMS and CandidateRunsMS are BEGIN's mean round trip
	// in each run.
	BaselineRunsMS  []float64 `json:"baseline_runs_ms"`
	CandidateRunsMS []float64 `json:"candidate_runs_ms"`
}

// txBegin is the fingerprint of the BEGIN of the runs' round trips:
// the one every run of both sides has, with the most calls in the
// first baseline run; empty without.
func (c *comparer) txBegin() string {
	best, calls := "", int64(0)
	if len(c.bApp) == 0 || c.bApp[0] == nil {
		return ""
	}
	for fp, q := range c.bApp[0] {
		if txControlOf(q.Query) != TxBegin || q.TimedCalls <= calls {
			continue
		}
		if _, ok := appMeans(c.bApp, fp); !ok {
			continue
		}
		if _, ok := appMeans(c.cApp, fp); !ok {
			continue
		}
		best, calls = fp, q.TimedCalls
	}
	return best
}

// paced is a COMMIT's round trips bv and kv (each run's mean) paced by
// BEGIN's (TxPace); false without BEGIN's in every run.
func (c *comparer) paced(bv, kv []float64) ([]float64, []float64, *TxPace, bool) {
	fp := c.txBegin()
	if fp == "" {
		return nil, nil, nil, false
	}
	bb, _ := appMeans(c.bApp, fp)
	kb, _ := appMeans(c.cApp, fp)
	if len(bb) != len(bv) || len(kb) != len(kv) {
		return nil, nil, nil, false
	}
	p := &TxPace{By: fp, PaceMS: stats.Median(append(append([]float64{}, bb...), kb...)), BaselineRunsMS: bb, CandidateRunsMS: kb}
	if p.PaceMS <= 0 {
		return nil, nil, nil, false
	}
	pace := func(v, by []float64) ([]float64, bool) {
		out := make([]float64, len(v))
		for i := range v {
			if by[i] <= 0 {
				return nil, false
			}
			out[i] = v[i] * p.PaceMS / by[i]
		}
		return out, true
	}
	pb, ok1 := pace(bv, bb)
	pk, ok2 := pace(kv, kb)
	return pb, pk, p, ok1 && ok2
}

// notRuled says that rule r does not read q: a rule on the latency of
// a BEGIN, which does no work on the server (TxBegin).
func (q *QueryDiff) notRuled(r Rule) bool {
	_, latency := latencyOf(r.Metric, 0, 0, 0, 0)
	return q.TxControl == TxBegin && (latency || r.Metric == MetricTotal)
}
