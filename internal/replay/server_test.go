package replay

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// lagSink collects the lag of the statements of one fingerprint.
type lagSink struct {
	nopSink
	fp   string
	mu   sync.Mutex
	lags []time.Duration
}

func (o *lagSink) Statement(s Sample) {
	if s.Fingerprint == o.fp && s.Skipped == "" {
		o.mu.Lock()
		o.lags = append(o.lags, s.Lag)
		o.mu.Unlock()
	}
}

func (o *lagSink) p99() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := slices.Clone(o.lags)
	slices.Sort(l)
	if len(l) == 0 {
		return 0
	}
	return l[(len(l)*99-1)/100]
}

func fp(sql string) string { return fingerprint.Compute(sql)[0].Fingerprint }

// TestNonBlocking is the field report's failure turned into a test: one
// session runs a statement that was quick in the original but takes 3 s
// on the target, while four others issue a quick statement every 100 ms
// for 5 s. The slow statement delays only its own session: the replay
// takes about 5 s and the others are issued on time.
func TestNonBlocking(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	var l testLog
	slow := l.session("postgres", "postgres", 0)
	slow.query(10*time.Millisecond, time.Millisecond, "SELECT pg_sleep(3)")
	for at := 100 * time.Millisecond; at <= 5*time.Second; at += 100 * time.Millisecond {
		// Its own later statements queue behind the slow one.
		slow.query(at, time.Millisecond, "SELECT now()")
	}
	slow.disconnect(5 * time.Second)
	for range 4 {
		s := l.session("postgres", "postgres", 0)
		for at := time.Duration(0); at <= 5*time.Second; at += 100 * time.Millisecond {
			s.query(at, time.Millisecond, "SELECT 1")
		}
		s.disconnect(5 * time.Second)
	}
	path := l.write(t)

	obs := &lagSink{fp: fp("SELECT 1")}
	start := time.Now()
	res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 1, Sink: obs})
	took := time.Since(start)
	t.Logf("took %v, quick sessions' p99 lag %v, overall lag %+v ms", took, obs.p99(), *res.Lag)
	if took < 4900*time.Millisecond || took > 6*time.Second {
		t.Errorf("replay took %v, want about 5 s (< 6 s)", took)
	}
	if p := obs.p99(); p > 50*time.Millisecond {
		t.Errorf("p99 lag of the quick sessions %v, want < 50 ms", p)
	}
	if len(obs.lags) != 4*51 {
		t.Errorf("%d quick statements ran, want %d", len(obs.lags), 4*51)
	}
	if res.Statements.Executed != 1+50+4*51 || res.Statements.Failed != 0 {
		t.Errorf("statements %+v", res.Statements)
	}
	// The slow session's backlog ran late, and the lag says so.
	if res.Lag.Max < 2500 {
		t.Errorf("max lag %.1f ms: the statements behind pg_sleep(3) should be ~3 s late", res.Lag.Max)
	}
}

// TestPacingWallClock: a log spanning 10 s replays in 10 s ± 2% at speed 1
// and in 5 s ± 2% at speed 2, against a real server: never faster, and
// slower only by the replay's fixed start and end (opening the log,
// connecting the sessions ahead of the clock, closing them), at most
// 400 ms however busy the machine; while it runs, every statement is
// issued on its schedule (lag p99 within 2% of the span).
func TestPacingWallClock(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	var l testLog
	for range 5 {
		s := l.session("postgres", "postgres", 0)
		for at := time.Duration(0); at <= 10*time.Second; at += 50 * time.Millisecond {
			s.query(at, time.Millisecond, "SELECT 1")
		}
		s.disconnect(10 * time.Second)
	}
	path := l.write(t)
	for _, tc := range []struct {
		speed float64
		want  time.Duration
	}{{1, 10 * time.Second}, {2, 5 * time.Second}} {
		start := time.Now()
		res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: tc.speed})
		took := time.Since(start)
		t.Logf("speed %v: %v (want %v), lag %+v ms", tc.speed, took, tc.want, *res.Lag)
		if d := took - tc.want; d < -tc.want/50 || d > tc.want/50+400*time.Millisecond {
			t.Errorf("speed %v: took %v, want %v ± 2%% (+ at most 400 ms to start and end)", tc.speed, took, tc.want)
		}
		if p99 := time.Duration(res.Lag.P99 * float64(time.Millisecond)); p99 > tc.want/50 {
			t.Errorf("speed %v: lag p99 %v, want within 2%% of %v", tc.speed, p99, tc.want)
		}
		if res.Statements.Executed != 5*201 {
			t.Errorf("executed %d, want %d", res.Statements.Executed, 5*201)
		}
	}
}

// TestErrorsAndDeadlock: errors of the target are counted by SQLSTATE and
// the session goes on; two sessions that take row locks in opposite order
// deadlock on the target, the server breaks the deadlock, and the replay
// neither hangs nor stops.
func TestErrorsAndDeadlock(t *testing.T) {
	// Sequential: the deadlock needs each session's updates on
	// schedule, 100 ms apart, at the log's pace.
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"deadlock_timeout": "200ms"}})
	ctx := context.Background()
	if err := c.Exec(ctx, "postgres", "CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0), (2, 0)"); err != nil {
		t.Fatal(err)
	}
	var l testLog
	ms := time.Millisecond
	a := l.session("postgres", "postgres", 0)
	b := l.session("postgres", "postgres", 0)
	for i, s := range []*testSession{a, b} {
		first, second := 1+i, 2-i
		s.query(100*ms, ms, "BEGIN")
		s.query(200*ms, ms, "UPDATE t SET v = v + 1 WHERE id = "+string(rune('0'+first)))
		s.query(300*ms, ms, "UPDATE t SET v = v + 1 WHERE id = "+string(rune('0'+second)))
		s.query(1500*ms, ms, "COMMIT")
		s.query(1600*ms, ms, "SELECT 1/0") // fails here, failed in the original too? no: logged as a success
		s.query(1700*ms, ms, "SELECT count(*) FROM t")
		s.disconnect(1800 * ms)
	}
	path := l.write(t)
	start := time.Now()
	res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 1})
	t.Logf("took %v; errors %v", time.Since(start), res.ErrorsBySQLState)
	if res.ErrorsBySQLState["40P01"] != 1 {
		t.Errorf("deadlocks %d, want 1 (%v)", res.ErrorsBySQLState["40P01"], res.ErrorsBySQLState)
	}
	if res.ErrorsBySQLState["22012"] != 2 {
		t.Errorf("division by zero %d, want 2", res.ErrorsBySQLState["22012"])
	}
	// Both sessions went on to their last statement.
	if got := res.Query(fp("SELECT count(*) FROM t")); got == nil || got.Calls != 2 || got.Errors != 0 {
		t.Errorf("the sessions did not go on after their errors: %+v", got)
	}
	if o := res.Outcomes; o.FailedOnlyOnTarget != 3 || o.OriginalFailed != 0 {
		t.Errorf("outcomes %+v, want 3 failures only on the target", o)
	}
	if len(res.Errors) == 0 || res.Errors[0].Message == "" {
		t.Errorf("no error samples: %+v", res.Errors)
	}
}
