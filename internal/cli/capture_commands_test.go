package cli

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestCaptureDependentSessions is issue 36's acceptance item for
// synchronization: the orders workload (producers insert and commit,
// consumers ship each order once its producer committed, a foreign key
// between them) runs through the capture proxy; its capture, replayed
// with --sync onto an identical copy of the database as it was before,
// at the original pace and as fast as possible, fails no statement only
// on the target, answers every statement as the original did, and ends
// with the original's tables.
func TestCaptureDependentSessions(t *testing.T) {
	ctx := context.Background()
	src := pgclustertest.StartT(t, pgcluster.Options{})
	freshShop(t, src)
	rc := startCapture(t, src.DSN(shardOrdersDB))
	runOrders(t, func(app string) *pgconn.PgConn {
		conn, err := pgconn.Connect(ctx, rc.dsn(src.User(), shardOrdersDB)+" application_name="+app)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}, 2, 2, 30, 20*time.Millisecond)
	want := shardOrdersState(t, src.DSN(shardOrdersDB))
	if code, out := rc.stop(t); code != ExitOK {
		t.Fatalf("capture exited %d:\n%s", code, out)
	}

	target := pgclustertest.StartT(t, pgcluster.Options{})
	for _, speed := range []string{"1", "0"} {
		t.Run("speed"+speed, func(t *testing.T) {
			freshShop(t, target)
			code, text, res := runReplay(t, "--target", target.DSN("postgres"), "--speed", speed, "--sync", "object", "--findings=false", rc.dir)
			if code != ExitOK || res == nil {
				t.Fatalf("replay exited %d:\n%s", code, text)
			}
			if o := res.Outcomes; o.FailedOnlyOnTarget != 0 || o.Ran == 0 || o.AnswerDiffers != 0 || o.Answered < res.Statements.Executed {
				t.Errorf("outcomes %+v: want every statement answered as recorded, none failed only on the target\n%s", o, text)
			}
			if res.Statements.Failed != 0 {
				t.Errorf("statements %+v: %v", res.Statements, res.ErrorsBySQLState)
			}
			if got := shardOrdersState(t, target.DSN(shardOrdersDB)); got != want {
				t.Errorf("final state differs from the original's:\n got %.120s\nwant %.120s", got, want)
			}
			if s := res.Sync; s == nil || s.Mode != "object" || s.Timeouts != 0 {
				t.Errorf("sync %+v", s)
			}
			t.Logf("speed %s: %s", speed, syncSummary(res))
		})
	}
}
