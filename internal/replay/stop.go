package replay

import (
	"context"
	"time"
)

// HardStop returns the second of the two contexts Run takes. A replay ends
// early in two steps: stop being done (a first Ctrl-C, the end of a
// sweep's step) stops issuing statements and lets those in flight finish;
// the context returned is cancelled grace later, or at once when abort is
// closed (a second Ctrl-C, or the caller's own cancellation when stop was
// only a deadline), and cancels the statements still in flight. Until stop
// is done, abort is not looked at. The returned CancelFunc releases the
// context and its goroutine; call it when the replay has returned.
func HardStop(stop context.Context, grace time.Duration, abort <-chan struct{}) (context.Context, context.CancelFunc) {
	hard, cancel := context.WithCancel(context.WithoutCancel(stop))
	go func() {
		select {
		case <-stop.Done():
		case <-hard.Done():
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-abort:
		case <-hard.Done():
		}
		cancel()
	}()
	return hard, cancel
}
