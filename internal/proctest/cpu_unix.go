//go:build unix

package proctest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process used so far,
// for benchmarks that report CPU time rather than wall time on a shared
// machine.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
