package replay

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// pooledLog is an application with a pool of two connections (sessions
// a and b, open through the log). a runs a statement that took 1 ms in
// the log and sleeps 400 ms on the target, then, while it would still be
// sleeping there, four statements 10 ms apart (two of them executions of
// a named statement, as pgbench -M prepared sends), then a transaction
// block of two inserts with a sleep between them. b has nothing to do
// after its first statement, and ends before the block. Every insert
// notes its backend and how many of the application's connections were
// open.
func pooledLog(t testing.TB) string {
	var l testLog
	a := l.sessionApp("postgres", "postgres", "pooled", 0)
	b := l.sessionApp("postgres", "postgres", "pooled", 0)
	b.query(600*time.Millisecond, time.Millisecond, "INSERT INTO seen SELECT 'first', pg_backend_pid(), (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pooled')")
	a.query(600*time.Millisecond, time.Millisecond, "INSERT INTO seen SELECT 'sleep', pg_backend_pid(), 0 FROM pg_sleep(0.4)")
	for i := range 4 {
		at := 610*time.Millisecond + time.Duration(i)*10*time.Millisecond
		if i%2 == 0 {
			a.query(at, time.Millisecond, "INSERT INTO seen SELECT 'quick', pg_backend_pid(), (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pooled')")
		} else {
			a.execute(at, time.Millisecond, "P_1", "INSERT INTO seen SELECT $1, pg_backend_pid(), (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pooled')", "quick")
		}
	}
	a.query(1500*time.Millisecond, time.Millisecond, "BEGIN")
	a.query(1502*time.Millisecond, time.Millisecond, "INSERT INTO seen SELECT 'block', pg_backend_pid(), (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pooled')")
	a.query(1504*time.Millisecond, 50*time.Millisecond, "SELECT pg_sleep(0.05)")
	a.query(1560*time.Millisecond, time.Millisecond, "INSERT INTO seen SELECT 'block', pg_backend_pid(), 0")
	a.query(1562*time.Millisecond, time.Millisecond, "COMMIT")
	b.disconnect(1200 * time.Millisecond)
	a.disconnect(1600 * time.Millisecond)
	return l.write(t)
}

// TestPooledSessions: with Options.Pool, a session's transactions run on
// the first free connection of its application's pool, as a pooled
// application hands them out. The statements a logged while its slow one
// still ran on the target run on b's connection, on time; without the
// pool they wait for a's and run some 400 ms late. A transaction block
// stays on one connection, and the pool holds as many connections as the
// log had sessions open: two, then one once b ended.
func TestPooledSessions(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "postgres", "CREATE TABLE seen (tag text, pid int, open int)"); err != nil {
		t.Fatal(err)
	}
	path := pooledLog(t)
	conn := pgclustertest.PgConn(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	scalar := func(q string) int {
		t.Helper()
		rr, err := conn.Exec(ctx, q).ReadAll()
		if err != nil || len(rr) != 1 || len(rr[0].Rows) != 1 {
			t.Fatalf("%s: %v", q, err)
		}
		n, err := strconv.Atoi(string(rr[0].Rows[0][0]))
		if err != nil {
			t.Fatalf("%s: %q: %v", q, rr[0].Rows[0][0], err)
		}
		return n
	}
	for _, pooled := range []bool{false, true} {
		for attempt := 1; ; attempt++ {
			if err := c.Exec(ctx, "postgres", "TRUNCATE seen"); err != nil {
				t.Fatal(err)
			}
			res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 1, Pool: pooled})
			if res.Statements.Executed != 11 || res.Statements.Failed != 0 {
				t.Fatalf("pool %v: statements %+v", pooled, res.Statements)
			}
			onSleeper := scalar("SELECT count(*) FROM seen q, seen s WHERE q.tag = 'quick' AND s.tag = 'sleep' AND q.pid = s.pid")
			blockPIDs := scalar("SELECT count(DISTINCT pid) FROM seen WHERE tag = 'block'")
			pids := scalar("SELECT count(DISTINCT pid) FROM seen")
			most := scalar("SELECT max(open) FROM seen")
			inBlock := scalar("SELECT max(open) FROM seen WHERE tag = 'block'")
			t.Logf("pool %v, attempt %d: %d of 4 quick on the sleeper's connection, %d connections, at most %d open, lag %+v ms", pooled, attempt, onSleeper, pids, most, *res.Lag)
			if blockPIDs != 1 {
				t.Fatalf("pool %v: the block's statements ran on %d connections", pooled, blockPIDs)
			}
			if pids > 2 || most > 2 {
				t.Fatalf("pool %v: %d connections, at most %d open: more than the log's 2 sessions", pooled, pids, most)
			}
			if inBlock != 1 {
				t.Fatalf("pool %v: %d connections open during the block, after b ended: want 1", pooled, inBlock)
			}
			if res.Pooled != pooled {
				t.Fatalf("pool %v: the result says pooled %v", pooled, res.Pooled)
			}
			if !pooled {
				// Each statement on its own session's connection.
				if onSleeper != 4 || res.Lag.Max < 300 {
					t.Fatalf("without the pool: %d of 4 quick statements on the sleeper's connection, lag max %v ms; want 4, and 300 ms or more", onSleeper, res.Lag.Max)
				}
				break
			}
			if onSleeper == 0 && res.Lag.Max < 300 {
				break
			}
			// b's connection free 10 ms after each was due: a machine
			// stalled that long hides it.
			if attempt == 3 {
				t.Fatalf("with the pool: %d of 4 quick statements waited for the sleeper's connection (lag max %v ms) in 3 attempts; want none, on time", onSleeper, res.Lag.Max)
			}
		}
	}
}

// TestPoolTakesByDue: a worker takes a unit only once it is due
// (takeLead before), the one due first first, whatever the order they
// were put in (a statement is logged when it ends, so a long one is read
// after shorter ones that began after it); a new first unit wakes the
// worker timing the one before it; a retirement is taken at its time,
// in its place; a closed pool lets its workers go once it is empty.
func TestPoolTakesByDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pool{b: &budget{}}
		start := time.Now()
		done := make(chan struct{})
		type took struct {
			due    time.Duration
			at     time.Duration
			retire bool
		}
		got := make(chan took, 8)
		worker := func() {
			for {
				u, ok := p.take(done, start)
				if u == nil {
					return
				}
				got <- took{u.due, time.Since(start), !ok}
				if !ok {
					return
				}
			}
		}
		p.put(&unit{due: 50 * time.Millisecond})
		go worker()
		synctest.Wait()
		if len(got) != 0 {
			t.Fatalf("a unit due at 50 ms taken at once")
		}
		// Read later, due earlier: taken first, at its time.
		p.put(&unit{due: 20 * time.Millisecond})
		p.put(&unit{due: 80 * time.Millisecond, retire: true})
		p.put(&unit{due: 90 * time.Millisecond})
		go worker()
		var order []took
		for range 3 {
			order = append(order, <-got)
		}
		want := []took{{20 * time.Millisecond, 20*time.Millisecond - takeLead, false}, {50 * time.Millisecond, 50*time.Millisecond - takeLead, false}, {80 * time.Millisecond, 80*time.Millisecond - takeLead, true}}
		for i, w := range want {
			if order[i] != w {
				t.Errorf("take %d: %+v, want %+v", i, order[i], w)
			}
		}
		if w := <-got; w.due != 90*time.Millisecond || w.at != 90*time.Millisecond-takeLead {
			t.Errorf("last take: %+v", w)
		}
		p.close()
		synctest.Wait()
		if len(got) != 0 || len(p.waiters) != 0 {
			t.Errorf("after close: %d takes, %d waiters", len(got), len(p.waiters))
		}
	})
}
