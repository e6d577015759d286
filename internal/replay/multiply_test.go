package replay

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestMultiplyDryRun: every session is replayed Multiply times, each copy
// counted as a session with all its statements; Multiply 0 and 1 replay
// the log as it is.
func TestMultiplyDryRun(t *testing.T) {
	functionalCase(t)
	for _, tc := range []struct{ multiply, sessions, statements int64 }{
		{0, 3, 3 * 11}, {1, 3, 3 * 11}, {4, 12, 12 * 11},
	} {
		res := dryRun(t, Options{Speed: 0, Multiply: int(tc.multiply)}, &sliceSource{evs: evenLog(3, 100*time.Millisecond, time.Second)})
		if res.Sessions.Total != tc.sessions || res.Statements.Total != tc.statements || res.Statements.Executed != tc.statements {
			t.Errorf("multiply %d: %d sessions, statements %+v; want %d sessions, %d statements executed",
				tc.multiply, res.Sessions.Total, res.Statements, tc.sessions, tc.statements)
		}
	}
	if _, err := New(Options{DryRun: true, Multiply: -1}); err == nil {
		t.Error("multiply -1 accepted")
	}
}

// openSink keeps the most connections open at once.
type openSink struct {
	nopSink
	open, max atomic.Int64
}

func (o *openSink) SessionOpened() {
	n := o.open.Add(1)
	for {
		m := o.max.Load()
		if n <= m || o.max.CompareAndSwap(m, n) {
			return
		}
	}
}
func (o *openSink) SessionClosed() { o.open.Add(-1) }

// TestMultiplyServer: at speed 0, a log of two sessions multiplied by 3
// runs six connections at once; the copies' repeated inserts of the same
// keys fail with unique violations, counted as the target's errors, while
// the original's statements all ran.
func TestMultiplyServer(t *testing.T) {
	// Sequential: all six copies must be connected within their
	// 0.5 s sleep, which a busy machine may not leave them.
	c := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, c, "postgres", "CREATE TABLE m (id int PRIMARY KEY)")
	var l testLog
	for i := range 2 {
		s := l.session("postgres", "postgres", 0)
		// Long enough that all copies are connected at once.
		s.query(10*time.Millisecond, time.Millisecond, "SELECT pg_sleep(0.5)")
		for k := range 5 {
			s.query(time.Duration(20+k)*time.Millisecond, time.Millisecond, "INSERT INTO m VALUES ("+string(rune('0'+i))+string(rune('0'+k))+")")
		}
		s.disconnect(100 * time.Millisecond)
	}
	path := l.write(t)
	obs := &openSink{}
	res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 0, Multiply: 3, Sink: obs})
	t.Logf("sessions %+v, statements %+v, errors %v, max open %d", res.Sessions, res.Statements, res.ErrorsBySQLState, obs.max.Load())
	if res.Sessions.Total != 6 {
		t.Errorf("%d sessions, want 6", res.Sessions.Total)
	}
	if got := obs.max.Load(); got != 6 {
		t.Errorf("at most %d connections open at once, want 6", got)
	}
	if res.Statements.Total != 36 || res.Statements.Executed != 16 || res.Statements.Failed != 20 {
		t.Errorf("statements %+v, want 36 total, 16 executed (2 sleeps x 3 + 10 inserts), 20 failed", res.Statements)
	}
	if res.ErrorsBySQLState["23505"] != 20 {
		t.Errorf("errors %v, want 20 unique violations (23505)", res.ErrorsBySQLState)
	}
	if res.Outcomes.FailedOnlyOnTarget != 20 {
		t.Errorf("outcomes %+v: want 20 failed only on the target", res.Outcomes)
	}
}
