package cli

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
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

// startCoord starts a cluster with an empty database for the
// coordination of a sharded run, and returns that database's DSN.
func startCoord(t testing.TB) string {
	t.Helper()
	co := pgclustertest.StartT(t, pgcluster.Options{})
	mustExec(t, co, "postgres", "CREATE DATABASE coord")
	return co.DSN("coord")
}

// createDatabases creates each database of setups on c and runs its
// SQL in it.
func createDatabases(t testing.TB, c *pgcluster.Cluster, setups map[string]string) {
	t.Helper()
	for db, setup := range setups {
		mustExec(t, c, "postgres", "CREATE DATABASE "+db)
		mustExec(t, c, db, setup)
	}
}

// parallelServer is parallelCase and a throwaway server of its own,
// with the context the case runs in.
func parallelServer(t *testing.T) (context.Context, *pgcluster.Cluster) {
	t.Helper()
	parallelCase(t)
	return context.Background(), pgclustertest.StartT(t, pgcluster.Options{})
}

// waitErrs waits for wg, then fails the test with the first of the
// errors its goroutines sent to errs, if any.
func waitErrs(t testing.TB, wg *sync.WaitGroup, errs chan error) {
	t.Helper()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// pgssPair starts the two clusters of a capture's check against
// pg_stat_statements, both loading it: A, the original, and B, the
// target. Each gets the extension and then setup (when not empty); A's
// statistics are reset after.
func pgssPair(t *testing.T, setup string) (a, b *pgcluster.Cluster) {
	t.Helper()
	pgss := map[string]string{"shared_preload_libraries": "pg_stat_statements"}
	a = pgclustertest.StartT(t, pgcluster.Options{Settings: pgss})
	b = pgclustertest.StartT(t, pgcluster.Options{Settings: pgss})
	for _, c := range []*pgcluster.Cluster{a, b} {
		mustExec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements; "+setup)
	}
	mustExec(t, a, "postgres", "SELECT pg_stat_statements_reset()")
	return a, b
}
