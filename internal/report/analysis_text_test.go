package report

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestWriteAnalysisErrorsOutsideStatements: the errors line says how many
// errors no statement reports, so that a reader can add them up to the
// failed statements, and says nothing of them when there are none.
func TestWriteAnalysisErrorsOutsideStatements(t *testing.T) {
	for _, c := range []struct {
		outside int64
		want    string
	}{
		{0, "errors      3 by SQLSTATE: 23505 1, 42601 2\n"},
		{2, "errors      3 by SQLSTATE: 23505 1, 42601 2 (2 outside any statement: a Parse or Bind with no Execute, a FATAL)\n"},
	} {
		r := &results.Result{
			Statements:              results.StatementCounts{Total: 5, Executed: 4, Failed: 1},
			ErrorsBySQLState:        map[string]int64{"23505": 1, "42601": 2},
			ErrorsOutsideStatements: c.outside,
		}
		var b strings.Builder
		if err := WriteAnalysis(&b, r, 0); err != nil {
			t.Fatal(err)
		}
		var got string
		for _, line := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(line, "errors ") {
				got = line
			}
		}
		if got != c.want {
			t.Errorf("outside %d: errors line %q, want %q\nin:\n%s", c.outside, got, c.want, b.String())
		}
	}
}
