package compare

import (
	"maps"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// replayWith is a replay result of one query with rows and errors, all
// of calls that succeeded in the original (counted by cause, as a replay
// counts them).
func replayWith(t *testing.T, name string, calls, rowsEach int64, noRows int64, codes map[string]int64) *Run {
	t.Helper()
	s := querystats.NewSet()
	var failed int64
	for code, n := range codes {
		failed += n
		for range n {
			st := s.Slot("upd", "UPDATE orders SET state = $1 WHERE id = $2")
			st.Record("UPDATE orders SET state = $1 WHERE id = $2", 1, 100, true)
			st.RecordError(code)
			st.RecordOnlyOnTarget(code)
		}
	}
	for i := range calls - failed {
		st := s.Slot("upd", "UPDATE orders SET state = $1 WHERE id = $2")
		st.Record("UPDATE orders SET state = $1 WHERE id = $2", 1, 100+i%50, false)
		if i < noRows {
			st.RecordRows(0)
		} else {
			st.RecordRows(rowsEach)
		}
	}
	rows, err := s.Rows(querystats.RowOptions{Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	r := results.New(results.KindReplay, LatencyClient)
	r.Source, r.Queries = name, rows
	r.WallSeconds = float64(10 + len(name)) // each its own: never the same result twice
	r.Statements = results.StatementCounts{Total: calls, Executed: calls - failed, Failed: failed}
	r.ErrorsBySQLState = codes
	r.Outcomes.OnlyOnTargetBySQLState = maps.Clone(codes)
	if r.Outcomes.OnlyOnTargetBySQLState == nil {
		r.Outcomes.OnlyOnTargetBySQLState = map[string]int64{}
	}
	return r
}

// legacy makes r a replay result from before replays counted their
// failures by cause (results.Outcomes.OnlyOnTargetBySQLState).
func legacy(r *Run) *Run {
	r.Outcomes.OnlyOnTargetBySQLState = nil
	for i := range r.Queries {
		r.Queries[i].OnlyOnTargetBySQLState = nil
	}
	return r
}

func TestDivergence(t *testing.T) {
	synced := replayWith(t, "synced", 1000, 1, 0, nil)
	tests := []struct {
		name   string
		cand   *Run
		rows   bool             // rows per call differ
		errors map[string]int64 // ordering errors
	}{
		{"same work", replayWith(t, "again", 1000, 1, 0, nil), false, nil},
		{"updates that touch no row", replayWith(t, "off", 1000, 1, 80, nil), true, nil},
		{"one row in a thousand calls", replayWith(t, "off", 1000, 1, 1, nil), false, nil},
		{"foreign key errors", replayWith(t, "off", 1000, 1, 0, map[string]int64{"23503": 30, "25P02": 5}), false, map[string]int64{"23503": 30, "25P02": 5}},
		{"timeouts are not divergence", replayWith(t, "slow", 1000, 1, 0, map[string]int64{"57014": 30}), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Compare(synced, tt.cand, Options{Rules: mustRules(t, "p95>+20%")})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.rows && tt.errors == nil {
				if len(rep.Divergence) != 0 || rep.Verdict.Status == VerdictDiverged {
					t.Errorf("divergence %+v, verdict %s", rep.Divergence, rep.Verdict.Status)
				}
				return
			}
			if len(rep.Divergence) != 1 || rep.Divergence[0].RowsDiffer != tt.rows || !maps.Equal(rep.Divergence[0].OrderingErrors, tt.errors) {
				t.Fatalf("divergence %+v, want rows %v, errors %v", rep.Divergence, tt.rows, tt.errors)
			}
			if rep.Verdict.Status != VerdictDiverged {
				t.Errorf("verdict %s", rep.Verdict.Status)
			}
		})
	}
}

// TestDivergenceUncoded: the baseline, analyzed from a log whose prefix
// lacks %e, knows its 30 duplicate keys by message only (unknown); the
// replay's target log codes them 23505. Not a divergence. More of them
// than the baseline had at all still is.
func TestDivergenceUncoded(t *testing.T) {
	base := legacy(replayWith(t, "prod", 1000, 1, 0, map[string]int64{results.UnknownSQLState: 30}))
	for _, tt := range []struct {
		n    int64
		want map[string]int64
	}{{30, nil}, {29, nil}, {60, map[string]int64{"23505": 30}}} {
		cand := legacy(replayWith(t, "replay", 1000, 1, 0, map[string]int64{"23505": tt.n}))
		rep, err := Compare(base, cand, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]int64
		if len(rep.Divergence) > 0 {
			got = rep.Divergence[0].OrderingErrors
		}
		if !maps.Equal(got, tt.want) || (tt.want == nil) != (rep.Verdict.Status != VerdictDiverged) {
			t.Errorf("%d coded against 30 uncoded: divergence %+v, verdict %s", tt.n, rep.Divergence, rep.Verdict.Status)
		}
	}
}

// TestDivergenceByCause: a replay that counts its failures by cause is
// judged by those alone. Its 25P02s after an error of another kind (a
// server-assigned id of the original, 42704), and its errors of calls
// that failed in the original too, are not of the replay's order, against
// the original's analysis or another such replay; its 23503s that failed
// only on the target still are (issue 39).
func TestDivergenceByCause(t *testing.T) {
	analysis := replayWith(t, "prod", 1000, 1, 0, nil)
	analysis.Replay = nil
	cand := replayWith(t, "replay", 1000, 1, 0, map[string]int64{"25P02": 40, "42704": 10})
	// The 25P02s followed the 42704s; ten more failed in the original too.
	cand.Outcomes.OnlyOnTargetBySQLState = map[string]int64{"42704": 40}
	for i := range cand.Queries {
		cand.Queries[i].OnlyOnTargetBySQLState = map[string]int64{"42704": 40}
	}
	for _, base := range []*Run{analysis, replayWith(t, "control", 1000, 1, 0, nil)} {
		rep, err := Compare(base, cand, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Divergence) != 0 || rep.Verdict.Status == VerdictDiverged {
			t.Errorf("against %s: divergence %+v, verdict %s", base.Source, rep.Divergence, rep.Verdict.Status)
		}
	}
	fk := replayWith(t, "fk", 1000, 1, 0, map[string]int64{"23503": 30})
	rep, err := Compare(analysis, fk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Divergence) != 1 || !maps.Equal(rep.Divergence[0].OrderingErrors, map[string]int64{"23503": 30}) {
		t.Errorf("foreign key errors only on the target: divergence %+v", rep.Divergence)
	}
}

// TestDivergenceLoadReads: replayed in load mode, a plain read is not
// ordered, and finds what the target had committed, as the
// application's did: its rows differing between the sides is not a
// divergence. Its rows in object mode, and an update's in load mode,
// still are.
func TestDivergenceLoadReads(t *testing.T) {
	run := func(name, query string, noRows int64, mode results.SyncMode) *Run {
		s := querystats.NewSet()
		for i := range int64(1000) {
			st := s.Slot("q", query)
			st.Record(query, 1, 100+i%50, false)
			st.RecordRows(map[bool]int64{true: 0, false: 1}[i < noRows])
		}
		rows, err := s.Rows(querystats.RowOptions{Hist: true})
		if err != nil {
			t.Fatal(err)
		}
		r := results.New(results.KindReplay, LatencyClient)
		r.Source, r.Queries, r.WallSeconds = name, rows, float64(10+len(name))
		r.Statements = results.StatementCounts{Total: 1000, Executed: 1000}
		r.Outcomes.OnlyOnTargetBySQLState = map[string]int64{}
		r.Sync = &results.Sync{Mode: mode}
		return r
	}
	const sel, upd = "SELECT * FROM orders WHERE state = $1", "UPDATE orders SET state = $1 WHERE id = $2"
	for _, tc := range []struct {
		query    string
		mode     results.SyncMode
		diverged bool
	}{
		{sel, results.SyncLoad, false},
		{sel, results.SyncObject, true},
		{upd, results.SyncLoad, true},
		{"SELECT * FROM orders WHERE state = $1 FOR UPDATE", results.SyncLoad, true},
	} {
		rep, err := Compare(run("control", tc.query, 0, tc.mode), run("candidate", tc.query, 80, tc.mode), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Verdict.Status == VerdictDiverged; got != tc.diverged || len(rep.Divergence) > 0 != tc.diverged {
			t.Errorf("%s in %s mode: verdict %s, divergence %+v; want diverged %v", tc.query, tc.mode, rep.Verdict.Status, rep.Divergence, tc.diverged)
		}
	}
}
