package cli

import (
	"context"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// mustExec runs each of sqls, in order, on database db of c, and fails
// the test at the first error.
func mustExec(t testing.TB, c *pgcluster.Cluster, db string, sqls ...string) {
	t.Helper()
	for _, sql := range sqls {
		if err := c.Exec(context.Background(), db, sql); err != nil {
			t.Fatal(err)
		}
	}
}
