package replay

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// block runs f, which may wait for anything, where it cannot hold up the
// other sessions: on the session's goroutine, or, on the engine, on a
// goroutine of its own while the session parks.
func (s *session) block(f func()) { runBlocking(s.task, f) }

// runBlocking runs f on the calling goroutine when t is nil, else on a
// goroutine of its own while task t parks.
func runBlocking(t *task, f func()) {
	if t == nil {
		f()
		return
	}
	var done atomic.Bool
	t.e.blocking.Add(1)
	go func() {
		f()
		done.Store(true)
		t.e.blocking.Add(-1)
		t.e.wake(t)
	}()
	for !done.Load() {
		t.park()
	}
}

// detachConn takes the socket of conn, ec, off Go's netpoller
// (engineConn.detach) once pgconn no longer reads it on a goroutine of its
// own. When one of pgconn's writes takes more than 15 ms (its slow-write
// timer; under load, a connection's startup message), pgconn reads the
// socket on another goroutine meanwhile, and that read can still be
// waiting when Connect returns: the answers Connect waited for came to
// that goroutine before pgconn told it to stop. Detach closes the socket
// the read waits on, and pgconn kept the read's error for the session's
// first statement ("use of closed network connection"), which the replay
// counted as lost to a broken connection and reconnected: a statement of
// the workload not run (1 connection in a few hundred on a 2-core machine
// at load 30). SyncConn waits for such a read, pinging the server for it
// only then (an empty query: no statement for pg_stat_statements, nor for
// a target log's matching, which leaves out strings without one). An
// error leaves the connection unusable. timeout bounds the ping (0: the
// context alone does).
func detachConn(ctx context.Context, conn *pgconn.PgConn, ec *engineConn, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := conn.SyncConn(ctx); err != nil {
		return err
	}
	// Should detach fail (no descriptor left to duplicate), the socket
	// stays on the netpoller, which costs idle threads' wake-ups, not
	// results.
	_ = ec.detach()
	return nil
}

// resynced follows a call of pgconn's own that ended with err on conn,
// whose socket is ec (nil: not under the engine). Those calls (Prepare,
// Deallocate) flush with pgconn's slow-write timer armed, as Connect
// does, so a write that takes more than 15 ms leaves a read of the
// socket waiting on a goroutine of pgconn's when the call returns (see
// detachConn). On a detached socket that read waits in poll(2) while the
// session's next exchange, on the engine's thread, waits for what it
// reads: every session of that engine held for a round trip; and Close
// would close the descriptor under it. SyncConn ends it (a ping only
// then). A failed call is left as it ended: pgconn closed the connection
// if it broke.
func resynced(ctx context.Context, conn *pgconn.PgConn, ec *engineConn, err error) error {
	if err != nil || ec == nil {
		return err
	}
	return conn.SyncConn(ctx)
}

// syncWaitParked is a statement's syncWait on the engine. A wait for the
// commits of w parks the session, which the commit's Done wakes
// (Txn.Notify): no goroutine per wait. One that lasts deadlockCheckAfter,
// or waits for a barrier's events, goes on in syncWait on a goroutine of
// its own (block), from the same start: the deadlock check, the timeout
// and the stop are its. mark is the Board's LostMark, taken before the
// caller looked at the Board (syncPending).
func (s *session) syncWaitParked(mark uint64, w syncdep.Wait, deps []dep, t *time.Timer) (synced, bool) {
	sr := s.r.sync
	began := time.Now()
	long := func() (sy synced, ok bool) {
		s.block(func() { sy, ok = s.syncWaitFrom(began, mark, w, deps, t, false) })
		return sy, ok
	}
	if len(deps) > 0 || sr == nil {
		return long()
	}
	task := s.task
	wake := func() { task.e.wake(task) }
	var check *time.Timer
	defer func() {
		if check != nil {
			check.Stop()
		}
		s.waitingOn.Store(nil)
	}()
	for {
		tx := s.syncBoard().Blocker(w)
		if tx == nil {
			waited := time.Since(began)
			lost := s.lostDuring(w, mark, false)
			sr.record(waited, "", "", false)
			return synced{wait: waited, lostDep: lost}, true
		}
		if time.Since(began) >= deadlockCheckAfter {
			// Looked at before every park, not only once the check's
			// timer woke the session: on a busy engine that wake can
			// come while the session is queued already (for the commit
			// it waited for, which ran meanwhile) and be one with it;
			// a park for the next commit would then have no timer to
			// end it, and a deadlock with a row lock would hold for
			// good, with no check and no timeout (issue 44).
			s.waitingOn.Store(nil)
			return long()
		}
		owner, _ := tx.Owner().(*session)
		s.waitingOn.Store(&awaited{tx: tx, owner: owner})
		if tx.Notify(wake) {
			if check == nil {
				check = time.AfterFunc(deadlockCheckAfter-time.Since(began), wake)
			}
			task.park()
		}
		if s.r.stopped() {
			return synced{wait: time.Since(began)}, false
		}
		if tx.Ran() {
			if lost, why := woken(&awaited{tx: tx}, false); lost || why != "" {
				waited := time.Since(began)
				sr.record(waited, why, "", false)
				return synced{wait: waited, giveUp: why, lostDep: lost}, true
			}
		}
	}
}
