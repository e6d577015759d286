package replay

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// perCallLog is an application that connects for each request (PHP, a
// serverless function, pgbench -C) with clients clients: each opens a
// session every 80 ms for sessions sessions, the clients 5 ms apart (the
// log's first 500 ms are the replay's warm-up, the rest after it). A
// session counts the application's statements running at once into
// crowd, then sleeps; in the log it lasts 10 ms, so that the original
// never had more than clients sessions at once, but its sleep takes
// 200 ms on the target: the target is far slower than the original.
func perCallLog(t testing.TB, clients, sessions int) string {
	var l testLog
	for k := range sessions {
		for c := range clients {
			at := time.Duration(k)*80*time.Millisecond + time.Duration(c)*5*time.Millisecond
			s := l.sessionApp("postgres", "postgres", "percall", at)
			s.query(at+time.Millisecond, time.Millisecond, "INSERT INTO crowd SELECT count(*) FROM pg_stat_activity WHERE application_name = 'percall' AND state = 'active'")
			s.query(at+3*time.Millisecond, 2*time.Millisecond, "SELECT pg_sleep(0.2)")
			s.disconnect(at + 10*time.Millisecond)
		}
	}
	return l.write(t)
}

// TestPerCallClients: a paced replay of an application that connects for
// each request does not open a session before its client's previous one
// ended on the target (dispatcher.takeClient). With the target 20 times
// slower than the original, a replay that opened each session at its
// time would run 3 or more at once where the original ran 1 or 2; the
// statements' times would then measure a crowd the application never
// had (issue 76). The replay instead holds as many as the original did
// (the most statements seen running at once is the clients'), and falls
// behind its schedule, which the lag says and puts on the target: its
// sessions were waiting for their clients' previous sessions there, not
// for the replayer.
func TestPerCallClients(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "postgres", "CREATE TABLE crowd (n int)"); err != nil {
		t.Fatal(err)
	}
	for _, clients := range []int{1, 2} {
		t.Run(strconv.Itoa(clients)+" clients", func(t *testing.T) {
			const sessions = 10
			path := perCallLog(t, clients, sessions)
			for attempt := 1; ; attempt++ {
				if err := c.Exec(ctx, "postgres", "TRUNCATE crowd"); err != nil {
					t.Fatal(err)
				}
				res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 1})
				if res.Statements.Executed != int64(2*clients*sessions) || res.Statements.Failed != 0 {
					t.Fatalf("statements %+v", res.Statements)
				}
				most := crowdMax(ctx, t, c)
				t.Logf("attempt %d: at most %d statements at once, lag %+v ms, sources %+v", attempt, most, *res.Lag, res.LagSources)
				if most > clients {
					t.Fatalf("%d of the application's statements ran at once, more than its %d clients ever did: the replay opened sessions before their clients' previous ones had ended", most, clients)
				}
				// 10 sessions of 200 ms a client where the log had
				// 80 ms each: the last about 1 s late.
				if res.Lag == nil || res.Lag.Max < 500 {
					t.Fatalf("lag %+v: the sessions waiting for their clients should have run late", res.Lag)
				}
				if src := res.LagSources; src == nil || src.TargetMS <= src.ReplayerMS {
					t.Fatalf("lag sources %+v: the wait for a client's previous session is the target's", src)
				}
				if most == clients {
					return
				}
				// Two clients' sessions overlap by 195 ms of their
				// 200 on the target; a machine stalled through that
				// hides it.
				if attempt == 3 {
					t.Fatalf("at most %d statements at once in 3 attempts, want %d: the clients did not run beside each other", most, clients)
				}
			}
		})
	}
}

// TestFasterKeepsSessionTimes: faster than the log (headroom's steps by
// speed) a session keeps its time whatever its client's previous one
// does: k times the arrivals need more sessions at once than the
// original's clients, which takeClient would hold them to.
func TestFasterKeepsSessionTimes(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "postgres", "CREATE TABLE crowd (n int)"); err != nil {
		t.Fatal(err)
	}
	res := replayFile(t, perCallLog(t, 1, 10), Options{Target: c.DSN("postgres"), Speed: 2})
	if res.Statements.Executed != 20 || res.Statements.Failed != 0 {
		t.Fatalf("statements %+v", res.Statements)
	}
	// Sessions 20 ms apart that take 200 ms: about 10 at once.
	if most := crowdMax(ctx, t, c); most < 2 {
		t.Fatalf("at most %d statements at once at speed 2: the sessions waited for their client's previous one", most)
	}
}

// TestClientOfItsApplication: a session is the next of an ended one's
// client only for the same user, database and application: another
// application's session that begins after a slow one ended in the log
// runs beside it on the target, as it did in the original (it waited
// for the slow one when clients were matched by lane alone); the same
// application's waits for it, although the slow one ran a single
// statement in the log's first half second (the replay's warm-up).
func TestClientOfItsApplication(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "postgres", "CREATE TABLE crowd (n int)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		app string
		// want is how many times the slow session was running when the
		// next one's statement ran.
		want int
	}{
		{"other", 1},
		{"slow", 0},
	} {
		t.Run(tc.app, func(t *testing.T) {
			if err := c.Exec(ctx, "postgres", "TRUNCATE crowd"); err != nil {
				t.Fatal(err)
			}
			var l testLog
			s := l.sessionApp("postgres", "postgres", "slow", 0)
			s.query(time.Millisecond, time.Millisecond, "SELECT pg_sleep(0.5)")
			s.disconnect(5 * time.Millisecond)
			// After the slow session's end in the log; on the target it
			// still sleeps then, unless the next waited for it.
			n := l.sessionApp("postgres", "postgres", tc.app, 20*time.Millisecond)
			n.query(100*time.Millisecond, time.Millisecond, "INSERT INTO crowd SELECT count(*) FROM pg_stat_activity WHERE application_name = 'slow' AND state = 'active' AND pid <> pg_backend_pid()")
			n.disconnect(110 * time.Millisecond)
			res := replayFile(t, l.write(t), Options{Target: c.DSN("postgres"), Speed: 1})
			if res.Statements.Executed != 2 || res.Statements.Failed != 0 {
				t.Fatalf("statements %+v", res.Statements)
			}
			if got := crowdMax(ctx, t, c); got != tc.want {
				t.Fatalf("the slow session was running %d times when the %s application's next session ran, want %d", got, tc.app, tc.want)
			}
		})
	}
}

// crowdMax is the most statements of the application crowd saw running
// at once.
func crowdMax(ctx context.Context, t *testing.T, c *pgcluster.Cluster) int {
	t.Helper()
	conn := pgclustertest.PgConn(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	rr, err := conn.Exec(ctx, "SELECT coalesce(max(n), 0) FROM crowd").ReadAll()
	if err != nil || len(rr) != 1 || len(rr[0].Rows) != 1 {
		t.Fatalf("reading crowd: %v", err)
	}
	n, err := strconv.Atoi(string(rr[0].Rows[0][0]))
	if err != nil {
		t.Fatal(fmt.Errorf("crowd's max %q: %w", rr[0].Rows[0][0], err))
	}
	return n
}
