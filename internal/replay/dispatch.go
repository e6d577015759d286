package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// dispatcher reads events and routes them to session queues. It runs on
// the goroutine that called Run and is the only one that reads sources,
// creates sessions and touches the maps below.
type dispatcher struct {
	r       *Replayer
	task    *task                 // on the engine: the dispatcher's coroutine; nil on a goroutine
	active  map[string][]*session // open sessions, by original session id: its Multiply copies
	running []*session            // sessions that may still run: start barriers, stalls
	timer   *time.Timer           // the dispatcher's only timer
	clk     *clock                // nil until the first event
	stalled bool                  // reading past the budget, see waitBudget
	holders []dep                 // while stalled: who held the budget, and how far they were
	checked int                   // events read while stalled since holders were last looked at
	pruned  int                   // len(running) after the last prune
	lastNew *session              // at speed 0, the session whose start barrier the next one's stands on
	warming []*session            // sessions connecting before the clock starts
	warmEnd int64                 // log time the warm-up covers, before the clock starts
	first   int64                 // log time range of the events replayed
	last    int64
	seen    bool
	// creates holds, by role and database the log creates ("role:x",
	// "db:x", as CreatedBy names them), the event of the session that
	// creates it: a later session of that role or database does not
	// connect before it ran (see open).
	creates map[string]dep
	// spent are the events read and detached (see detach), given back to
	// their source in batches.
	spent []*event.Event
	// clients are, at a speed above 0 and at most 1, the sessions
	// (their Multiply copies) whose end the log showed and whose client
	// no later session took yet, by lane, user, database and
	// application (see takeClient).
	clients clientPool
	// pools are a pooled replay's (Options.Pool, pool.go).
	pools map[poolKey]*pool
}

// errStopped ends reading when the replay is told to stop.
var errStopped = errors.New("stopped")

func (r *Replayer) dispatch(src []event.Source, res *results.Result) error {
	return r.dispatchOn(nil, src, res)
}

// dispatchOn is dispatch, as task t on the engine when t is not nil.
func (r *Replayer) dispatchOn(t *task, src []event.Source, res *results.Result) error {
	d := &dispatcher{
		task:   t,
		r:      r,
		active: map[string][]*session{},
		timer:  time.NewTimer(time.Hour),
		spent:  make([]*event.Event, 0, 64),
	}
	d.timer.Stop()
	defer func() {
		d.startClock()
		// Sessions still open at the end of the log end with it.
		for _, g := range d.active {
			for _, s := range g {
				s.q.close()
				if pu := s.pooled; pu != nil {
					pu.close()
					s.endLogical(s.dispatched)
				}
			}
		}
		for _, p := range d.pools {
			p.close()
		}
	}()
	r.followPeers()
	var err error
	for i, s := range src {
		name := fmt.Sprintf("source %d", i+1)
		if n, ok := s.(event.Named); ok && n.Name() != "" {
			name = n.Name()
		}
		res.Files = append(res.Files, name)
		if err = d.readAll(s); err != nil {
			if err != errStopped && !errors.Is(err, io.EOF) && !strings.HasPrefix(err.Error(), name) {
				err = fmt.Errorf("%s: %w", name, err)
			}
			break
		}
	}
	if p := r.peers(); p != nil && err == nil {
		// The other shards' events after this one's last.
		p.Before(math.MaxInt64)
	}
	if d.seen {
		res.FirstTime, res.LastTime = results.Time(d.first), results.Time(d.last)
		if err == nil {
			r.win.readLast(d.last, d.clk)
		}
	}
	if err == errStopped {
		res.Partial = true
		return nil
	}
	return err
}

// readAll routes the events of one source. It returns errStopped when
// told to stop.
func (d *dispatcher) readAll(src event.Source) error {
	r := d.r
	lookUS := lookaheadUS(r.opts.Lookahead)
	defer func() {
		// The source's own: none goes to the next source.
		clear(d.spent)
		d.spent = d.spent[:0]
	}()
	for n := 0; ; n++ {
		if r.stopped() {
			return errStopped
		}
		if t := d.task; t != nil && n%dispatchTurn == dispatchTurn-1 {
			// On the engine, the sessions' answers are handled
			// between turns: reading a batch of events in one go
			// would leave the server without statements meanwhile.
			t.e.wake(t)
			t.park()
		}
		ev, err := src.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		r.c.events.Add(1)
		if p := r.peers(); p != nil && ev.Pos > 0 && !p.Before(ev.Pos) {
			return errStopped
		}
		switch ev.Kind {
		case event.Connect, event.Disconnect, event.Statement, event.Execute:
		case event.Error:
			d.failedConnect(ev)
			continue
		default:
			// Prepare: named statements are prepared at their first
			// execution. Error: the failing execution is its own
			// event, with Failed set.
			continue
		}
		if ev.Session == "" {
			// No session to replay it in.
			d.filtered(ev)
			continue
		}
		g := d.active[ev.Session]
		var fresh event.Names
		names := &fresh
		if g != nil {
			names = &g[0].names
		}
		ev = d.detach(src, ev, names)
		if g == nil {
			if g = d.open(ev); g == nil {
				continue
			}
			g[0].names = fresh
		}
		if !d.seen || ev.Time < d.first {
			d.first = ev.Time
		}
		if !d.seen || ev.Time > d.last {
			d.last = ev.Time
		}
		d.seen = true
		if !d.clk.started() && ev.Time >= d.warmEnd {
			d.startClock()
		}
		// Read no further ahead of the replay clock than the lookahead.
		if r.sched.Paced() && d.clk.started() && !waitOn(d.task, d.timer, d.clk.due(ev.Time-lookUS), r.stopCh) {
			return errStopped
		}
		if !d.push(g, ev) {
			return errStopped
		}
	}
}

// detach returns the copy of ev the replay keeps (event.Detach: the
// session's strings from names), and gives ev back to its source to be
// read into again. A queued event is a copy of its own, so that the
// memory the queues hold is what the budget counts: an event from the
// reader's slab would keep the slab, and the text block its strings are
// in, alive for as long as it waits, and a session far behind the
// reader would keep the whole log between them (issue 57 item 9).
func (d *dispatcher) detach(src event.Source, ev *event.Event, names *event.Names) *event.Event {
	c := ev.Detach(names)
	if r, ok := src.(event.Recycler); ok {
		d.spent = append(d.spent, ev)
		if len(d.spent) == cap(d.spent) {
			r.Recycle(d.spent...)
			clear(d.spent)
			d.spent = d.spent[:0]
		}
	}
	return c
}

// failedConnect tells a session that its original failed to connect: a
// FATAL right after "connection authorized" (a database that does not
// exist, too many connections) means the original could not connect
// either, so failing alike is not counted against the target.
func (d *dispatcher) failedConnect(ev *event.Event) {
	if g := d.active[ev.Session]; g != nil && g[0].dispatched == 1 && ev.ErrorSeverity() == "FATAL" {
		ev = ev.Detach(&g[0].names)
		for _, s := range g {
			s.dispatched++
			it := item{ev: ev, due: d.clk.offset(ev.Time)}
			if s.pooled != nil {
				d.route(s, it)
				continue
			}
			s.q.push(it)
		}
	}
}

// open starts the session (its Multiply copies) of an event whose session
// has none yet, and returns them; nil when the event is the end of a
// session that did nothing the replay read (it began before the time
// window).
func (d *dispatcher) open(ev *event.Event) []*session {
	r := d.r
	if ev.Kind == event.Disconnect {
		d.filtered(ev)
		return nil
	}
	if d.clk == nil {
		d.newClock(ev.Time)
	}
	if !d.clk.started() && ev.Time >= d.warmEnd {
		d.startClock()
	}
	var deps []dep
	var client []*session
	if !r.sched.Paced() {
		// Computed before the copies join running: copies of one
		// session do not wait for each other.
		deps = d.barrier(r.sync != nil)
	} else {
		if len(d.running) >= 2*d.pruned+64 {
			// Amortized: a long log opens sessions without end.
			d.prune()
			d.pruned = len(d.running)
		}
	}
	g := make([]*session, r.opts.Multiply)
	pooled := r.opts.Pool && r.sched.Paced()
	for i := range g {
		s := r.newSession(ev, d.clk)
		if r.sync != nil {
			_, created := d.creates["db:"+s.db]
			r.attachSync(s, ev, created)
		}
		if i == 0 {
			// Its role and database, when the log creates them
			// before: at every speed, the session must not try to
			// connect before they exist (a connection ahead of its
			// first statement would fail, and skip all of them).
			deps = d.createdBy(deps, s)
			if r.sched.Paced() && r.opts.Speed <= 1 && !pooled {
				client = d.takeClient(clientOf(ev.Lane, s))
			}
		}
		if pooled {
			// The logical session, which never runs, and its pool's
			// new worker (pool.go).
			s.pooled = &pooledUnit{pool: d.poolOf(poolKey{clientOf(ev.Lane, s), i})}
			w := r.newSession(ev, d.clk)
			w.pool, w.lane, w.board, w.deps = s.pooled.pool, s.lane, s.board, deps
			if !d.clk.started() && !d.waitsForCreate(deps) {
				d.warming = append(d.warming, w)
			}
			d.running = append(d.running, s)
			r.c.sessions.Add(1)
			d.start(w)
			g[i] = s
			continue
		}
		if !d.clk.started() && !d.waitsForCreate(deps) && client == nil {
			// (A session that waits for a CREATE cannot connect
			// before the clock starts: the CREATE runs by it; nor
			// can one that waits for its client's previous session,
			// which runs by the clock.)
			d.warming = append(d.warming, s)
		}
		s.deps = deps // only read
		if i < len(client) {
			// Its client's previous session first (takeClient).
			s.deps = append(slices.Clip(deps), dep{s: client[i], n: client[i].dispatched})
		}
		if !r.sched.Paced() {
			s.passed = make(chan struct{})
		}
		d.running = append(d.running, s)
		r.c.sessions.Add(1)
		d.start(s)
		g[i] = s
	}
	if !r.sched.Paced() {
		d.lastNew = g[0]
	}
	d.active[ev.Session] = g
	return g
}

// start runs s: on an engine, in turn, as pgbench -j deals its clients
// to its threads; else on a goroutine of its own.
func (d *dispatcher) start(s *session) {
	r := d.r
	if n := len(r.engines); n > 0 {
		e := r.engines[r.started%n]
		r.started++
		r.wg.Add(1)
		e.start(func(t *task) {
			defer r.wg.Done()
			s.task = t
			s.run()
		})
		return
	}
	r.wg.Go(s.run)
}

// poolOf is k's pool in a pooled replay, made at its first session.
func (d *dispatcher) poolOf(k poolKey) *pool {
	p := d.pools[k]
	if p == nil {
		if d.pools == nil {
			d.pools = map[poolKey]*pool{}
		}
		p = &pool{b: d.r.budget}
		d.pools[k] = p
	}
	return p
}

// push queues an event to its session's copies, within the memory
// budget, with what synchronization decided for it; the session's end
// closes their queues. It returns false when told to stop.
func (d *dispatcher) push(g []*session, ev *event.Event) bool {
	r := d.r
	size := eventSize(ev)
	if !d.waitBudget() {
		return false
	}
	if used := r.budget.used.Add(size * int64(len(g))); used > r.c.maxBuffered.Load() {
		r.c.maxBuffered.Store(used)
	}
	due := d.clk.offset(ev.Time)
	var step syncdep.Step
	var items []fingerprint.Item
	var deps []dep
	if r.sync != nil && ev.IsExecution() {
		if step, items = r.syncStep(g[0], ev); step.Barrier {
			deps = d.barrierOf(g[0], ev.Time+r.sync.tracker(g[0].lane).Tick())
		}
	}
	if p := r.peers(); p != nil && ev.Pos > 0 {
		p.Advance(ev.Pos, step.Commit != nil || step.Mark != nil)
	}
	for _, s := range g {
		s.dispatched++
		if r.sync != nil {
			s.ends.add(ev, s.dispatched)
		}
		it := item{ev: ev, due: due, size: size, sync: step, items: items, deps: deps}
		if s.pooled != nil {
			d.route(s, it)
			continue
		}
		s.q.push(it)
	}
	if ev.IsExecution() && !ev.Failed {
		for _, name := range CreatedBy(ev.Query) {
			if strings.HasPrefix(name, "rel:") {
				// Only logins wait for a creation (createdBy).
				continue
			}
			if d.creates == nil {
				d.creates = map[string]dep{}
			}
			d.creates[name] = dep{s: g[0], n: g[0].dispatched, create: true}
		}
	}
	r.opts.Sink.ReaderPosition(ev.Time)
	if ev.Kind == event.Disconnect {
		if r.sync != nil {
			g[0].sx.End()
		}
		for _, s := range g {
			s.logEnded = true
			s.q.close()
			if pu := s.pooled; pu != nil {
				// Its last unit ends, and the first worker free
				// retires.
				pu.close()
				pu.pool.put(&unit{retire: true, due: due})
				s.endLogical(s.dispatched)
			}
		}
		delete(d.active, ev.Session)
		if r.sched.Paced() && r.opts.Speed <= 1 && g[0].pooled == nil {
			d.freeClient(ev.Lane, g)
		}
	}
	return true
}

// newClock makes the replay clock at the first event. At speed 0 it runs
// at once. At speed > 0 it waits for a warm-up: the sessions whose first
// event falls in the log's first connectLead connect first, and the clock
// starts when they have (see startClock), so that a log that opens
// hundreds of sessions in its first instant measures the target's
// statements, not a connection storm that the original did not time.
func (d *dispatcher) newClock(t0 int64) {
	r := d.r
	switch {
	case !r.sched.Paced():
		c := newClock(Unpaced, 0, time.Now(), t0)
		d.clk = &c
	case !r.opts.StartAt.IsZero():
		// The shards' shared start: every shard maps the same log time
		// to the same instant, and its sessions connect ahead by the
		// clock.
		if r.opts.Origin != nil {
			if o := r.opts.Origin(); o != 0 {
				t0 = o
			}
		}
		c := newClock(Paced, r.opts.Speed, r.opts.StartAt, t0)
		d.clk = &c
		r.win.started(d.clk)
	default:
		d.clk = newPendingClock(r.opts.Speed, t0)
		d.warmEnd = t0 + int64(float64(r.opts.connectLead.Microseconds())*r.opts.Speed)
	}
	r.clk.Store(d.clk)
}

// startClock ends the warm-up: it waits until the sessions created during
// it have made their first connection attempt (or the replay is told to
// stop), then starts the clock.
func (d *dispatcher) startClock() {
	if d.clk == nil || d.clk.started() {
		return
	}
	d.block(func() {
		for _, s := range d.warming {
			select {
			case <-s.warmed:
			case <-d.r.stopCh:
			}
		}
	})
	d.warming = nil
	d.clk.setStart(time.Now())
	d.r.win.started(d.clk)
}

// createdBy adds to deps the CREATE ROLE of s's user and the CREATE
// DATABASE of its database that the log ran before s started, when they
// have not run on the target yet.
func (d *dispatcher) createdBy(deps []dep, s *session) []dep {
	if len(d.creates) == 0 {
		return deps
	}
	var out []dep
	for _, name := range []string{"role:" + s.user, "db:" + s.db} {
		if c, ok := d.creates[name]; ok && c.s.completed.Load() < c.n {
			if out == nil {
				out = append(make([]dep, 0, len(deps)+2), deps...)
			}
			out = append(out, c)
		}
	}
	if out == nil {
		return deps
	}
	return out
}

// waitsForCreate reports whether deps hold a CREATE (see createdBy).
func (d *dispatcher) waitsForCreate(deps []dep) bool {
	for _, x := range deps {
		if x.create {
			return true
		}
	}
	return false
}

// filtered counts ev as left out: the replay has no session for it.
func (d *dispatcher) filtered(ev *event.Event) {
	d.r.c.filteredEvents.Add(1)
	if ev.IsExecution() {
		d.r.c.filteredStatements.Add(1)
	}
}

// barrier lists, for a session starting now at speed 0, what it must wait
// for: every event already routed to a session that has not completed it.
// The log is in completion order, so those are the events that had ended
// when the new session started in the original. With ended, only the
// sessions that had ended in the log count: synchronized sessions wait for
// the commits they depend on instead, and this keeps a session that began
// after another ended from running beside it, so that a replay holds no
// more connections at once than the original.
//
// The barrier stands on the previous new session's: that one went past
// its own only after every event listed there was completed, so events
// listed there (coveredN) are not listed again. A log of 10,000 short
// sessions one after the other, read far ahead of the replay at speed 0,
// so gives each new session at most two deps instead of every session
// before it (memory and CPU quadratic in the sessions).
func (d *dispatcher) barrier(ended bool) []dep {
	var deps []dep
	d.prune()
	if p := d.lastNew; p != nil && !p.hasPassed() {
		deps = append(deps, dep{s: p, start: true})
	}
	for _, o := range d.running {
		if ended && !o.logEnded {
			continue
		}
		if o.dispatched > o.coveredN && o.completed.Load() < o.dispatched {
			deps = append(deps, dep{s: o, n: o.dispatched})
		}
		o.coveredN = o.dispatched
	}
	return deps
}

// freeClient offers g, whose end in lane the log showed, as the client of
// a later session (takeClient).
func (d *dispatcher) freeClient(lane uint8, g []*session) {
	p := &d.clients
	if p.keys == nil {
		p.keys = map[clientKey]*clientQueue{}
	}
	k := clientOf(lane, g[0])
	q := p.keys[k]
	if q == nil {
		q = &clientQueue{}
		p.keys[k] = q
	}
	f := &freedClient{g: g, q: q, pool: p}
	q.ended = append(q.ended, f)
	s := g[0]
	s.wmu.Lock()
	if s.exited.Load() {
		q.exited = append(q.exited, f)
	} else {
		// Told when it exits (session.exit, clientPool.exit).
		s.freed = f
	}
	s.wmu.Unlock()
}

// takeClient returns, at a speed above 0 and at most 1, the session (its copies) whose client
// a session starting now in the log may be: one that had ended in the
// log, which no other took yet; nil when every session before is still
// open there. The new session does not connect before that one has ended
// on the target, as a client that connects for each request (PHP, a
// serverless function, pgbench -C) opens its next connection only when
// it is done with the last: the replay then holds no more sessions at
// once than the original did. A session is otherwise replayed at its
// time whatever the others do; a target slower than the original, with
// a new session for every transaction, would then have the replay open
// ever more of them at once, running beside each other as the
// application's clients never did, and the statements' times would
// measure that crowd (issue 76: a report 12.4x slower in the forecast
// against 3.71x in the application, on half a CPU). What the new
// session waits for its client is late against the log: lag, as the
// application's schedule lag. One that already exited on the target is
// taken first (the first to exit), else the one that ended first in the
// log, of the same user, database and application (clientKey). Clients
// stay in their lane: a folded log's slices are each the application's
// own (event.Event.Lane), as Multiply's copies each take their own.
// Faster than the log (headroom's steps by speed) sessions keep their
// times: k times the arrivals need about k times the sessions at once,
// which the original's clients are no measure of.
//
// Each offered session is queued once in log order and once more when
// it exits, and leaves each queue once: a burst of n ends then n begins
// costs O(n) (BenchmarkTakeClientBurst), where scanning the offered
// sessions for an exited one at each begin cost O(n²).
func (d *dispatcher) takeClient(k clientKey) []*session {
	p := &d.clients
	p.collect()
	q := p.keys[k]
	if q == nil {
		return nil
	}
	g := q.take(&q.exited)
	if g == nil {
		g = q.take(&q.ended)
	}
	if len(q.ended) == 0 {
		// Every one offered was taken: none is in q.exited either.
		delete(p.keys, k)
	}
	return g
}

// clientPool is the dispatcher's offered sessions (see takeClient). Only
// the dispatcher touches it, but for exits: sessions that exit append
// themselves there, under mu.
type clientPool struct {
	keys  map[clientKey]*clientQueue
	mu    sync.Mutex
	exits []*freedClient
}

// clientQueue is a client key's offered sessions: ended, in the order
// the log ended them, and exited, those that exited on the target, in
// the order the dispatcher learnt it. A session is taken from either
// and left in the other, marked taken.
type clientQueue struct {
	ended, exited []*freedClient
}

// freedClient is a session (its Multiply copies) offered as a client.
type freedClient struct {
	g     []*session
	q     *clientQueue
	pool  *clientPool
	taken bool // the dispatcher's
}

// exit is told by f's session as it exits, with its wmu held.
func (p *clientPool) exit(f *freedClient) {
	p.mu.Lock()
	p.exits = append(p.exits, f)
	p.mu.Unlock()
}

// collect moves the sessions that exited since it last ran to their
// queues' exited.
func (p *clientPool) collect() {
	p.mu.Lock()
	exits := p.exits
	p.exits = nil
	p.mu.Unlock()
	for _, f := range exits {
		if !f.taken {
			f.q.exited = append(f.q.exited, f)
		}
	}
}

// take pops the first session of *from that was not taken yet, and marks
// it taken; nil when there is none.
func (q *clientQueue) take(from *[]*freedClient) []*session {
	l := *from
	defer func() { *from = l }()
	for len(l) > 0 {
		f := l[0]
		l[0] = nil
		l = l[1:]
		if !f.taken {
			f.taken = true
			return f.g
		}
	}
	return nil
}

// clientKey is what a client's sessions share: the log's lane (a folded
// log's slice) and, on the target, the user, database and application,
// so that a session is never taken for the next of another
// application's client.
type clientKey struct {
	lane          uint8
	user, db, app string
}

// clientOf is s's clientKey in lane.
func clientOf(lane uint8, s *session) clientKey {
	return clientKey{lane: lane, user: s.user, db: s.db, app: s.app}
}

// prune drops the sessions that exited from running.
func (d *dispatcher) prune() {
	kept := d.running[:0]
	for _, o := range d.running {
		if !o.exited.Load() {
			kept = append(kept, o)
		}
	}
	clear(d.running[len(kept):])
	d.running = kept
}

// waitBudget waits while the queued events hold more than the budget. The
// sessions that hold them are working and will release it, unless they are
// all blocked (on locks whose holder's COMMIT is not read yet): so when no
// statement completes for stallTimeout, it stops waiting and reads on past
// the budget until one of the sessions that held the budget then completes
// an event. Progress is judged on those sessions only: sessions that had
// nothing queued complete the events read past the budget at once, and
// counting those would end the stall after every event, waiting
// stallTimeout again each time, long before the COMMIT that unblocks the
// others is read. It returns false when told to stop.
func (d *dispatcher) waitBudget() (ok bool) {
	r := d.r
	b := r.budget
	used := b.used.Load()
	if used <= b.window || (used <= b.limit && b.starving.Load() > 0) {
		d.stalled, d.holders = false, nil
		return true
	}
	if used <= b.limit {
		return d.waitWindow()
	}
	if d.clk != nil && !d.clk.started() {
		// The warm-up read the budget full: its sessions wait for the
		// clock, which would wait for the warm-up's end, read past the
		// budget only after a stall. They have what they need to begin.
		d.startClock()
	}
	if d.stalled {
		if d.checked++; d.checked < 64 || !d.holdersMoved() {
			r.c.overBudget.Add(1)
			return true
		}
		d.stalled, d.holders = false, nil
	}
	if t := d.task; t != nil {
		// On the engine, the wait (a timer and a channel) is on a
		// goroutine of its own.
		d.task = nil
		runBlocking(t, func() { ok = d.overBudget() })
		d.task = t
		return ok
	}
	return d.overBudget()
}

// overBudget waits for the queues to drain below the budget, or for a
// stall (see waitBudget).
func (d *dispatcher) overBudget() bool {
	r := d.r
	b := r.budget
	r.c.budgetWaits.Add(1)
	b.waiting.Store(b.limit / 4 * 3)
	defer b.waiting.Store(0)
	defer func(t0 time.Time) { r.c.budgetWaitNS.Add(int64(time.Since(t0))) }(time.Now())
	mark := r.c.completions.Load()
	for b.over() {
		d.timer.Reset(stallTimeout)
		select {
		case <-b.drained:
			d.timer.Stop()
			if b.over() {
				// A session starving (see waitWindow) woke it,
				// or a wake left from before: the budget is
				// still full, and reading on would go past it.
				continue
			}
			// Woken at the low-water mark: read a batch.
			return true
		case <-r.stopCh:
			d.timer.Stop()
			return false
		case <-d.timer.C:
			now := r.c.completions.Load()
			if now == mark {
				d.stall()
				r.c.overBudget.Add(1)
				return true
			}
			mark = now
		}
	}
	return true
}

// waitWindow waits, at speed 0, while the queues hold more than the
// window and no session is starving. It needs no stall watch: with every
// session holding events, each is running or waiting for a lock held by a
// session that is running or in a deadlock the server breaks.
func (d *dispatcher) waitWindow() bool {
	r := d.r
	b := r.budget
	b.waiting.Store(b.window / 4 * 3)
	defer b.waiting.Store(0)
	for b.used.Load() > b.window && b.starving.Load() == 0 {
		if t := d.task; t != nil {
			// wakeDispatcher wakes the task.
			t.park()
			if r.stopped() {
				return false
			}
			continue
		}
		select {
		case <-b.drained:
		case <-r.stopCh:
			return false
		}
	}
	return true
}

// stall notes who holds the budget: the sessions with events queued or in
// flight, and how many they had completed.
func (d *dispatcher) stall() {
	d.stalled, d.checked, d.holders = true, 0, d.holders[:0]
	d.prune()
	for _, s := range d.running {
		if c := s.completed.Load(); c < s.dispatched {
			d.holders = append(d.holders, dep{s: s, n: c})
		}
	}
}

// holdersMoved reports whether a session that held the budget when the
// stall began has completed an event since (or ended).
func (d *dispatcher) holdersMoved() bool {
	d.checked = 0
	for _, h := range d.holders {
		if h.s.completed.Load() > h.n || h.s.exited.Load() {
			return true
		}
	}
	return len(d.holders) == 0
}

// dispatchTurn is how many events the dispatcher reads on the engine
// before it lets the sessions run.
const dispatchTurn = 64

// block runs f where it may wait: on the engine, on a goroutine of its own
// while the dispatcher's task parks (see session.block).
func (d *dispatcher) block(f func()) {
	runBlocking(d.task, f)
}
