package rounds_test

import (
	"context"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// Run rounds on two sides in alternation: each round resets its target,
// replays (here a function that only counts, where a command replays a
// workload with package replayrun) and releases what the reset made. No
// server is needed: reset.None leaves the target as it is and says that
// every round after a side's first starts from what the one before left.
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
			r := &rounds.Round{Reset: reset.None{}, N: done[side]}
			if resetErr, releaseErr := r.Start(ctx); resetErr != nil {
				return true, fmt.Errorf("reset: %w (release: %v)", resetErr, releaseErr)
			}
			statements, err := rounds.Replay(ctx, r, func(context.Context) (int, error) {
				return 100 * r.N, nil // what the replay ran
			})
			if relErr := r.Release(ctx); err == nil {
				err = relErr
			}
			if err != nil {
				return true, err
			}
			fmt.Printf("%s round %d: %s, drifted %t, %d statements\n",
				side, r.N, rounds.StatusDone, r.State.Drifted, statements)
			return false, nil
		}, true
	}
	interruptedBefore, err := rounds.Sequence(ctx, next)
	fmt.Println("interrupted before:", interruptedBefore, "error:", err)
	// Output:
	// control round 1: done, drifted false, 100 statements
	// candidate round 1: done, drifted false, 100 statements
	// candidate round 2: done, drifted true, 200 statements
	// control round 2: done, drifted true, 200 statements
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
