package replay

import (
	"context"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// t0 is an arbitrary log start, in µs since the epoch.
const t0 = int64(1_700_000_000_000_000)

// sliceSource yields events, counting how many were read.
type sliceSource struct {
	evs  []*event.Event
	read atomic.Int64
	// lastTime is the log time of the last event read.
	lastTime atomic.Int64
}

func (s *sliceSource) Next() (*event.Event, error) {
	i := s.read.Load()
	if int(i) >= len(s.evs) {
		return nil, io.EOF
	}
	s.read.Add(1)
	s.lastTime.Store(s.evs[i].Time)
	return s.evs[i], nil
}

func stmt(session string, at time.Duration, q string) *event.Event {
	return &event.Event{Kind: event.Statement, Time: t0 + at.Microseconds(), Session: session, User: "u", Database: "d", Query: q, Duration: 100}
}

// evenLog is sessions issuing a statement every step for span.
func evenLog(sessions int, step, span time.Duration) []*event.Event {
	var evs []*event.Event
	for at := time.Duration(0); at <= span; at += step {
		for s := range sessions {
			evs = append(evs, stmt(string(rune('a'+s)), at, "SELECT 1"))
		}
	}
	return evs
}

func dryRun(t *testing.T, opts Options, src ...event.Source) *results.Result {
	t.Helper()
	opts.DryRun = true
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariant(t, res)
	return res
}

// checkInvariant: a replay's statements and outcomes add up
// (results.StatementCounts.Check, results.Outcomes.Check).
func checkInvariant(t *testing.T, res *results.Result) {
	t.Helper()
	s := res.Statements
	if s.Total != s.Executed+s.Failed+s.SkippedTotal() {
		t.Errorf("statements: total %d != executed %d + failed %d + skipped %d (%v)", s.Total, s.Executed, s.Failed, s.SkippedTotal(), s.Skipped)
	}
	if err := res.Outcomes.Check(s); err != nil {
		t.Errorf("%v: %+v", err, res.Outcomes)
	}
	// Every connection made is timed, reconnections included; a dry
	// run makes none.
	if c := res.Connections; (c == nil) != res.DryRun || c != nil && (c.Count != c.Setup.Count || c.Count < res.Sessions.Reconnects) {
		t.Errorf("connections %+v in a replay of %d reconnections, dry run %v", c, res.Sessions.Reconnects, res.DryRun)
	}
}

// TestPacing: a log spanning 10 s takes 10 s at speed 1, 5 s at speed 2
// and 20 s at speed 0.5 (a rate that time.Duration arithmetic would
// truncate), every statement on time.
func TestPacing(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	for _, tc := range []struct {
		speed float64
		want  time.Duration
	}{{1, 10 * time.Second}, {2, 5 * time.Second}, {0.5, 20 * time.Second}, {0, 0}} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			res := dryRun(t, Options{Speed: tc.speed}, &sliceSource{evs: evenLog(3, 100*time.Millisecond, 10*time.Second)})
			if got := time.Since(start); got != tc.want {
				t.Errorf("speed %v: took %v, want %v", tc.speed, got, tc.want)
			}
			if res.Statements.Executed != 303 {
				t.Errorf("executed %d, want 303", res.Statements.Executed)
			}
			if tc.speed > 0 && (res.Lag == nil || res.Lag.Max != 0) {
				t.Errorf("lag %+v, want 0", res.Lag)
			}
			if tc.speed == 0 && res.Lag != nil {
				t.Errorf("lag %+v at speed 0, want none", res.Lag)
			}
		})
	}
}

// TestLookahead: the dispatcher reads no further ahead of the replay
// clock than the lookahead.
func TestLookahead(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	synctest.Test(t, func(t *testing.T) {
		src := &sliceSource{evs: evenLog(2, 10*time.Millisecond, 60*time.Second)}
		r, err := New(Options{Speed: 1, DryRun: true, Lookahead: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := r.Run(context.Background(), context.Background(), []event.Source{src}); err != nil {
				t.Error(err)
			}
		}()
		start := time.Now()
		for range 20 {
			time.Sleep(2500 * time.Millisecond)
			synctest.Wait()
			elapsed := time.Since(start)
			ahead := time.Duration(src.lastTime.Load()-t0)*time.Microsecond - elapsed
			if ahead > 2*time.Second+10*time.Millisecond {
				t.Fatalf("at %v the reader is %v ahead, lookahead is 2s", elapsed, ahead)
			}
			if ahead < 2*time.Second-20*time.Millisecond && src.read.Load() < int64(len(src.evs)) {
				t.Fatalf("at %v the reader is only %v ahead", elapsed, ahead)
			}
		}
		<-done
	})
}

// TestSkipReasonsAndInvariant: what cannot be replayed is skipped with its
// reason, strings without a statement are empty, and the counts add up.
func TestSkipReasonsAndInvariant(t *testing.T) {
	functionalCase(t)
	synctest.Test(t, func(t *testing.T) {
		evs := []*event.Event{
			{Kind: event.Connect, Time: t0, Session: "s", User: "u", Database: "d"},
			stmt("s", 0, "SELECT 1; SELECT 2"),
			{Kind: event.Execute, Time: t0 + 1, Session: "s", Query: "SELECT $1", ParamState: event.ParamsMissing},
			{Kind: event.Execute, Time: t0 + 2, Session: "s", Query: "SELECT $1", ParamState: event.ParamsTruncated, Params: []event.Param{{Value: "abc..."}}},
			stmt("s", 3, "COPY t FROM STDIN"),
			stmt("s", 4, "INSERT INTO t VALUES (1)"),
			stmt("s", 5, "/* nothing */"),
			stmt("s", 6, "COPY t TO STDOUT"),
			{Kind: event.Disconnect, Time: t0 + 7, Session: "s"},
		}
		res := dryRun(t, Options{Speed: 1}, &sliceSource{evs: evs})
		want := map[results.SkipReason]int64{SkipParamsMissing: 1, SkipParamsTruncated: 1, SkipCopyData: 1}
		for k, v := range want {
			if res.Statements.Skipped[k] != v {
				t.Errorf("skipped %q = %d, want %d (%v)", k, res.Statements.Skipped[k], v, res.Statements.Skipped)
			}
		}
		if res.Statements.Total != 7 || res.Statements.Executed != 4 || res.Statements.Empty != 1 {
			t.Errorf("statements %+v, want total 7, executed 4, empty 1", res.Statements)
		}

		res = dryRun(t, Options{Speed: 1, ReadOnly: true}, &sliceSource{evs: evs[:]})
		if res.Statements.Skipped[SkipNotReadOnly] != 1 {
			t.Errorf("read-only: skipped %v, want the INSERT as not read-only", res.Statements.Skipped)
		}
	})
}

func TestFilters(t *testing.T) {
	functionalCase(t)
	synctest.Test(t, func(t *testing.T) {
		var evs []*event.Event
		for i, db := range []string{"a", "b", "a"} {
			s := string(rune('p' + i))
			evs = append(evs,
				&event.Event{Kind: event.Connect, Time: t0 + int64(i), Session: s, User: "u", Database: db},
				&event.Event{Kind: event.Statement, Time: t0 + int64(i) + 1e6, Session: s, Query: "SELECT 1"},
				&event.Event{Kind: event.Statement, Time: t0 + int64(i) + 3e6, Session: s, Query: "SELECT 2"},
				&event.Event{Kind: event.Disconnect, Time: t0 + int64(i) + 4e6, Session: s})
		}
		res := dryRun(t, Options{Speed: 0}, selected(source.Selection{Databases: []string{"a"}, End: t0 + 2e6}, &sliceSource{evs: evs})...)
		if res.Statements.Total != 2 || res.Sessions.Total != 2 {
			t.Errorf("statements %+v, sessions %+v: want 2 statements of 2 sessions", res.Statements, res.Sessions)
		}
		if res.Filtered.Sessions != 1 || res.Filtered.Statements != 4 {
			t.Errorf("filtered %+v, want 1 session and 4 statements", res.Filtered)
		}

		// A session of pgrehearse's own (a log captured while it ran) is
		// never replayed, whatever the filters; it is counted apart.
		evs[0].Application = event.OwnApplicationPrefix + "observe"
		res = dryRun(t, Options{Speed: 0}, selected(source.Selection{}, &sliceSource{evs: evs})...)
		if res.Statements.Total != 4 || res.Sessions.Total != 2 {
			t.Errorf("statements %+v, sessions %+v: want 4 statements of 2 sessions", res.Statements, res.Sessions)
		}
		if want := (results.Filtered{Events: 4, Statements: 2, Sessions: 1, OwnStatements: 2}); res.Filtered != want {
			t.Errorf("filtered %+v, want %+v", res.Filtered, want)
		}
	})
}

// TestInterrupted: a replay stopped midway counts what did not run as
// skipped, keeps the invariant and is partial.
func TestInterrupted(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	synctest.Test(t, func(t *testing.T) {
		r, err := New(Options{Speed: 1, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		res, err := r.Run(ctx, context.Background(), []event.Source{&sliceSource{evs: evenLog(4, 100*time.Millisecond, 10*time.Second)}})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariant(t, res)
		if !res.Partial || res.Statements.Skipped[SkipInterrupted] == 0 {
			t.Errorf("partial %v, skipped %v: want partial with interrupted statements", res.Partial, res.Statements.Skipped)
		}
		if e := res.Statements.Executed; e < 100 || e > 130 {
			t.Errorf("executed %d in 3 s of a 40/s log", e)
		}
	})
}

// functionalCase marks t as a functional case, which measures no time:
// it asserts counts, errors, messages, results or files, with generous
// time bounds or none. Go runs such tests in parallel (at most -parallel
// at once, GOMAXPROCS by default) and only after every sequential test
// of the package has finished: the tests that time real servers (pacing,
// lag, throughput, overhead, comparisons), left sequential, still run
// alone, undisturbed. The slow ones (slowCase) start first.
func functionalCase(t *testing.T) {
	t.Helper()
	cases.Enter(t, 0)
}

// A session behind its schedule still sees the stop (TestErrorWindow
// failed at load 35-50: the replay, 2 s late, ran all 100 statements of a
// log after its error window had stopped it at the 20th): a wait for a
// time already past returns false once the replay is stopped, true
// before; so does a wait for a time to come.
func TestLateWaitSeesStop(t *testing.T) {
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	open, closed := make(chan struct{}), make(chan struct{})
	close(closed)
	past, soon := time.Now().Add(-time.Second), time.Now().Add(time.Millisecond)
	for _, tc := range []struct {
		name string
		at   time.Time
		done chan struct{}
		want bool
	}{
		{"late, running", past, open, true},
		{"late, stopped", past, closed, false},
		{"due, stopped", soon.Add(time.Hour), closed, false},
		{"due, running", soon, open, true},
	} {
		if got := waitUntil(tm, tc.at, tc.done); got != tc.want {
			t.Errorf("waitUntil %s: %v, want %v", tc.name, got, tc.want)
		}
		if got := sessionWait(nil, tm, nil, tc.at, tc.done); got != tc.want {
			t.Errorf("sessionWait %s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
