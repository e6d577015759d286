//go:build linux

package replay

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// yieldToTarget puts every thread of this process under SCHED_BATCH,
// whose threads do not preempt the task running on a CPU when they wake
// (the kernel's wake-up preemption leaves them out), and returns what
// puts them back under SCHED_NORMAL. Threads made meanwhile inherit the
// policy from the thread that makes them. It changes nothing (ok false)
// when a thread runs under another policy than SCHED_NORMAL already:
// someone chose it (chrt).
//
// Why: a paced replay on the target's own machine wakes its threads
// several times a statement (timers, answers) while the target's backends
// run statements. Under SCHED_NORMAL a wake-up may take the CPU from a
// backend in the middle of its statement, and the server's time for it
// (pg_stat_statements, the log's duration) then holds the replayer's:
// bench/ctlinflate.sh measured every query of bench/forecast's
// application 1.3-1.5x slower in the replay than under the application
// itself on a 2-core machine, which compresses every ratio against a
// slower candidate (docs/forecast.md). Under SCHED_BATCH the replayer
// waits for its turn instead, which shows as its own schedule lag,
// measured and reported, not as the target's time.
func yieldToTarget() (restore func(), ok bool) {
	for _, tid := range threadIDs() {
		if attr, err := unix.SchedGetAttr(tid, 0); err != nil || attr.Policy != unix.SCHED_NORMAL {
			return func() {}, false
		}
	}
	// Twice: a thread made during the first pass by a thread not yet
	// changed is caught by the second.
	n := setPolicy(unix.SCHED_NORMAL, unix.SCHED_BATCH) + setPolicy(unix.SCHED_NORMAL, unix.SCHED_BATCH)
	if n == 0 {
		return func() {}, false
	}
	return func() { setPolicy(unix.SCHED_BATCH, unix.SCHED_NORMAL) }, true
}

// setPolicy moves this process's threads under policy from to policy to,
// keeping their nice values, and returns how many it moved.
func setPolicy(from, to uint32) int {
	n := 0
	for _, tid := range threadIDs() {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil || attr.Policy != from {
			continue
		}
		attr.Policy = to
		if unix.SchedSetAttr(tid, attr, 0) == nil {
			n++
		}
	}
	return n
}

// threadIDs lists this process's threads.
func threadIDs() []int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	ids := make([]int, 0, len(ents))
	for _, e := range ents {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
