package cli

import (
	"context"
	"os"
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

// writeFile writes data to path (mode 0644), fails the test if it
// cannot, and returns path.
func writeFile(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
