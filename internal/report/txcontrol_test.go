package report

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// TestTxClause: the verdict line says why BEGIN is not judged by the
// latency rules and how COMMIT is judged; nothing without either.
func TestTxClause(t *testing.T) {
	paced := &compare.QueryLevels{Judged: compare.LevelApplication, Pace: &compare.TxPace{By: "b"}}
	for _, c := range []struct {
		name string
		qs   []compare.QueryDiff
		want string
	}{
		{"none", []compare.QueryDiff{{Fingerprint: "s"}}, ""},
		{"paced", []compare.QueryDiff{{Fingerprint: "b", TxControl: compare.TxBegin}, {Fingerprint: "c", TxControl: compare.TxCommit, Levels: paced}},
			"; BEGIN not judged by the latency rules (no work on the server); COMMIT judged on its round trips paced by BEGIN's " +
				"(pg_stat_statements' time leaves out the commit's WAL flush)"},
		{"commit alone", []compare.QueryDiff{{Fingerprint: "c", TxControl: compare.TxCommit}},
			"; COMMIT never judged on server time (pg_stat_statements' time leaves out the commit's WAL flush)"},
	} {
		if got := txClause(&compare.Report{Queries: c.qs}); got != c.want {
			t.Errorf("%s: txClause = %q, want %q", c.name, got, c.want)
		}
	}
}
