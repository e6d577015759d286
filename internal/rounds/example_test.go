package rounds_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// Run rounds on two sides in alternation: each round (Run) resets its
// target, replays (here a function that only names its result, where a
// command replays a workload with package replayrun), releases what the
// reset made and hands the result on (Done: where a command writes its
// file). No server is needed: reset.None leaves the target as it is and
// says that every round after a side's first starts from what the one
// before left.
func Example() {
	ctx := context.Background()
	order := rounds.Alternate("control", "candidate", 2)
	done := map[string]int{}
	i := 0
	next := func() (func(context.Context) (bool, error), bool) {
		if i == len(order) {
			return nil, false
		}
		side := order[i]
		i++
		return func(ctx context.Context) (stop bool, err error) {
			done[side]++
			end := rounds.Run(ctx, rounds.Cycle{
				Reset: reset.None{}, N: done[side],
				Replay: func(ctx context.Context, at rounds.Place) (*results.Result, error) {
					return &results.Result{Source: fmt.Sprintf("%s round %d", side, at.Reset.Round)}, nil
				},
				Done: func(_ rounds.Place, res *results.Result, err error) error {
					if err == nil {
						fmt.Printf("%s: ", res.Source)
					}
					return nil
				},
			})
			if err := errors.Join(end.Err, end.ReleaseErr); err != nil {
				return true, fmt.Errorf("%s: %w", end.Stage, err)
			}
			fmt.Printf("%s, drifted %t\n", rounds.StatusDone, end.Place.Reset.Drifted)
			return false, nil
		}, true
	}
	interruptedBefore, err := rounds.Sequence(ctx, next)
	fmt.Println("interrupted before:", interruptedBefore, "error:", err)
	// Output:
	// control round 1: done, drifted false
	// candidate round 1: done, drifted false
	// candidate round 2: done, drifted true
	// control round 2: done, drifted true
	// interrupted before: 0 error: <nil>
}

// Once the context is cancelled (Ctrl-C), Sequence starts no further
// round and says before which one it stopped; the rounds finished are
// the caller's to keep.
func ExampleSequence() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	next := func() (func(context.Context) (bool, error), bool) {
		return func(context.Context) (bool, error) {
			n++
			fmt.Println("round", n, "ran")
			if n == 2 {
				cancel() // Ctrl-C as the second round finishes
			}
			return false, nil
		}, n < 5
	}
	interruptedBefore, err := rounds.Sequence(ctx, next)
	fmt.Println("interrupted before round", interruptedBefore, "error:", err)
	// Output:
	// round 1 ran
	// round 2 ran
	// interrupted before round 3 error: <nil>
}

// Turn orders any number of sides the way Alternate orders two: as given
// in even passes, reversed in odd ones.
func ExampleTurn() {
	sides := []string{"A", "B", "C"}
	for pass := range 3 {
		fmt.Println(rounds.Turn(sides, pass))
	}
	// Output:
	// [A B C]
	// [C B A]
	// [A B C]
}
