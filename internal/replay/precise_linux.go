//go:build linux && (amd64 || arm64)

package replay

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// hrTimer is a timerfd on CLOCK_MONOTONIC, read through the runtime's
// poller.
type hrTimer struct {
	f  *os.File
	fd uintptr
}

const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

func newHRTimer() (hrTimer, bool) {
	fd, _, e := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if e != 0 {
		return hrTimer{}, false
	}
	// A non-blocking descriptor is read through the poller: a read
	// parks the goroutine, not a thread.
	return hrTimer{f: os.NewFile(fd, "timerfd"), fd: fd}, true
}

// set arms the timer to fire once, d from now.
func (t hrTimer) set(d time.Duration) {
	// struct itimerspec { it_interval, it_value }, each { sec, nsec }.
	spec := [4]int64{0, 0, int64(d / time.Second), int64(d % time.Second)}
	syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, t.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// wait blocks until the timer fires; false once closed.
func (t hrTimer) wait() bool {
	var buf [8]byte
	_, err := t.f.Read(buf[:])
	return err == nil
}

func (t hrTimer) close() { t.f.Close() }
