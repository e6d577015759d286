package capturerun

import (
	"runtime"
	"testing"
)

// TestSetThreadsOverlapping: two captures of one process (in-process
// tests, or a demo beside a capture) end in either order, and the
// process gets its GOMAXPROCS back from before the first, never the
// first capture's setting.
func TestSetThreadsOverlapping(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	const initial = 3
	runtime.GOMAXPROCS(initial)
	for _, firstEndsFirst := range []bool{true, false} {
		a := setThreads(1)
		b := setThreads(1)
		if got := runtime.GOMAXPROCS(0); got != 1 {
			t.Fatalf("during two captures of one thread: GOMAXPROCS %d", got)
		}
		if firstEndsFirst {
			a()
			if got := runtime.GOMAXPROCS(0); got != 1 {
				t.Errorf("one capture still runs: GOMAXPROCS %d, want 1", got)
			}
			b()
		} else {
			b()
			a()
		}
		if got := runtime.GOMAXPROCS(0); got != initial {
			t.Errorf("first ends first %v: GOMAXPROCS %d after both, want %d", firstEndsFirst, got, initial)
		}
	}
	if restore := setThreads(0); runtime.GOMAXPROCS(0) != initial {
		t.Errorf("Threads 0 changed GOMAXPROCS")
	} else {
		restore()
	}
}
