package compare_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestTxControlPGSS holds, on a real server, the two facts the judging
// of transaction control rests on (compare's txcontrol.go, issue 76):
// pg_stat_statements counts a BEGIN and a COMMIT executed as a named
// prepared statement once per statement prepared (2 sessions of 10
// executions: 2), where the simple protocol's are every one (20); and
// its time of a COMMIT leaves out the commit's WAL flush, which
// commit_delay (20 ms, slept before every flush) makes at least 20 ms of
// each round trip. If a version counts every execution, or times the
// flush, the judging may read pg_stat_statements again: this fails to
// say so. About 1.5 s.
func TestTxControlPGSS(t *testing.T) {
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		"synchronous_commit":       "on", "fsync": "on", "commit_delay": "20000", "commit_siblings": "0",
	}})
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements", "CREATE TABLE t (x int)")
	calls := func(q string) (int64, float64) {
		t.Helper()
		conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
		defer conn.Close(ctx)
		var n int64
		var ms float64
		if err := conn.QueryRow(ctx, "SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time), 0) FROM pg_stat_statements WHERE query = $1", q).Scan(&n, &ms); err != nil {
			t.Fatal(err)
		}
		return n, ms
	}
	// run sends BEGIN and COMMIT 10 times in each of 2 sessions, named
	// prepared statements or the simple protocol, with an INSERT between
	// in the simple protocol's (a commit with WAL to flush); the shortest
	// COMMIT round trip.
	run := func(named bool) time.Duration {
		t.Helper()
		pgclustertest.Exec(t, c, "postgres", "SELECT pg_stat_statements_reset()")
		least := time.Hour
		for range 2 {
			conn := pgclustertest.PgConn(ctx, t, c.DSN("postgres"))
			for _, q := range []string{"BEGIN", "COMMIT"} {
				if _, err := conn.Prepare(ctx, q, q, nil); named && err != nil {
					t.Fatal(err)
				}
			}
			for range 10 {
				for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (1)", "COMMIT"} {
					start := time.Now()
					var err error
					switch {
					case named && q != "INSERT INTO t VALUES (1)":
						err = conn.ExecPrepared(ctx, q, nil, nil, nil).Read().Err
					case named:
						// The named run times no commit.
						continue
					default:
						_, err = conn.Exec(ctx, q).ReadAll()
					}
					if err != nil {
						t.Fatal(err)
					}
					if q == "COMMIT" {
						least = min(least, time.Since(start))
					}
				}
			}
			if err := conn.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return least
	}
	run(true)
	for _, q := range []string{"BEGIN", "COMMIT"} {
		if n, _ := calls(q); n != 2 {
			t.Errorf("named prepared %s: pg_stat_statements counted %d of 20 executions, want 2 (once per session's prepare)", q, n)
		}
	}
	least := run(false)
	for _, q := range []string{"BEGIN", "COMMIT"} {
		if n, _ := calls(q); n != 20 {
			t.Errorf("simple protocol %s: pg_stat_statements counted %d of 20, want 20", q, n)
		}
	}
	_, ms := calls("COMMIT")
	if least < 20*time.Millisecond {
		t.Fatalf("the fastest COMMIT round trip took %v under commit_delay = 20 ms: no flush was delayed", least)
	}
	if mean := ms / 20; mean >= 10 {
		t.Errorf("pg_stat_statements' COMMIT time %.3f ms a call, round trips at least %v: it counts the flush", mean, least)
	}
}
