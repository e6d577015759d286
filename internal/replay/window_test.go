package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// behindLog is a target that cannot keep up with one session: it logs a
// statement every 10 ms for 0.5 s that takes 40 ms on the target (2 s of
// work for a 0.5 s schedule), while a second session runs SELECT 1
// every 10 ms up to 0.4 s. When keep is set the first session's
// statement takes no time instead, and the replay keeps its pace.
func behindLog(t *testing.T, keep bool) string {
	var l testLog
	ms := time.Millisecond
	slow := "SELECT pg_sleep(0.04)"
	if keep {
		slow = "SELECT pg_sleep(0)"
	}
	s := l.session("postgres", "postgres", 0)
	for at := 10 * ms; at <= 500*ms; at += 10 * ms {
		s.query(at, ms, slow)
	}
	s.disconnect(510 * ms)
	q := l.session("postgres", "postgres", 0)
	for at := 10 * ms; at <= 400*ms; at += 10 * ms {
		q.query(at, ms, "SELECT 1")
	}
	q.disconnect(410 * ms)
	return l.write(t)
}

// replayWindow replays path at speed 1, as replayKept does, and returns
// the result with the window's end that Replayer.WindowEnd gave (zero
// when none came).
func replayWindow(t *testing.T, path string, opts Options) (*results.Result, time.Time) {
	t.Helper()
	got := make(chan time.Time, 1)
	ran := make(chan struct{})
	res, _ := replayWith(t, path, opts, source.Selection{}, func(r *Replayer) {
		go func() {
			select {
			case end := <-r.WindowEnd():
				got <- end
			case <-ran:
				got <- time.Time{}
			}
		}()
	})
	close(ran)
	return res, <-got
}

// A paced replay that falls behind its schedule runs each session's log
// to its end, so its sessions finish one by one after the schedule's
// end, where an application's clients stop all together (issue 58). The
// replay measures its schedule window apart: the round trips issued
// within it, the statements, and how long it ran past it. Its end comes
// from the options (a rehearsal scans its log first) or from the
// dispatcher's reading of the last event; a replay that keeps its pace
// has no window to set apart.
func TestWindowOfAReplayThatFellBehind(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	behind := behindLog(t, false)
	// The log's last event: the slow session's last statement, 500 ms
	// after the log's first line, 1 ms before its line (testLog logs
	// a statement at its end).
	last := logStart.Add(500 * time.Millisecond).UnixMicro()
	for _, tc := range []struct {
		name string
		last int64
	}{{"read", 0}, {"given", last}} {
		t.Run(tc.name, func(t *testing.T) {
			res, end := replayWindow(t, behind, Options{Target: c.DSN("postgres"), Speed: 1, WindowLast: tc.last})
			w := res.Window
			if w == nil {
				t.Fatalf("no window, finish %+v", res.Finish)
			}
			if end.IsZero() || end.UnixMicro() != int64(w.End) {
				t.Errorf("WindowEnd gave %v, the result's window ends at %d", end, w.End)
			}
			if w.Seconds < 0.4 || w.Seconds > 0.6 {
				t.Errorf("window %.3f s, want the 0.5 s schedule", w.Seconds)
			}
			// 2 s of the target's work for 0.5 s: well past it.
			if w.AfterSeconds < 0.5 {
				t.Errorf("ran %.3f s past the window, want at least 0.5 s", w.AfterSeconds)
			}
			if w.Statements+w.AfterStatements != res.Statements.Total || w.AfterStatements == 0 {
				t.Errorf("window statements %d + after %d, want %d with some after", w.Statements, w.AfterStatements, res.Statements.Total)
			}
			var calls int64
			for _, q := range res.Queries {
				calls += q.Calls
			}
			if w.Calls+w.AfterCalls != calls {
				t.Errorf("window calls %d + after %d, want %d", w.Calls, w.AfterCalls, calls)
			}
			byFP := map[string]results.WindowQuery{}
			for _, q := range w.Queries {
				byFP[q.Fingerprint] = q
			}
			slow, ok := byFP[fp("SELECT pg_sleep(0.04)")]
			if !ok {
				t.Fatalf("the slow statement is not in the window: %+v", w.Queries)
			}
			total := res.Query(fp("SELECT pg_sleep(0.04)"))
			if total == nil || slow.Calls >= total.Calls || slow.Calls == 0 {
				t.Errorf("the slow statement: %d calls in the window of %v, want some but not all", slow.Calls, total)
			}
			if slow.TimedCalls != slow.Calls || slow.MeanMS < 40 || slow.MeanMS*float64(slow.TimedCalls) > slow.TotalMS*1.001 {
				t.Errorf("the slow statement in the window: %+v, want each call timed, 40 ms at least, its mean its total's", slow)
			}
			if quick, ok := byFP[fp("SELECT 1")]; !ok || quick.Calls == 0 {
				t.Errorf("SELECT 1 is not in the window: %+v", w.Queries)
			}
		})
	}
	t.Run("kept pace", func(t *testing.T) {
		kept := behindLog(t, true)
		res, end := replayWindow(t, kept, Options{Target: c.DSN("postgres"), Speed: 1})
		// The log ends 10 ms after its last statement is due: on a busy
		// machine a statement can be issued later than that, and the
		// replay then did not keep its pace, the machine's race, which
		// the test cannot force: it tries again.
		for try := 1; try < 4 && res.Window != nil && res.Lag != nil && res.Lag.Max >= 10; try++ {
			t.Logf("try %d fell behind (lag max %.1f ms): again", try, res.Lag.Max)
			res, end = replayWindow(t, kept, Options{Target: c.DSN("postgres"), Speed: 1})
		}
		if res.Window != nil {
			t.Errorf("a replay that kept its pace has a window: %+v (finish %+v, lag %+v)", res.Window, res.Finish, res.Lag)
		}
		// Its end was known (before it came), and passed.
		if end.IsZero() || res.Finish == nil {
			t.Errorf("window end %v, finish %+v: want both", end, res.Finish)
		}
	})
}

// TestWindowKnownLate: a window whose end is read only after it has
// passed (the dispatcher waited behind sessions that fell behind) is not
// measured, and the result says so with how late it was read; one read
// in time is, and warns of nothing.
func TestWindowKnownLate(t *testing.T) {
	const t0 = int64(1_700_000_000_000_000)
	for _, tc := range []struct {
		name    string
		started time.Duration // how long ago the clock started
		late    bool
	}{{"read late", 3 * time.Second, true}, {"read in time", 0, false}} {
		w := newWindow(Options{Speed: 1})
		c := newClock(Paced, 1, time.Now().Add(-tc.started), t0)
		w.readLast(t0+int64(2*time.Second/time.Microsecond), &c)
		r := &Replayer{win: w}
		r.clk.Store(&c)
		res := results.New(results.KindReplay, results.LatencyClient)
		res.Replay = &results.Replay{Speed: 1}
		if err := r.windowResult(res, time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		warned := len(res.Warnings) == 1 && strings.HasPrefix(res.Warnings[0], "no schedule window: the replay fell behind and read the input's last event ") &&
			strings.Contains(res.Warnings[0], "s after the schedule's end")
		if tc.late != warned || res.Window != nil || (w.endUS.Load() != 0) == tc.late {
			t.Errorf("%s: warnings %q, window end %d, want a warning %v", tc.name, res.Warnings, w.endUS.Load(), tc.late)
		}
	}
}
