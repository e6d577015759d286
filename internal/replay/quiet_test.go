package replay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestCatalogReadUntrackedForRole: the replayer's own catalog read for a
// session of an application's role (which may not turn
// pg_stat_statements.track off) goes through the target's own login, so
// that the target's pg_stat_statements holds the workload's statements
// and none of the replayer's. Before, whichever session read a
// database's catalog first decided it, and a sharded replay's merge
// differed from the single one's (TestShardsMergeEqualSingle). Nor does
// the pre-flight check leave a statement there.
func TestCatalogReadUntrackedForRole(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	pgclustertest.Exec(t, c, "postgres",
		"CREATE EXTENSION pg_stat_statements",
		"CREATE ROLE app LOGIN",
		"CREATE TABLE t (id int PRIMARY KEY, v int)",
		"GRANT SELECT, INSERT, UPDATE ON t TO app",
		"SELECT pg_stat_statements_reset()",
	)
	ms := time.Millisecond
	var l testLog
	a := l.session("app", "postgres", 0)
	a.query(1*ms, ms, "INSERT INTO t VALUES (1, 1)")
	a.query(2*ms, ms, "UPDATE t SET v = 2 WHERE id = 1")
	a.disconnect(5 * ms)
	res := replayFile(t, l.write(t), Options{Target: c.DSN("postgres"), Speed: 0, Sync: syncdep.Object})
	if res.Statements.Executed != 2 || res.Statements.Failed != 0 {
		t.Fatalf("statements %+v", res.Statements)
	}
	// The pre-flight check's round trip is the empty query, which
	// pg_stat_statements does not count either.
	r, err := New(Options{Target: c.DSN("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	if checks := r.Preflight(ctx, []Login{{User: "app", Database: "postgres"}}, time.Minute); len(checks) != 1 || checks[0].Problem != ProblemNone {
		t.Fatalf("the pre-flight check of a login the target takes: %+v", checks)
	}
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	queries, err := pgx.CollectRows(must(conn.Query(ctx, "SELECT query FROM pg_stat_statements")), pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var workload int
	for _, q := range queries {
		switch {
		case strings.Contains(q, "pg_stat_statements"):
		case strings.Contains(q, "pg_class") || strings.Contains(q, "pg_proc") || strings.Contains(q, "statement_timeout"):
			t.Errorf("the replayer's catalog read is in the target's statistics: %s", q)
		case strings.HasPrefix(q, "INSERT INTO t") || strings.HasPrefix(q, "UPDATE t"):
			workload++
		default:
			t.Errorf("a statement the workload did not have is in the target's statistics: %s", q)
		}
	}
	if workload != 2 {
		t.Errorf("%d of the workload's 2 statements in pg_stat_statements: %q", workload, queries)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
