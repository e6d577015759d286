//go:build linux

package replay

import "golang.org/x/sys/unix"

// callerUnderBatch reports whether the calling thread runs under
// SCHED_BATCH; known is false when its policy cannot be read.
func callerUnderBatch() (batch, known bool) {
	attr, err := unix.SchedGetAttr(unix.Gettid(), 0)
	if err != nil {
		return false, false
	}
	return attr.Policy == unix.SCHED_BATCH, true
}
