package cli

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

// cases runs the package's functional cases (parallelCase, slowCase) as
// many at a time as -parallel says, the longest first. Go's own limit
// starts the cases that paused in t.Parallel in an order of its
// scheduler's (roughly the reverse of the source's in one run, another in
// the next): in a quiet run at six at a time, TestReplaySurvivesFaults
// (64 s) started 100 s after the others and ran alone for its last 40,
// when the cases, longest first, fit in about half the time (issue 44:
// make test within 15 minutes). TestMain hands Go's limit to the gate
// (gateParallel).
var cases caseGate

// caseGate admits the cases that register before the package's serial
// tests end in one order: the slow ones, longest first, then the others
// in the order they registered. A case waits until it is the first of
// those not yet admitted and a slot is free: every registered case
// reaches the gate as soon as Go releases the paused ones, so the wait
// for the first is short.
type caseGate struct {
	mu      sync.Mutex
	cond    sync.Cond
	free    int
	pending []*gateTicket
	seq     int
}

type gateTicket struct {
	took time.Duration
	seq  int
}

// gateParallel gives the gate the -parallel that the run asked for and
// lifts Go's own: the gate is the limit of the top-level cases. Subtests
// that call parallelCase are not gated (a gated parent's slot is held
// until they end) and so run at once; few do (TestDrivers').
func gateParallel() {
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
	cases.cond.L = &cases.mu
	cases.free = n
	_ = f.Value.Set(strconv.Itoa(n + 64))
}

// enter registers t, pauses it as Go does a parallel test, and returns
// once the gate admits it; its slot is freed when t ends.
func (g *caseGate) enter(t *testing.T, took time.Duration) {
	t.Helper()
	if g.cond.L == nil || strings.Contains(t.Name(), "/") {
		t.Parallel()
		return
	}
	g.mu.Lock()
	g.seq++
	tk := &gateTicket{took: took, seq: g.seq}
	i, _ := slices.BinarySearchFunc(g.pending, tk, func(a, b *gateTicket) int {
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
