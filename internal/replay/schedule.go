package replay

import (
	"math"
	"time"
)

// clock maps log time to wall time: a log time t is due at
// start + (t - t0) / speed. The rate stays a float64 throughout: in
// time.Duration arithmetic a speed of 0.5 would truncate to 0.
//
// At speed > 0 the clock starts only after the sessions of its first
// moments have connected (see dispatcher.startClock): start is written
// once, before ready is closed, and read only after ready is closed.
type clock struct {
	speed float64
	start time.Time // wall time of t0, with its monotonic reading
	t0    int64     // log time, µs since the epoch
	ready chan struct{}
}

func newClock(speed float64, now time.Time, t0 int64) clock {
	c := clock{speed: speed, start: now, t0: t0, ready: make(chan struct{})}
	close(c.ready)
	return c
}

// newPendingClock returns a clock that has not started: setStart starts it.
func newPendingClock(speed float64, t0 int64) *clock {
	return &clock{speed: speed, t0: t0, ready: make(chan struct{})}
}

func (c *clock) setStart(now time.Time) {
	c.start = now
	close(c.ready)
}

// started reports whether start is set (and may be read).
func (c *clock) started() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// offset returns how long after start the log time t is due; negative for
// times before t0. At speed 0 everything is due at once.
func (c *clock) offset(t int64) time.Duration {
	if c.speed == 0 {
		return 0
	}
	ns := float64(t-c.t0) * 1e3 / c.speed
	// Clamp rather than overflow on absurd spans or tiny speeds.
	if ns > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	if ns < math.MinInt64/2 {
		return math.MinInt64 / 2
	}
	return time.Duration(ns)
}

// due is the wall time at which log time t is due.
func (c *clock) due(t int64) time.Time { return c.start.Add(c.offset(t)) }

// logAt is the log time being replayed at wall time now.
func (c *clock) logAt(now time.Time) int64 {
	if c.speed == 0 {
		return c.t0
	}
	return c.t0 + int64(float64(now.Sub(c.start).Nanoseconds())*c.speed/1e3)
}

// lookaheadUS converts the lookahead to log µs: the window is in log time,
// so a faster replay reads as far ahead in the log, and as much memory.
func lookaheadUS(d time.Duration) int64 { return d.Microseconds() }

// waitUntil waits on t, the caller's only timer, until the wall time at,
// or until done is closed. It reports whether the time came.
func waitUntil(t *time.Timer, at time.Time, done <-chan struct{}) bool {
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	// Since Go 1.23 Reset needs no draining: a stopped or fired timer's
	// channel holds no stale value.
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-done:
		t.Stop()
		return false
	}
}
