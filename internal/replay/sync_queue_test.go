package replay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestLockQueueInTheStatementsTime: in load mode a session's lock of a
// hot row that another session's transaction block holds waits in the
// target's lock queue, as the application's did, not in the replay: the
// wait is in the statement's time on the target, which a forecast of a
// busy hour's contention reads (syncdep's Tracker.setLast). The block
// locks the row FOR UPDATE, thinks 300 ms and updates it; the other
// session asks for the row 80 ms after the lock and, in the log, got it
// when the block committed. Made to wait in the replay for the block's
// update instead, its lock took a few ms and the queue vanished into the
// sync waits.
func TestLockQueueInTheStatementsTime(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "postgres", "CREATE TABLE hot (id int PRIMARY KEY, n int); INSERT INTO hot VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	const lock = "SELECT n FROM hot WHERE id = 1 FOR UPDATE"
	var l testLog
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	a := l.session("postgres", "postgres", 0)
	a.query(ms(10), ms(1), "BEGIN")
	a.query(ms(20), ms(1), lock)
	a.query(ms(320), ms(1), "UPDATE hot SET n = n + 1 WHERE id = 1")
	a.query(ms(330), ms(1), "COMMIT")
	a.disconnect(ms(400))
	b := l.session("postgres", "postgres", ms(5))
	b.query(ms(50), ms(1), "BEGIN")
	b.query(ms(100), ms(232), lock) // got the row at a's COMMIT
	b.query(ms(340), ms(1), "UPDATE hot SET n = n + 1 WHERE id = 1")
	b.query(ms(350), ms(1), "COMMIT")
	b.disconnect(ms(400))
	path := l.write(t)
	for attempt := 1; ; attempt++ {
		res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 1, Sync: syncdep.Load})
		if res.Statements.Failed != 0 {
			t.Fatalf("statements %+v, errors %v", res.Statements, res.ErrorsBySQLState)
		}
		var most float64
		for _, q := range res.Queries {
			if strings.Contains(q.Query, "FOR UPDATE") {
				most = q.MaxMS
			}
		}
		var waited float64
		if res.SyncWait != nil {
			waited = res.SyncWait.Max
		}
		t.Logf("attempt %d: the lock's longest %.1f ms, sync waits up to %.1f ms, lag %+v", attempt, most, waited, res.Lag)
		if waited >= 150 {
			t.Fatalf("a statement waited %.0f ms in the replay: the lock queue's wait left the target", waited)
		}
		// The second lock waits about 230 ms for the block; a machine
		// stalled so long that the block ended before it was sent hides
		// it.
		if most >= 150 {
			return
		}
		if attempt == 3 {
			t.Fatalf("the second lock of the row took at most %.1f ms in 3 attempts, want about 230: it did not wait in the target's lock queue", most)
		}
	}
}

// TestCatalogFrom: the catalog the synchronization reads decides what a
// session waits for, and Options.CatalogFrom reads it from another
// server (a rehearsal's control) than the target. On the target the
// table has a trigger (a rehearsal's candidate with a new trigger): its
// writes may write anything, so a write of another row waits for every
// earlier commit, here one the target delays by 300 ms (pg_sleep inside
// the block); read from a copy of the database without the trigger (the
// control's), the same write waits for nothing, as the application's
// did (hotrow's hot update waited 8.6 s a round on such a candidate,
// 0.6 s on the control).
func TestCatalogFrom(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const table = "CREATE TABLE hot (id int PRIMARY KEY, n int, at timestamptz); INSERT INTO hot VALUES (1, 0), (2, 0)"
	for _, db := range []string{"ctl", "cand"} {
		if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		if err := c.Exec(ctx, db, table); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Exec(ctx, "cand", `CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.at := now(); RETURN NEW; END$$;
CREATE TRIGGER stamp BEFORE UPDATE ON hot FOR EACH ROW EXECUTE FUNCTION stamp()`); err != nil {
		t.Fatal(err)
	}
	var l testLog
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	a := l.session("postgres", "cand", 0)
	a.query(ms(10), ms(1), "BEGIN")
	a.query(ms(20), ms(1), "UPDATE hot SET n = n + 1 WHERE id = 1")
	a.query(ms(25), ms(1), "SELECT pg_sleep(0.3)")
	a.query(ms(30), ms(1), "COMMIT")
	a.disconnect(ms(500))
	b := l.session("postgres", "cand", ms(5))
	b.query(ms(40), ms(1), "UPDATE hot SET n = n + 1 WHERE id = 2")
	b.disconnect(ms(500))
	path := l.write(t)
	waited := func(o Options) float64 {
		res := replayFile(t, path, o)
		if res.Statements.Failed != 0 {
			t.Fatalf("statements %+v, errors %v", res.Statements, res.ErrorsBySQLState)
		}
		if res.SyncWait == nil {
			return 0
		}
		return res.SyncWait.Max
	}
	base := Options{Target: c.DSN("cand"), Speed: 1, Sync: syncdep.Load}
	if w := waited(base); w < 150 {
		t.Fatalf("with the target's catalog (its trigger) the other row's write waited %.1f ms, want about 300: the test does not show what it is for", w)
	}
	from := base
	from.CatalogFrom, from.CatalogDatabaseMap = c.DSN("postgres"), map[string]string{"cand": "ctl"}
	if w := waited(from); w >= 150 {
		t.Fatalf("with the catalog read from the copy without the trigger the other row's write waited %.1f ms, want none", w)
	}
}
