//go:build !linux

package replay

// yieldToTarget changes nothing where the kernel has no SCHED_BATCH.
func yieldToTarget() (restore func(), ok bool) { return func() {}, false }
