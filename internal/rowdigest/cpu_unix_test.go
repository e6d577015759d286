//go:build unix

package rowdigest

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user and system) the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
