//go:build linux && (amd64 || arm64)

package replay

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pgrehearse/pgrehearse/internal/rawio"
)

// hrTimer is a timerfd on CLOCK_MONOTONIC, read through the runtime's
// poller.
type hrTimer struct {
	f  *os.File
	fd int
}

func newHRTimer() (hrTimer, bool) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return hrTimer{}, false
	}
	// A non-blocking descriptor is read through the poller: a read
	// parks the goroutine, not a thread.
	return hrTimer{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}, true
}

// set arms the timer to fire once, d from now. timerfd_settime does not
// block: a raw call, without the scheduler's entry and exit (the
// engine's timers, rawio's own test, use the same).
func (t hrTimer) set(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	rawio.TimerfdSettime(t.fd, &spec)
}

// wait blocks until the timer fires; false once closed.
func (t hrTimer) wait() bool {
	var buf [8]byte
	_, err := t.f.Read(buf[:])
	return err == nil
}

func (t hrTimer) close() { t.f.Close() }
