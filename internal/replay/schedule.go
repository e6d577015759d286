package replay

import (
	"math"
	"time"
)

// Schedule is how a replay times the events it issues. It is decided
// once, from Options.Speed (Options.Schedule); the engine asks it, never
// the speed, whether events have a time to wait for.
type Schedule uint8

// Schedules.
const (
	// Paced issues each event at its logged time, at the log's pace
	// times Options.Speed: the replay keeps the original's timing, and
	// how late each statement was issued is measured (lag).
	Paced Schedule = iota + 1
	// Unpaced (speed 0) issues events as fast as the sessions run
	// them: every event is due at once, each session keeps its order,
	// and start barriers or synchronization keep the sessions' order
	// against each other. There is no lag to measure.
	Unpaced
)

// Paced reports whether events wait for their logged time.
func (s Schedule) Paced() bool { return s == Paced }

func (s Schedule) String() string {
	if s == Unpaced {
		return "unpaced"
	}
	return "paced"
}

// Schedule is the schedule o asks for: Unpaced at speed 0, Paced
// otherwise.
func (o Options) Schedule() Schedule {
	if o.Speed == 0 {
		return Unpaced
	}
	return Paced
}

// clock maps log time to wall time: a log time t is due at
// start + (t - t0) / speed when paced, at start when not. The rate stays
// a float64 throughout: in time.Duration arithmetic a speed of 0.5 would
// truncate to 0.
//
// At speed > 0 the clock starts only after the sessions of its first
// moments have connected (see dispatcher.startClock): start is written
// once, before ready is closed, and read only after ready is closed.
type clock struct {
	sched Schedule
	speed float64   // when paced
	start time.Time // wall time of t0, with its monotonic reading
	t0    int64     // log time, µs since the epoch
	ready chan struct{}
}

func newClock(sched Schedule, speed float64, now time.Time, t0 int64) clock {
	c := clock{sched: sched, speed: speed, start: now, t0: t0, ready: make(chan struct{})}
	close(c.ready)
	return c
}

// newPendingClock returns a paced clock that has not started: setStart
// starts it.
func newPendingClock(speed float64, t0 int64) *clock {
	return &clock{sched: Paced, speed: speed, t0: t0, ready: make(chan struct{})}
}

// paced reports whether events wait for their time.
func (c *clock) paced() bool { return c.sched.Paced() }

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
// times before t0. Unpaced, everything is due at once.
func (c *clock) offset(t int64) time.Duration {
	if !c.paced() {
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
	if !c.paced() {
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
		// A session behind its schedule still looks at the stop: a
		// stopped replay issues no new statement, late or not.
		return !isDone(done)
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

// waitOn is waitUntil for task t's coroutine when it runs on the engine
// (the engine wakes it at the time), else waitUntil on timer.
func waitOn(t *task, timer *time.Timer, at time.Time, done <-chan struct{}) bool {
	if t.onLoop() {
		return t.sleepUntil(at, done)
	}
	return waitUntil(timer, at, done)
}

// isDone says whether done is closed, without waiting.
func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
