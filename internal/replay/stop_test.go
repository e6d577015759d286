package replay

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestHardStop: statements in flight are cancelled grace after the stop,
// at once on an abort after the stop (or one that came before it), and
// never while the replay has not been stopped.
func TestHardStop(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	const grace = 5 * time.Second
	tests := []struct {
		name       string
		abortAfter time.Duration // after the stop; <0: before it; 0: never
		want       time.Duration // from the stop to the cancellation
	}{
		{"grace runs out", 0, grace},
		{"second Ctrl-C", time.Second, time.Second},
		{"aborted before the stop", -time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stop, stopNow := context.WithCancel(context.Background())
				abort := make(chan struct{})
				hard, cancel := HardStop(stop, grace, abort)
				defer cancel()
				if tt.abortAfter < 0 {
					close(abort)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if hard.Err() != nil {
					t.Fatal("cancelled before the stop")
				}
				stopNow()
				start := time.Now()
				if tt.abortAfter > 0 {
					time.Sleep(tt.abortAfter)
					close(abort)
				}
				<-hard.Done()
				if got := time.Since(start); got != tt.want {
					t.Errorf("cancelled %v after the stop, want %v", got, tt.want)
				}
			})
		})
	}
}

// The CancelFunc ends the watch without a stop: no goroutine is left.
func TestHardStopReleased(t *testing.T) {
	functionalCase(t)
	synctest.Test(t, func(t *testing.T) {
		hard, cancel := HardStop(context.Background(), time.Second, nil)
		cancel()
		synctest.Wait()
		if hard.Err() == nil {
			t.Error("not cancelled")
		}
	})
}
