package rounds

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// DefaultCleanupTimeout bounds each release and close after the command
// was interrupted or failed, when the command sets none.
const DefaultCleanupTimeout = 10 * time.Minute

// CleanupContext is the context of a release or close: it survives the
// cancellation of ctx (Ctrl-C), for at most timeout from now
// (DefaultCleanupTimeout when timeout is not positive).
func CleanupContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = DefaultCleanupTimeout
	}
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// Alternate is the order of the sides a and b for n rounds each: a b,
// then b a, in turns (a b b a a b ...), so that each side runs first as
// often as the other, give or take one pair.
func Alternate[T any](a, b T, n int) []T {
	o := make([]T, 0, 2*n)
	for i := range n {
		if i%2 == 0 {
			o = append(o, a, b)
		} else {
			o = append(o, b, a)
		}
	}
	return o
}

// Turn is the order of sides in pass (from 0) when each pass runs every
// side once: as given in even passes, reversed in odd ones, as Alternate
// orders two sides.
func Turn[T any](sides []T, pass int) []T {
	o := slices.Clone(sides)
	if pass%2 == 1 {
		slices.Reverse(o)
	}
	return o
}

// round is one round's reset and release on a target, the primitives
// of Run: start resets, the replay is timed (replay), release undoes
// the reset's work.
type round struct {
	// Reset returns the target to its starting state; N is the round
	// it resets for (the side's round, from 1).
	Reset reset.Resetter
	N     int
	// CleanupTimeout bounds each release; zero means
	// DefaultCleanupTimeout.
	CleanupTimeout time.Duration

	// State is what the reset did, set by start.
	State reset.State
	// ReplaySeconds is the wall time of the replay alone (replay);
	// ReleaseSeconds that of the last release.
	ReplaySeconds  float64
	ReleaseSeconds float64
}

// start resets the target for the round. When the reset fails (also when
// interrupted), what it made half way is released at once, under the
// cleanup context: resetErr is the reset's error, releaseErr the
// release's, and the round must not replay.
func (r *round) start(ctx context.Context) (resetErr, releaseErr error) {
	r.State, resetErr = r.Reset.Reset(ctx, r.N)
	if resetErr != nil {
		releaseErr = r.release(ctx)
	}
	return resetErr, releaseErr
}

// release undoes what the reset made for the round (drops its copies),
// also after ctx was cancelled: under its own cleanup timeout, from when
// it starts. It sets ReleaseSeconds.
func (r *round) release(ctx context.Context) error {
	cctx, cancel := CleanupContext(ctx, r.CleanupTimeout)
	defer cancel()
	t := time.Now()
	err := r.Reset.Release(cctx, r.State)
	r.ReleaseSeconds = time.Since(t).Seconds()
	return err
}

// replay runs the round's replay, replay, and sets r.ReplaySeconds to
// its wall time. When ctx is cancelled replay must stop and return what
// ran, marked partial.
func (r *round) replay(ctx context.Context, replay func(context.Context) (*results.Result, error)) (*results.Result, error) {
	t := time.Now()
	res, err := replay(ctx)
	r.ReplaySeconds = time.Since(t).Seconds()
	return res, err
}

// Sequence runs rounds one after another: next gives the following
// round, false when there is none left. Before each round it checks ctx:
// once cancelled, no further round starts, and Sequence returns the
// round's place (from 1) as interruptedBefore. A round returns stop when
// the command must stop there (interrupted during it, failed) and err
// when it failed; Sequence then returns err. The rounds finished are the
// caller's to keep: Sequence never undoes them.
func Sequence(ctx context.Context, next func() (round func(context.Context) (stop bool, err error), ok bool)) (interruptedBefore int, err error) {
	for seq := 1; ; seq++ {
		round, ok := next()
		if !ok {
			return 0, nil
		}
		if ctx.Err() != nil {
			return seq, nil
		}
		if stop, err := round(ctx); stop || err != nil {
			return 0, err
		}
	}
}

// Times are the wall times of the rounds finished (or what of them a
// command estimates by: headroom's overheads beyond the log's span), for
// the estimate of the time left.
type Times struct {
	d []time.Duration
}

// Add records a round's time.
func (t *Times) Add(d time.Duration) { t.d = append(t.d, d) }

// Len is the number of rounds recorded.
func (t *Times) Len() int { return len(t.d) }

// Mean is the mean time of the rounds recorded; 0 before any.
func (t *Times) Mean() time.Duration {
	if len(t.d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range t.d {
		sum += d
	}
	return sum / time.Duration(len(t.d))
}

// Left is the time left rounds take: the mean of the rounds recorded
// times left or, before any, before (an estimate from the log's span)
// times left; known is false when neither is known.
func (t *Times) Left(left int, before time.Duration) (d time.Duration, known bool) {
	if len(t.d) == 0 {
		return before * time.Duration(left), before > 0
	}
	return t.Mean() * time.Duration(left), true
}

// ErrNoResult is a round's error when its replay returned neither a
// result nor an error.
var ErrNoResult = errors.New("the replay gave no result")

// ErrStoppedEarly is a round's error when its replay stopped before its
// end by itself (a partial result, the command not interrupted).
var ErrStoppedEarly = errors.New("the replay stopped early")

// Phase is what a round is doing, for a command's progress.
type Phase string

// Phases, in order.
const (
	PhaseReset  Phase = "reset"
	PhaseReplay Phase = "replay"
	PhaseDone   Phase = "done"
)

// Status is how a round ended, in a command's records.
type Status string

// Statuses.
const (
	// StatusDone: the round ran whole; its result counts.
	StatusDone Status = "done"
	// StatusInterrupted: stopped by the user; its result is partial and
	// does not count.
	StatusInterrupted Status = "interrupted"
	// StatusFailed: the reset or the replay failed; the command stopped
	// there.
	StatusFailed Status = "failed"
)
