package replay

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// session replays one original session: one goroutine, one connection, one
// timer. Its events run in log order; nothing it does waits for another
// session, except the commits it depends on when synchronized and the
// start barrier at speed 0 otherwise (see the package comment).
type session struct {
	r     *Replayer
	clk   *clock
	shard *shard
	id    string
	user  string // on the target, after the maps
	db    string
	app   string
	// names are the original's strings its detached events share
	// (dispatcher.detach); the dispatcher's only.
	names event.Names
	// start is what else the original client set when it connected;
	// startNoted, that the replay's startupWatch saw its connection.
	start      []event.Setting
	startNoted bool
	// resumed: the session was recorded from the middle; preamble is
	// the SQL that recreates its state from before, run on each of its
	// connections before anything else (preamble.go).
	resumed       bool
	preamble      []string
	preambleNoted bool

	q *queue
	// deps is the start barrier, at speed 0; passed is closed once the
	// session went past it (or exited), when a later session's barrier
	// stands on it.
	deps       []dep
	passed     chan struct{}
	passClosed bool
	// warmed is closed after the first connection attempt at speed > 0,
	// or when the session ends without one.
	warmed    chan struct{}
	warmClose bool
	// wake is the session's channel for the precise waker.
	wake chan struct{}
	// rec is the connection in use, as ServerSide matches it.
	rec *connRecord

	// dispatched is how many events the dispatcher routed here, and
	// logEnded whether its disconnection was among them; only the
	// dispatcher touches them. completed is how many this session
	// finished.
	dispatched int64
	logEnded   bool
	coveredN   int64   // events a start barrier already listed (the dispatcher's)
	ends       endRing // when synchronized
	completed  atomic.Int64
	exited     atomic.Bool

	wmu        sync.Mutex
	waiters    []waiter
	hasWaiters atomic.Bool
	// freed is the dispatcher's offer of the session as a later one's
	// client (dispatcher.takeClient), told when it exits; under wmu.
	freed *freedClient

	// In a pooled replay (pool.go): pool is a worker's; pooled the
	// dispatcher's state of a logical session, runner the worker that
	// runs a unit of it now, early the items done out of order and
	// final how many the log ended it after (0: not yet), under wmu.
	pool   *pool
	pooled *pooledUnit
	runner atomic.Pointer[session]
	early  map[int64]bool
	final  int64

	// Synchronization (sync.go): sx is the dispatcher's; startWait is
	// what the session waits for before it starts, at speed 0; pid is
	// the backend of its connection and waitingOn what it waits for,
	// read by other sessions' deadlock checks; syncPush is the session
	// goroutine's.
	sx        *syncdep.Session
	startWait syncdep.Wait
	// lane is the session's lane (event.Event.Lane) and board its
	// tracker's Board, set with sx: commits are waited for within a
	// lane only.
	lane      uint8
	board     *syncdep.Board
	pid       atomic.Uint32
	waitingOn atomic.Pointer[awaited]
	syncPush  time.Duration

	// Owned by the session goroutine.
	// task is the session's coroutine on the engine, nil when it runs
	// on a goroutine of its own; ec its connection's socket then.
	task        *task
	ec          *engineConn
	conn        *pgconn.PgConn
	prepared    map[string]string  // protocol-level statement name -> query
	sqlPrepared map[string]sqlPrep // SQL-level PREPAREs seen, with --read-only
	params      [][]byte           // parameters of the execution in flight
	w           wire               // protocol messages, reused (wire.go)
	unwatch     func() bool        // stops the hard context's watch of conn
	lost        bool               // the connection broke; reconnect
	lostAt      time.Time          // when it broke, to bound the reconnection
	// logTx: in the log, the session is inside a transaction block
	// after the statements handled so far; skipTx, when not empty: the
	// rest of that block is skipped for this reason (its connection
	// broke in the middle, or a commit it depended on was lost).
	logTx  bool
	skipTx results.SkipReason
	// blockCause is the SQLSTATE of the error that aborted the
	// session's block on the target, blockBaked whether it came from a
	// server-assigned id (see session.blame); "" outside such a block.
	blockCause string
	blockBaked bool
	// blockReach are the reaches of the statements that wrote in the
	// session's open block on the target (Answers mode): tainted all
	// when a statement fails there but not in the original, since the
	// block then rolls back what they wrote (noteBlock).
	blockReach []*syncdep.Reach
	// seqIDs are the digests of the one-value answers of the session's
	// INSERTs that returned what the original's sequence assigned
	// (sequence.go), the latest seqIDsKept.
	seqIDs     []seqID
	connected  bool               // connected at least once
	failReason results.SkipReason // set when connecting failed: skip the rest
	failCode   string             // and the error, as counted in r.fails
	failMsg    string
	// faultSkip: the event being handled was skipped because of a
	// fault, so a commit it carries did not happen on the target.
	faultSkip bool
	// fastPathSkipped: the session skipped a fast-path function call,
	// whose effect (a large object unlinked, written) the target lacks.
	fastPathSkipped bool
	// fetches are the statements whose portal the original left
	// suspended at its row limit, by portal: their answers are compared
	// once the original's last fetch is replayed (fetch.go).
	fetches map[string]*openFetch
	// lastEnd is when the session's previous statement ended on the
	// target, to tell the lag the target caused from the replayer's.
	lastEnd time.Time

	// In flight, read by other goroutines (the I/O watch, the hard
	// stop, the deadlock check): busyUntil is when the statement in
	// flight is overdue (UnixNano; 0 when the session is not waiting
	// for the target); execSeq numbers the executions, and delayedSeq
	// is set to the number of one that a session in a sync wait held
	// up with its locks (see syncRun.markDelayed).
	busyUntil atomic.Int64
	// execAt is when the statement in flight ended in the log (its
	// event's time and duration), 0 when none: the deadlock check
	// across shards reads it (foreignCycle).
	execAt     atomic.Int64
	execSeq    atomic.Int64
	delayedSeq atomic.Int64

	// advisory: an execution of the session took an advisory lock,
	// which heldAdvisory looks for as its connection closes (the
	// session goroutine's).
	advisory bool
}

// dep is what a session waits for: that s completed n events, or, with
// start, that s passed its own start barrier (which stands for every
// dep of that barrier: see dispatcher.barrier).
type dep struct {
	s     *session
	n     int64
	start bool
	// create: the event creates the role or database of the session
	// that waits (see dispatcher.createdBy).
	create bool
}

// wait waits for the dep; false if told to stop first.
func (d dep) wait(stop <-chan struct{}) bool {
	if !d.start {
		return d.s.waitCompleted(d.n, stop)
	}
	select {
	case <-d.s.passed:
		return true
	case <-stop:
		return false
	}
}

type waiter struct {
	n  int64
	ch chan struct{}
}

func (r *Replayer) newSession(ev *event.Event, clk *clock) *session {
	n := r.nsessions
	r.nsessions++
	return &session{
		r:        r,
		clk:      clk,
		shard:    r.shards[n%len(r.shards)],
		id:       ev.Session,
		user:     mapped(r.opts.UserMap, ev.User),
		db:       mapped(r.opts.DatabaseMap, ev.Database),
		app:      ev.Application,
		start:    ev.Startup(),
		resumed:  ev.Resumed(),
		preamble: ev.Preamble(),
		q:        newQueue(r.budget),
		warmed:   make(chan struct{}),
	}
}

// warmDone closes warmed, once.
func (s *session) warmDone() {
	if !s.warmClose {
		s.warmClose = true
		close(s.warmed)
	}
}

// connectAhead opens the connection connectLead before the session's first
// event is due, at speed > 0: before the clock starts for the sessions of
// the warm-up, else by the clock.
func (s *session) connectAhead(it item, t *time.Timer) {
	defer s.warmDone()
	switch it.ev.Kind {
	case event.Connect, event.Statement, event.Execute:
	default:
		return
	}
	if s.r.opts.DryRun || s.conn != nil || s.failReason != "" {
		return
	}
	if s.clk.started() && !waitOn(s.task, t, s.clk.start.Add(it.due-s.r.opts.connectLead), s.r.stopCh) {
		return
	}
	s.block(func() { s.connect() })
}

func (s *session) run() {
	r := s.r
	defer s.exit()
	if len(s.deps) > 0 {
		s.block(func() {
			for _, d := range s.deps {
				if !d.wait(r.stopCh) {
					break
				}
			}
		})
	}
	s.deps = nil
	s.pass()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	if s.pool != nil {
		s.runPool(timer)
		return
	}
	if !s.startWait.None() {
		s.block(func() { s.syncWait(s.startWait, nil, timer, true) })
	}
	for first := true; ; first = false {
		it, ok := s.q.pop(r.stopCh, s.task)
		if !ok {
			break
		}
		if first && s.clk.paced() {
			s.connectAhead(it, timer)
		}
		s.faultSkip = false
		s.handle(it, timer)
		s.done(it)
	}
	// Told to stop: what is still queued will not run.
	s.skipQueued(s.q)
}

func (s *session) done(it item) {
	if p := s.r.opts.Peers; p != nil && it.ev.Pos > 0 && (it.sync.Commit != nil || it.sync.Mark != nil) {
		// Told the other shards after the commit and the mark are
		// marked, below: their commits may wait for the mark too
		// (answers mode).
		defer p.Ran(it.ev.Pos)
	}
	if m := it.sync.Mark; m != nil && !m.Ran() {
		// Skipped, or stopped: what waited for it goes on, knowing
		// nothing of it (it is never lost: see syncdep.Step.Mark).
		m.Done()
	}
	if c := it.sync.Commit; c != nil {
		switch {
		case s.faultSkip && s.r.stopped():
			// The replay is stopping: nothing of it runs any more.
			c.Lose()
		case s.faultSkip:
			// The commit did not happen on the target: what waits for
			// it is released, and knows it was lost.
			s.r.sync.lose(c)
		case !c.Ran():
			// statement released it as soon as it ran.
			c.Done()
		}
	}
	s.r.budget.release(it.size)
	s.r.c.completions.Add(1)
	if o := it.owner; o != nil {
		// A pooled replay's: counted on its logical session.
		o.complete(it.seq)
		return
	}
	c := s.completed.Add(1)
	if s.hasWaiters.Load() {
		s.wmu.Lock()
		s.wakeLocked(c)
		s.wmu.Unlock()
	}
}

// pass closes passed, once: only the session's goroutine calls it.
func (s *session) pass() {
	if s.passed != nil && !s.passClosed {
		s.passClosed = true
		close(s.passed)
	}
}

// hasPassed reports whether the session went past its start barrier.
func (s *session) hasPassed() bool {
	select {
	case <-s.passed:
		return true
	default:
		return false
	}
}

func (s *session) exit() {
	s.endFetches()
	s.pass()
	s.warmDone()
	if s.conn != nil && !s.r.hardDone.Load() {
		// A batch the original ended with its Sync before it left.
		s.syncBatch()
	}
	if s.conn != nil {
		s.block(s.closeConn)
	}
	s.wmu.Lock()
	s.exited.Store(true)
	for _, w := range s.waiters {
		close(w.ch)
	}
	s.waiters = nil
	if f := s.freed; f != nil {
		s.freed = nil
		f.pool.exit(f)
	}
	s.wmu.Unlock()
}

// waitCompleted waits until the session completed n events, or exited,
// or stop is closed (then it returns false).
func (s *session) waitCompleted(n int64, stop <-chan struct{}) bool {
	if s.completed.Load() >= n {
		return true
	}
	ch := make(chan struct{})
	s.wmu.Lock()
	if s.completed.Load() >= n || s.exited.Load() {
		s.wmu.Unlock()
		return true
	}
	s.waiters = append(s.waiters, waiter{n: n, ch: ch})
	s.hasWaiters.Store(true)
	s.wmu.Unlock()
	select {
	case <-ch:
		return true
	case <-stop:
		return false
	}
}

func (s *session) handle(it item, t *time.Timer) {
	switch it.ev.Kind {
	case event.Connect:
		if s.waitDue(it, t) && s.conn == nil && s.failReason == "" {
			s.block(func() { s.connect() })
		}
	case event.Disconnect:
		if s.waitDue(it, t) {
			if s.conn != nil {
				s.syncBatch()
			}
			s.block(s.closeConn)
		}
	case event.Statement, event.Execute:
		s.statement(it, t)
	case event.Error:
		// The original failed to connect (see the dispatcher).
		if s.failReason == SkipConnectFailed && !s.connected {
			s.r.c.connectFailed.Add(-1)
			s.r.c.connectFailedAlike.Add(1)
			s.r.fails.remove(results.ConnectFailure{User: s.user, Database: s.db, SQLState: s.failCode, Message: s.failMsg})
		}
	}
}

// waitDue waits for the item's time; false if told to stop first.
func (s *session) waitDue(it item, t *time.Timer) bool {
	if !s.clk.paced() {
		return !s.r.stopped()
	}
	if !s.clk.started() {
		stopped := false
		s.block(func() {
			select {
			case <-s.clk.ready:
			case <-s.r.stopCh:
				stopped = true
			}
		})
		if stopped {
			return false
		}
	}
	if s.task.onLoop() {
		// On the engine: it wakes the session at the time.
		return s.task.sleepUntil(s.clk.start.Add(it.due), s.r.stopCh)
	}
	if s.wake == nil && s.r.waker != nil {
		s.wake = make(chan struct{}, 1)
	}
	return sessionWait(s.r.waker, t, s.wake, s.clk.start.Add(it.due), s.r.stopCh)
}

// connect opens the session's connection, or records why it cannot. A
// session whose connection broke tries again with backoff, its statements
// waiting (they run late, which the lag shows), until the target has been
// away for ConnectTimeout since the break: then the replay stops, with
// what ran. A first connection that fails as a server does during a short
// outage (starting up or shutting down, 57P03; the connection refused or
// broken) is retried so too, within ConnectTimeout of the first attempt,
// and so is one refused for a role or database that another process's
// sessions create (createdElsewhere); one refused for good (a password, a
// missing role or database) is not.
func (s *session) connect() bool {
	r := s.r
	if r.opts.DryRun {
		s.connected = true
		return true
	}
	first := !s.lost
	since := s.lostAt
	if first {
		since = time.Now()
	}
	backoff := 50 * time.Millisecond
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		code, msg, ok := s.dial(since)
		if ok {
			return true
		}
		left := r.opts.ConnectTimeout - time.Since(since)
		if first && r.stopped() {
			// Stopped while connecting: not the target's refusal.
			s.failReason, s.failMsg = r.stopReason(), msg
			return false
		}
		if first && (left <= 0 || !transientConnectError(code) && !s.createdElsewhere(code, msg)) {
			s.failReason = SkipConnectFailed
			s.failCode, s.failMsg = code, msg
			r.c.connectFailed.Add(1)
			r.fails.add(results.ConnectFailure{User: s.user, Database: s.db, SQLState: code, Message: msg})
			return false
		}
		if !first && (left <= 0 || r.stopped()) {
			if left <= 0 {
				r.targetGone(s.lostAt, msg)
			}
			s.failReason = r.stopReason()
			s.failMsg = msg
			return false
		}
		if first {
			r.c.connectRetries.Add(1)
		}
		if t == nil {
			t = time.NewTimer(min(backoff, left))
		} else {
			t.Reset(min(backoff, left))
		}
		select {
		case <-t.C:
		case <-r.stopCh:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// createdElsewhere reports whether a first connection refused with code
// and msg for a missing role or database may succeed a moment later: the
// log creates that role or database in a session another process replays
// (another shard's, Options.CreatedElsewhere), which this one does not
// wait for. Retried as a short outage is, within ConnectTimeout: without a
// coordination database, a login scheduled just after the creation in
// the log otherwise fails when the target creates it slower (a shard of
// the mixed workload, issue 77).
func (s *session) createdElsewhere(code, msg string) bool {
	ce := s.r.opts.CreatedElsewhere
	if ce == nil {
		return false
	}
	switch ProblemOf(code, msg) {
	case ProblemNoDatabase:
		return ce("db:" + s.db)
	case ProblemNoRole:
		return ce("role:" + s.user)
	}
	return false
}

// transientConnectError reports whether a connection refused with code
// (a SQLSTATE, "" for a failure without one: refused, reset, timed out)
// may succeed a moment later: the server starting up, shutting down or
// restarting. Authentication, a missing role or database, too many
// connections are not retried.
func transientConnectError(code string) bool {
	switch code {
	case "", "57P03", "08006", "08001", "08004", "57P01", "57P02":
		return true
	}
	return false
}

// dial makes one attempt at the session's connection, within what is
// left of ConnectTimeout since since; it returns why it failed.
func (s *session) dial(since time.Time) (code, msg string, ok bool) {
	r := s.r
	cfg, err := r.config(s.user, s.db)
	if err == nil {
		cfg = cfg.Copy()
		if s.app != "" {
			cfg.RuntimeParams["application_name"] = s.app
		}
		// What the original client set when it connected (a capture
		// knows), under the replay's own settings (timeouts, read-only),
		// which the server applies after options' switches.
		for _, p := range s.start {
			if _, own := cfg.RuntimeParams[p.Name]; !own {
				cfg.RuntimeParams[p.Name] = p.Value
			}
		}
		ctx := r.hard
		if cfg.ConnectTimeout == 0 {
			// What is left of the time the target may be away.
			timeout := max(r.opts.ConnectTimeout-time.Since(since), time.Millisecond)
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		if t := s.task; t != nil {
			dial := cfg.DialFunc
			cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return t.e.wrapConn(c, t), nil
			}
		}
		begin := time.Now()
		s.conn, err = r.dial(ctx, cfg)
		if err == nil {
			if s.ec, _ = s.conn.Conn().(*engineConn); s.ec != nil {
				// Off Go's netpoller before the first statement.
				if err = detachConn(ctx, s.conn, s.ec, cfg.ConnectTimeout); err != nil {
					cctx, cancel := context.WithTimeout(context.Background(), time.Second)
					s.conn.Close(cctx)
					cancel()
					s.ec = nil
				}
			}
		}
		if err == nil {
			// Its setup on the target: from the attempt's start (the
			// gate of a full listen queue included, the target's
			// doing) to a session ready for its first statement,
			// authentication and startup settings included; the
			// waits for its schedule and its client came before, the
			// preamble of a session recorded from the middle after.
			ready := time.Now()
			s.shard.recordConnect(ready.Sub(begin))
			if !s.startNoted {
				s.startNoted = true
				r.startup.connected(s, s.conn)
			}
			s.rec = newConnRecord(s.conn.PID(), begin, time.Now())
			r.conns.add(s.rec)
			s.unwatch = s.watchHard(s.conn)
			s.syncConnected()
		}
	}
	if err != nil {
		s.conn = nil
		r.c.dialFailed.Add(1)
		code, msg = connectError(err)
		return code, msg, false
	}
	if s.lost {
		r.c.reconnects.Add(1)
	}
	s.lost, s.lostAt = false, time.Time{}
	s.failReason = ""
	s.connected = true
	// A statement due before the connection was ready is late by the
	// target's doing (its backend's start-up, or its client's previous
	// session still running there: takeClient), not the replayer's.
	s.lastEnd = time.Now()
	s.prepared = nil
	clear(s.sqlPrepared) // a new connection has none
	r.c.open.Add(1)
	r.live.add(s)
	r.opts.Sink.SessionOpened()
	s.runPreamble()
	return "", "", true
}

func (s *session) closeConn() {
	if s.conn == nil {
		return
	}
	if s.r.stopped() && !s.r.silent.Load() && !s.conn.IsClosed() && s.conn.TxStatus() != 'I' {
		// Told to stop inside a transaction: roll it back now, so that
		// its locks and work end on the server before the result is
		// written, not when the server notices the connection gone.
		s.rollback()
	}
	// Its advisory locks die with it: named first (leftover.go).
	s.heldAdvisory()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	s.conn.Close(ctx)
	cancel()
	s.dropConn()
}

// rollback ends the open transaction of the session's connection,
// waiting at most stopTimeout for the server.
func (s *session) rollback() {
	nc := s.conn.Conn()
	nc.SetDeadline(time.Now().Add(stopTimeout))
	if err := s.execSimple("ROLLBACK"); err == nil {
		if s.r.stopped() {
			s.r.c.rolledBack.Add(1)
		}
		nc.SetDeadline(time.Time{})
	}
}

// dropConn forgets a connection that is closed.
func (s *session) dropConn() {
	s.syncDisconnected()
	if s.unwatch != nil {
		s.unwatch()
		s.unwatch = nil
	}
	s.r.live.remove(s)
	s.conn = nil
	s.ec = nil
	s.prepared = nil
	s.r.c.open.Add(-1)
	s.r.opts.Sink.SessionClosed()
}

// config returns the connection settings of a user and database: the target
// DSN with them put in, parsed once per pair. The DSN is parsed again
// rather than its Config edited, because pgconn looks the password up in
// the passfile for the user when it parses.
func (r *Replayer) config(user, db string) (*pgconn.Config, error) {
	key := [2]string{user, db}
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	if c, ok := r.cfgs[key]; ok {
		return c.cfg, c.err
	}
	if r.cfgs == nil {
		r.cfgs = map[[2]string]cfgResult{}
	}
	cfg, err := connstr.Parse(withUserDB(r.opts.Target, user, db))
	if err == nil {
		connstr.KeepAlive(cfg)
		if r.opts.LockTimeout > 0 {
			cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(r.opts.LockTimeout.Milliseconds(), 10)
		}
		if r.opts.StatementTimeout > 0 {
			cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(r.opts.StatementTimeout.Milliseconds(), 10)
		}
		if r.opts.ReadOnly {
			cfg.RuntimeParams["default_transaction_read_only"] = "on"
		}
	}
	r.cfgs[key] = cfgResult{cfg, err}
	return cfg, err
}

type cfgResult struct {
	cfg *pgconn.Config
	err error
}

// withUserDB puts user and database into a connection string or URI; an
// empty one keeps the DSN's (or the environment's).
func withUserDB(dsn, user, db string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn // ParseConfig will say what is wrong
		}
		// Query parameters win over the URI's user and path in pgconn.
		q := u.Query()
		if user != "" {
			q.Set("user", user)
		}
		if db != "" {
			q.Set("dbname", db)
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	// In a keyword/value string the last occurrence of a keyword wins.
	if user != "" {
		dsn += " user=" + quoteConninfo(user)
	}
	if db != "" {
		dsn += " dbname=" + quoteConninfo(db)
	}
	return dsn
}

func quoteConninfo(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
