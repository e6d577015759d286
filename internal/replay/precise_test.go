package replay

import (
	"runtime"
	"testing"
	"time"
)

// The precise waker wakes each channel at its time, never before it, the
// earliest first whatever the order they were asked in; on Linux it
// exists (a timerfd armed by a raw timerfd_settime).
func TestPreciseWaker(t *testing.T) {
	w := newPreciseWaker()
	if w == nil {
		if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
			t.Fatal("no precise waker on Linux: timerfd_create failed")
		}
		t.Skip("no high-resolution timer on " + runtime.GOOS + "/" + runtime.GOARCH)
	}
	defer w.t.close()
	start := time.Now()
	late, early := make(chan struct{}, 1), make(chan struct{}, 1)
	lateAt, earlyAt := start.Add(6*time.Millisecond), start.Add(3*time.Millisecond)
	w.wakeAt(lateAt, late)
	w.wakeAt(earlyAt, early) // re-arms the timer sooner
	for _, c := range []struct {
		name string
		ch   chan struct{}
		at   time.Time
	}{{"early", early, earlyAt}, {"late", late, lateAt}} {
		select {
		case <-c.ch:
			if now := time.Now(); now.Before(c.at) {
				t.Errorf("%s woken %v before its time", c.name, c.at.Sub(now))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not woken in 10 s", c.name)
		}
	}
	select {
	case <-late:
		t.Error("late woken twice")
	default:
	}
}
