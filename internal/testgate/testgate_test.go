package testgate

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

var (
	gate     Gate
	admitted struct {
		sync.Mutex
		names []string
	}
)

// TestMain runs the four cases below one at a time through the gate and
// checks, once they all ended, that they were admitted longest first and
// the short ones in their order of registration, whatever order Go
// released them in.
func TestMain(m *testing.M) {
	flag.Parse()
	_ = flag.Set("test.parallel", "1")
	gate.Init()
	code := m.Run()
	want := []string{"TestLong", "TestMiddle", "TestShortFirst", "TestShortSecond"}
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !slices.Equal(admitted.names, want) {
		fmt.Fprintf(os.Stderr, "admitted %v, want %v\n", admitted.names, want)
		code = 1
	}
	os.Exit(code)
}

func admit(t *testing.T, took time.Duration) {
	gate.Enter(t, took)
	admitted.Lock()
	admitted.names = append(admitted.names, t.Name())
	admitted.Unlock()
}

func TestShortFirst(t *testing.T)  { admit(t, 0) }
func TestMiddle(t *testing.T)      { admit(t, time.Second) }
func TestShortSecond(t *testing.T) { admit(t, 0) }
func TestLong(t *testing.T)        { admit(t, time.Minute) }

// TestSubtestsNotGated: a subtest's Enter is Go's t.Parallel: its gated
// parent holds the only slot until the subtests end, so gating them would
// never end.
func TestSubtestsNotGated(t *testing.T) {
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) { gate.Enter(t, 0) })
	}
}
