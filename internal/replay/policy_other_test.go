//go:build !linux

package replay

// callerUnderBatch: no SCHED_BATCH outside Linux (known false).
func callerUnderBatch() (batch, known bool) { return false, false }
