// Package testgate admits a test package's functional cases (the ones
// that call t.Parallel and wait on servers and paced replays) as many at
// a time as -parallel says, the longest first. Tests only.
//
// Why: Go resumes the top-level cases paused in t.Parallel in an order
// of its scheduler's (roughly the reverse of the source's in one run,
// another in the next). In a quiet internal/cli run at six at a time,
// TestReplaySurvivesFaults (64 s) started 100 s after the others and ran
// alone for its last 40; internal/replay's TestSyncOrders (34 s) and
// TestEngineFaults (31 s) started last and ended the package 43 s after
// its other cases (issue 44: make test within 15 minutes). A package's
// TestMain calls Init, which hands Go's limit to the gate; each case
// calls Enter with how long it takes on a quiet machine (0 when short).
package testgate

import (
	"cmp"
	"flag"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Gate admits the cases that register before the package's serial tests
// end in one order: the slow ones, longest first, then the others in the
// order they registered. A case waits until it is the first of those not
// yet admitted and a slot is free: every registered case reaches the
// gate as soon as Go releases the paused ones, so the wait for the first
// is short. The zero Gate, before Init, is Go's own t.Parallel.
type Gate struct {
	mu      sync.Mutex
	cond    sync.Cond
	free    int
	pending []*ticket
	seq     int
}

type ticket struct {
	took time.Duration
	seq  int
}

// Init gives the gate the -parallel that the run asked for and lifts Go's
// own: the gate is the limit of the top-level cases. Subtests are not
// gated (a gated parent's slot is held until they end) and so run at
// once under Go's lifted limit; a package whose subtests call t.Parallel
// should have few. Call it from TestMain, before m.Run.
func (g *Gate) Init() {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.parallel")
	if f == nil {
		return
	}
	n, err := strconv.Atoi(f.Value.String())
	if err != nil || n < 1 {
		return
	}
	g.cond.L = &g.mu
	g.free = n
	_ = f.Value.Set(strconv.Itoa(n + 64))
}

// Enter registers t, pauses it as Go does a parallel test, and returns
// once the gate admits it; its slot is freed when t ends. took is how
// long t takes on a quiet machine, 0 for the short cases: the longer,
// the earlier it is admitted.
func (g *Gate) Enter(t *testing.T, took time.Duration) {
	t.Helper()
	if g.cond.L == nil || strings.Contains(t.Name(), "/") {
		t.Parallel()
		return
	}
	g.mu.Lock()
	g.seq++
	tk := &ticket{took: took, seq: g.seq}
	i, _ := slices.BinarySearchFunc(g.pending, tk, func(a, b *ticket) int {
		return cmp.Or(cmp.Compare(b.took, a.took), cmp.Compare(a.seq, b.seq))
	})
	g.pending = slices.Insert(g.pending, i, tk)
	g.mu.Unlock()
	t.Parallel()
	g.mu.Lock()
	for g.free == 0 || g.pending[0] != tk {
		g.cond.Wait()
	}
	g.pending = g.pending[1:]
	g.free--
	g.mu.Unlock()
	g.cond.Broadcast()
	t.Cleanup(func() {
		g.mu.Lock()
		g.free++
		g.mu.Unlock()
		g.cond.Broadcast()
	})
}
