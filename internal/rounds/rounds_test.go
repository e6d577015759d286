package rounds

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

func TestAlternate(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, "AB"},
		{2, "ABBA"},
		{3, "ABBAAB"},
		{4, "ABBAABBA"},
	} {
		got := ""
		for _, s := range Alternate("A", "B", tc.n) {
			got += s
		}
		if got != tc.want {
			t.Errorf("Alternate(%d) = %q, want %q", tc.n, got, tc.want)
		}
		// Each side runs first as often as the other, give or take one
		// pair.
		first := map[string]int{}
		for i, s := range Alternate("A", "B", tc.n) {
			if i%2 == 0 {
				first[s]++
			}
		}
		if d := first["A"] - first["B"]; d < 0 || d > 1 {
			t.Errorf("Alternate(%d): A first %d times, B %d", tc.n, first["A"], first["B"])
		}
	}
}

func TestTurn(t *testing.T) {
	sides := []string{"A", "B"}
	for pass, want := range [][]string{{"A", "B"}, {"B", "A"}, {"A", "B"}, {"B", "A"}} {
		if got := Turn(sides, pass); !slices.Equal(got, want) {
			t.Errorf("Turn(pass %d) = %v, want %v", pass, got, want)
		}
	}
	if !slices.Equal(sides, []string{"A", "B"}) {
		t.Errorf("Turn changed its input: %v", sides)
	}
	// Two sides over passes are Alternate's order.
	var all []string
	for pass := range 3 {
		all = append(all, Turn(sides, pass)...)
	}
	if want := Alternate("A", "B", 3); !slices.Equal(all, want) {
		t.Errorf("three passes = %v, Alternate = %v", all, want)
	}
	if got := Turn([]string{"A"}, 1); !slices.Equal(got, []string{"A"}) {
		t.Errorf("one side, pass 1 = %v", got)
	}
}

func TestTimesLeft(t *testing.T) {
	for _, tc := range []struct {
		name      string
		done      []time.Duration
		before    time.Duration
		left      int
		want      time.Duration
		wantKnown bool
	}{
		{"nothing known", nil, 0, 4, 0, false},
		{"before the first round", nil, 30 * time.Second, 4, 2 * time.Minute, true},
		// The guess is dropped once a round finished.
		{"mean of the rounds measured", []time.Duration{40 * time.Second, 20 * time.Second}, time.Hour, 3, 90 * time.Second, true},
		{"none left", []time.Duration{time.Second}, 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ts Times
			for _, d := range tc.done {
				ts.Add(d)
			}
			got, known := ts.Left(tc.left, tc.before)
			if got != tc.want || known != tc.wantKnown {
				t.Errorf("Left(%d, %v) = %v, %v; want %v, %v", tc.left, tc.before, got, known, tc.want, tc.wantKnown)
			}
			if ts.Len() != len(tc.done) {
				t.Errorf("Len = %d, want %d", ts.Len(), len(tc.done))
			}
		})
	}
}

// countingReset is reset.None that counts its releases, to check that
// every round's reset is released, also an interrupted one's.
type countingReset struct {
	reset.None
	resets, releases int
	releaseCtxErr    []error
	failReset        error
}

func (c *countingReset) Reset(ctx context.Context, round int) (reset.State, error) {
	c.resets++
	return reset.State{Mode: reset.ModeNone, Round: round}, c.failReset
}

func (c *countingReset) Release(ctx context.Context, _ reset.State) error {
	c.releases++
	c.releaseCtxErr = append(c.releaseCtxErr, ctx.Err())
	return nil
}

// TestSequenceInterruptedKeepsFinished runs five rounds whose replay (a
// function value standing for replayrun.RunRound) is cancelled during
// the third: the two finished are kept, the third is dropped and
// released under a live cleanup context, and no further round starts.
func TestSequenceInterruptedKeepsFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := &countingReset{}
	var finished []int
	var started int
	n := 0
	replay := func(ctx context.Context, round int) (*results.Result, error) {
		if round == 3 {
			cancel()
			<-ctx.Done()
			return &results.Result{Partial: true}, ctx.Err()
		}
		return &results.Result{}, nil
	}
	before, err := Sequence(ctx, func() (func(context.Context) (bool, error), bool) {
		if n == 5 {
			return nil, false
		}
		n++
		seq := n
		return func(ctx context.Context) (bool, error) {
			started++
			end := Run(ctx, Cycle{Reset: rs, N: seq, Replay: func(ctx context.Context, _ Place) (*results.Result, error) { return replay(ctx, seq) }})
			if end.ReleaseErr != nil {
				return true, end.ReleaseErr
			}
			if ctx.Err() != nil {
				return true, nil // dropped
			}
			if end.Err != nil {
				return true, end.Err
			}
			finished = append(finished, seq)
			return false, nil
		}, true
	})
	if err != nil {
		t.Fatalf("Sequence: %v", err)
	}
	if before != 0 {
		t.Errorf("interrupted before round %d, want during a round (0)", before)
	}
	if !slices.Equal(finished, []int{1, 2}) {
		t.Errorf("finished rounds %v, want [1 2]", finished)
	}
	if started != 3 || rs.resets != 3 || rs.releases != 3 {
		t.Errorf("started %d rounds, %d resets, %d releases; want 3 each", started, rs.resets, rs.releases)
	}
	for i, e := range rs.releaseCtxErr {
		if e != nil {
			t.Errorf("release %d ran under a cancelled context: %v", i+1, e)
		}
	}
}

// TestSequenceCancelledBefore checks that no round starts once the
// context is cancelled, and that the place of the round not started is
// returned.
func TestSequenceCancelledBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := 0
	before, err := Sequence(ctx, func() (func(context.Context) (bool, error), bool) {
		return func(context.Context) (bool, error) {
			ran++
			if ran == 2 {
				cancel() // after the round finished
			}
			return false, nil
		}, true
	})
	if err != nil || before != 3 || ran != 2 {
		t.Errorf("Sequence = %d, %v after %d rounds; want 3, nil after 2", before, err, ran)
	}
}

func TestSequenceStops(t *testing.T) {
	boom := errors.New("boom")
	ran := 0
	before, err := Sequence(context.Background(), func() (func(context.Context) (bool, error), bool) {
		return func(context.Context) (bool, error) {
			ran++
			if ran == 2 {
				return true, boom
			}
			return false, nil
		}, true
	})
	if !errors.Is(err, boom) || before != 0 || ran != 2 {
		t.Errorf("Sequence = %d, %v after %d rounds; want 0, boom after 2", before, err, ran)
	}
}

// TestStartFailedReleases checks that a reset that failed half way is
// released at once.
func TestStartFailedReleases(t *testing.T) {
	boom := errors.New("no space")
	rs := &countingReset{failReset: boom}
	r := round{Reset: rs, N: 1}
	rerr, relErr := r.start(context.Background())
	if !errors.Is(rerr, boom) || relErr != nil || rs.releases != 1 {
		t.Errorf("start = %v, %v with %d releases; want no space, nil, 1", rerr, relErr, rs.releases)
	}
}

func TestCleanupContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cctx, ccancel := CleanupContext(ctx, 0)
	defer ccancel()
	if cctx.Err() != nil {
		t.Fatalf("cleanup context cancelled with its parent: %v", cctx.Err())
	}
	dl, ok := cctx.Deadline()
	if !ok || time.Until(dl) > DefaultCleanupTimeout || time.Until(dl) < DefaultCleanupTimeout-time.Minute {
		t.Errorf("cleanup deadline in %v, want about %v", time.Until(dl), DefaultCleanupTimeout)
	}
}
