//go:build linux

package replay

import (
	"testing"

	"golang.org/x/sys/unix"
)

// policies counts this process's threads by scheduling policy.
func policies(t *testing.T) map[uint32]int {
	t.Helper()
	n := map[uint32]int{}
	for _, tid := range threadIDs() {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // the thread ended meanwhile
		}
		n[attr.Policy]++
	}
	return n
}

// callerUnderBatch reports whether the calling thread runs under
// SCHED_BATCH; known is false when its policy cannot be read.
func callerUnderBatch() (batch, known bool) {
	attr, err := unix.SchedGetAttr(unix.Gettid(), 0)
	if err != nil {
		return false, false
	}
	return attr.Policy == unix.SCHED_BATCH, true
}

// TestYieldToTarget: every thread goes under SCHED_BATCH, and back under
// SCHED_NORMAL on restore; a process that already runs under another
// policy is left as it is.
func TestYieldToTarget(t *testing.T) {
	if p := policies(t); p[unix.SCHED_NORMAL] == 0 || len(p) != 1 {
		t.Fatalf("the test process's threads by policy: %v, want all SCHED_NORMAL (0)", p)
	}
	restore, ok := yieldToTarget()
	if !ok {
		t.Fatal("yieldToTarget changed no thread")
	}
	if p := policies(t); p[unix.SCHED_BATCH] == 0 || len(p) != 1 {
		restore()
		t.Fatalf("after yieldToTarget, threads by policy: %v, want all SCHED_BATCH (3)", p)
	}
	// Under SCHED_BATCH already: a second call leaves it alone.
	again, ok := yieldToTarget()
	again()
	if ok {
		restore()
		t.Fatal("yieldToTarget changed a process whose threads were not under SCHED_NORMAL")
	}
	if p := policies(t); p[unix.SCHED_BATCH] == 0 || len(p) != 1 {
		restore()
		t.Fatalf("the second call's restore changed the policies: %v", p)
	}
	restore()
	if p := policies(t); p[unix.SCHED_NORMAL] == 0 || len(p) != 1 {
		t.Fatalf("after restore, threads by policy: %v, want all SCHED_NORMAL (0)", p)
	}
}
