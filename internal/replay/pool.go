package replay

import (
	"slices"
	"sync"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// A pooled replay (Options.Pool) splits each logged session into its
// transactions (units) and hands each to the first free connection of a
// pool of its user, database and application, in the order the log
// began them, as an application's connection pool hands its requests.
// A logged session then has two kinds of session here: the logical one,
// which the dispatcher and the synchronization follow (its counts, its
// commits, its end) and which never runs; and a worker, opened beside it
// with its user, database and settings, which runs any of the pool's
// units on its connection. A pool has as many workers as the log has
// sessions of it open: a worker opens when one of them begins in the
// log, and the first free one retires when one ends (a nil unit).
//
// Without a pool, a session whose statements take longer on the target
// than in the original falls behind its schedule while the application's
// other sessions wait idle: on a saturated candidate, per-session queues
// where the application had one queue for all its connections. Measured
// in issue 76 (shop, the index dropped, 518 transactions/s, 8 clients):
// 5.2-5.7 statements in flight where the application had 7.8-7.9.

// unit is one transaction of a logged session in a pooled replay: a
// block, or a statement outside one (with the fetches of a portal it
// left suspended), its items in order; or, with retire, the end of a
// session of the pool, for the first worker free then.
type unit struct {
	q      *queue
	owner  *session      // the logical session
	due    time.Duration // its first item's, from the clock's start
	retire bool
}

// pool is the units of one pool key, by due time, and its idle workers.
// A worker takes a unit only once it is due (takeLead before), as an
// application's pool hands a request to a connection when it arrives: a
// worker that took the next unit read, due later, would keep its
// connection from one due before it that the log wrote later (a
// statement is logged when it ends).
type pool struct {
	mu     sync.Mutex
	units  []*unit
	closed bool
	// waiters are the idle workers' channels; timing, that the first
	// waits for the first unit's time (the others for a signal).
	waiters []chan struct{}
	timing  bool
	b       *budget
}

// takeLead is how long before its due time a worker takes a unit: its
// first statement then waits for its time as any does (waitDue).
const takeLead = 2 * time.Millisecond

// poolKey is what a pool's sessions share: the client's (the lane, user,
// database and application) and which of the Multiply copies.
type poolKey struct {
	clientKey
	copy int
}

// put queues u in due order. A new first unit, or one with no worker
// timing the first, wakes the first idle worker to look at it.
func (p *pool) put(u *unit) {
	p.mu.Lock()
	i := len(p.units)
	for i > 0 && p.units[i-1].due > u.due {
		i--
	}
	p.units = slices.Insert(p.units, i, u)
	var w chan struct{}
	if (i == 0 || !p.timing) && len(p.waiters) > 0 {
		w = p.popWaiter()
	}
	p.mu.Unlock()
	if w != nil {
		close(w)
	}
}

// popWaiter takes the first idle worker's channel (with p.mu held).
func (p *pool) popWaiter() chan struct{} {
	w := p.waiters[0]
	p.waiters[0] = nil
	p.waiters = p.waiters[1:]
	if len(p.waiters) == 0 {
		p.waiters = nil
	}
	return w
}

// close ends the pool: its workers retire once its units are taken.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	ws := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// take waits for the next unit due, start being the clock's start; ok is
// false when the worker retires: a session of the pool ended in the log,
// the pool closed with nothing left, or done closed.
func (p *pool) take(done <-chan struct{}, start time.Time) (u *unit, ok bool) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		wait := time.Duration(-1) // none: wait for a signal
		if len(p.units) > 0 {
			u = p.units[0]
			if d := time.Until(start.Add(u.due - takeLead)); d > 0 {
				if !p.timing {
					p.timing, wait = true, d
				}
			} else {
				p.units[0] = nil
				p.units = p.units[1:]
				var w chan struct{}
				if len(p.units) > 0 && !p.timing && len(p.waiters) > 0 {
					// The next first unit needs a worker to time it.
					w = p.popWaiter()
				}
				p.mu.Unlock()
				if w != nil {
					close(w)
				}
				return u, !u.retire
			}
		} else if p.closed {
			p.mu.Unlock()
			return nil, false
		}
		ch := make(chan struct{})
		var tc <-chan time.Time
		if wait >= 0 {
			// The timing worker is first, so that a new first unit
			// wakes it (put).
			p.waiters = slices.Insert(p.waiters, 0, ch)
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tc = timer.C
		} else {
			p.waiters = append(p.waiters, ch)
		}
		p.mu.Unlock()
		p.b.starve(1)
		stopped := false
		select {
		case <-ch:
		case <-tc:
		case <-done:
			stopped = true
		}
		p.b.starve(-1)
		if wait >= 0 {
			p.mu.Lock()
			p.timing = false
			if i := slices.Index(p.waiters, ch); i >= 0 {
				p.waiters = slices.Delete(p.waiters, i, i+1)
			}
			p.mu.Unlock()
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		if stopped {
			return nil, false
		}
	}
}

// drain takes the units still queued, for a worker that stops.
func (p *pool) drain() []*unit {
	p.mu.Lock()
	defer p.mu.Unlock()
	var us []*unit
	for _, u := range p.units {
		if !u.retire {
			us = append(us, u)
		}
	}
	p.units = nil
	return us
}

// blockAfter is whether a session is inside a transaction block in the
// log after the items of an execution of text, from in before it. Of a
// string that failed in the original, only the items up to the failure
// ran there (see fingerprint.RanBeforeFailure): BEGIN; ...; ROLLBACK that
// failed left its session in the aborted block, whose ROLLBACK never ran.
func blockAfter(in bool, items []fingerprint.Item, text string, failed bool) bool {
	if failed {
		items = fingerprint.RanBeforeFailure(items, text)
	}
	for _, it := range items {
		switch it.Class(text).Block() {
		case fingerprint.BlockOpens:
			in = true
		case fingerprint.BlockEnds:
			in = false
		}
	}
	return in
}

// pooledUnit is the dispatcher's state of a logical session: its open
// unit, and whether the log has it in a block, or with a portal
// suspended, after the events routed so far.
type pooledUnit struct {
	pool      *pool
	open      *unit
	inBlock   bool
	suspended bool
}

// route queues it, an item of the logical session s, in a pooled replay:
// an execution to its open unit (a new one, queued in its pool, when
// none is open), which closes once the log has s outside a block; a
// connection, a disconnection or a failed login is done at once (the
// pool's workers keep their connections).
func (d *dispatcher) route(s *session, it item) {
	it.owner, it.seq = s, s.dispatched
	ev := it.ev
	pu := s.pooled
	switch ev.Kind {
	case event.Statement, event.Execute:
	default:
		s.done(it)
		return
	}
	if pu.open != nil && !pu.inBlock && !ev.IsFetch() {
		// A portal the original left suspended and never fetched on.
		pu.close()
	}
	if pu.open == nil {
		pu.open = &unit{q: newQueue(d.r.budget), owner: s, due: it.due}
		pu.pool.put(pu.open)
	}
	if it.items == nil {
		it.items = d.r.cache.Get(ev.Query)
	}
	pu.open.q.push(it)
	pu.inBlock = blockAfter(pu.inBlock, it.items, ev.Query, ev.Failed)
	// Its portal goes on with a fetch on the same connection: the
	// original said so, or (a log, which does not) it had a row limit.
	if a := ev.Answer(); a != nil {
		pu.suspended = a.Suspended
	} else {
		w := ev.Wire()
		pu.suspended = w != nil && w.MaxRows > 0
	}
	if !pu.inBlock && !pu.suspended {
		pu.close()
	}
}

// close ends the open unit: the worker that runs it takes the next.
func (pu *pooledUnit) close() {
	if pu.open != nil {
		pu.open.q.close()
		pu.open = nil
	}
	pu.inBlock, pu.suspended = false, false
}

// runPool is a worker's loop: it connects, then runs the pool's units
// one after the other until it retires.
func (s *session) runPool(timer *time.Timer) {
	r := s.r
	if s.clk.paced() {
		// At once: the pool's connections are open before their
		// units are due (and the warm-up waits for them).
		s.block(func() { s.connect() })
	}
	s.warmDone()
	s.block(func() {
		select {
		case <-s.clk.ready:
		case <-r.stopCh:
		}
	})
	for !r.stopped() {
		var u *unit
		ok := false
		s.block(func() { u, ok = s.pool.take(r.stopCh, s.clk.start) })
		if !ok {
			break
		}
		s.runUnit(u, timer)
		if r.stopped() {
			break
		}
	}
	if r.stopped() {
		for _, u := range s.pool.drain() {
			s.skipQueued(u.q)
		}
	}
}

// runUnit runs one unit on the worker's connection. A unit the log left
// open (its session ended inside a block) is rolled back, as the
// original's server did at its disconnection.
func (s *session) runUnit(u *unit, timer *time.Timer) {
	r := s.r
	u.owner.runner.Store(s)
	defer u.owner.runner.CompareAndSwap(s, nil)
	for {
		it, ok := u.q.pop(r.stopCh, s.task)
		if !ok {
			break
		}
		s.faultSkip = false
		s.handle(it, timer)
		s.done(it)
	}
	s.endFetches()
	if s.conn != nil && !s.conn.IsClosed() && s.conn.TxStatus() != 'I' {
		s.rollback()
	}
	s.logTx, s.skipTx, s.blockCause, s.blockBaked, s.blockReach = false, "", "", false, nil
	if r.stopped() {
		s.skipQueued(u.q)
	}
}

// skipQueued counts what is still queued in q as not run: the replay
// stops.
func (s *session) skipQueued(q *queue) {
	for {
		it, ok, _ := q.tryPop()
		if !ok {
			return
		}
		s.faultSkip = false
		if it.ev.IsExecution() {
			s.skipEvent(it.ev, s.r.stopReason())
		}
		s.done(it)
	}
}

// live is the session that runs s's statements now: its worker, for the
// logical session of a pooled replay while one runs a unit of it (the
// one that began last, when a session that fell behind has two running
// at once); else s.
func (s *session) live() *session {
	if w := s.runner.Load(); w != nil {
		return w
	}
	return s
}

// complete notes, for a logical session of a pooled replay, that its
// item seq was done. Its units run on several connections, so they may
// finish out of order: completed counts the items done from the first
// without a gap, as a dep on the logical session means.
func (s *session) complete(seq int64) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c := s.completed.Load()
	if seq != c+1 {
		if s.early == nil {
			s.early = map[int64]bool{}
		}
		s.early[seq] = true
		return
	}
	for c++; s.early[c+1]; c++ {
		delete(s.early, c+1)
	}
	s.completed.Store(c)
	s.wakeLocked(c)
}

// endLogical notes that the log ended the logical session s after n
// items: it exits once they are done.
func (s *session) endLogical(n int64) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.final = n
	s.wakeLocked(s.completed.Load())
}

// wakeLocked releases the waiters that c completed items satisfy, and
// every one when the logical session ended (with s.wmu held).
func (s *session) wakeLocked(c int64) {
	if s.final > 0 && c >= s.final {
		s.exited.Store(true)
		for _, w := range s.waiters {
			close(w.ch)
		}
		s.waiters = nil
		s.hasWaiters.Store(false)
		return
	}
	kept := s.waiters[:0]
	for _, w := range s.waiters {
		if w.n <= c {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	s.waiters = kept
	s.hasWaiters.Store(len(kept) > 0)
}
