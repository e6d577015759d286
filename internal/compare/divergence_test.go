package compare

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// replayWith is a replay result of one query with rows and errors.
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
	r.Statements = results.StatementCounts{Total: calls, Executed: calls - failed, Failed: failed}
	r.ErrorsBySQLState = codes
	return r
}

func TestDivergence(t *testing.T) {
	synced := replayWith(t, "synced", 1000, 1, 0, nil)
	tests := []struct {
		name string
		cand *Run
		want string // "" for none
	}{
		{"same work", replayWith(t, "again", 1000, 1, 0, nil), ""},
		{"updates that touch no row", replayWith(t, "off", 1000, 1, 80, nil), "rows per call 1 -> 0.92"},
		{"one row in a thousand calls", replayWith(t, "off", 1000, 1, 1, nil), ""},
		{"foreign key errors", replayWith(t, "off", 1000, 1, 0, map[string]int64{"23503": 30, "25P02": 5}), "30 more 23503 errors, 5 more 25P02 errors"},
		{"timeouts are not divergence", replayWith(t, "slow", 1000, 1, 0, map[string]int64{"57014": 30}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Compare(synced, tt.cand, Options{Rules: mustRules(t, "p95>+20%")})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(rep.Divergence) != 0 || rep.Verdict.Status == VerdictDiverged {
					t.Errorf("divergence %+v, verdict %s", rep.Divergence, rep.Verdict.Line)
				}
				return
			}
			if len(rep.Divergence) != 1 || !strings.Contains(rep.Divergence[0].Reason, tt.want) {
				t.Fatalf("divergence %+v, want %q", rep.Divergence, tt.want)
			}
			if rep.Verdict.Status != VerdictDiverged || !strings.HasPrefix(rep.Verdict.Line, "REPLAY DIVERGED: 1 query did different work") {
				t.Errorf("verdict %s: %s", rep.Verdict.Status, rep.Verdict.Line)
			}
		})
	}
}
