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

// readFile returns the contents of path, and fails the test if it cannot
// be read.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
