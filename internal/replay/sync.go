package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Synchronized replay: a statement waits, before it is issued, until the
// commits of other sessions that it depended on in the log (package
// syncdep decides which) have run on the target. The dispatcher asks the
// Tracker for each event's Step as it reads the event; the session waits
// for the Step's Wait after its due time and marks the Step's commit done
// once the event has run. A wait never hangs: it gives up once what it
// waits for has made no progress for SyncTimeout (see awaited.progress),
// or after SyncWaitLimit timeouts in all however it progressed, or at
// once when it is what keeps the awaited session blocked on a row lock
// that the waiting session's own open transaction holds (a deadlock the
// server cannot see, half of it being in the replayer). A wait is not
// given up while the awaited side moves on, however slowly: at speed 0 on
// a busy machine a session, or another shard, that is merely behind would
// otherwise be given up on, and the replay marked degraded, for the
// machine's load (issue 44).

// DefaultSyncTimeout is how long a statement waits for the commits it
// depends on while the session or shard that is to bring them makes no
// progress, before it runs anyway.
const DefaultSyncTimeout = 10 * time.Second

// SyncWaitLimit bounds a wait whose awaited side keeps making progress
// without ever bringing the commit: it gives up after that many
// SyncTimeouts in all (5 minutes at the default), counted under
// SyncCauseLimit.
const SyncWaitLimit = 30

// Give-up reasons of a sync wait, in Sample.SyncGiveUp and the metrics.
const (
	SyncTimeout  = "timeout"
	SyncDeadlock = "deadlock"
)

// Causes of a sync wait given up at its timeout (results.Sync's
// TimeoutsByCause): what the session that was to bring the awaited commit
// was doing then.
const (
	// The deadlock check could not look (its connection lost, being
	// made again): the wait may have been a deadlock with a row lock.
	SyncCauseUnchecked = "deadlock check unavailable"
	// The awaited session had no connection: it was reconnecting after
	// a fault, or could not connect.
	SyncCauseReconnecting = "awaited session reconnecting"
	// The awaited session was itself in a sync wait.
	SyncCauseChained = "awaited session in a sync wait"
	// The awaited session's statement was waiting for a lock on the
	// target (held by a session the replay does not follow, or a cycle
	// through one).
	SyncCauseLocked = "awaited session blocked by a lock"
	// The awaited session's statement was running on the target, not
	// blocked: the target was slower than the original.
	SyncCauseRunning = "awaited session still running"
	// The awaited session had not reached the commit: it was behind its
	// own schedule (waiting for its due time, its previous statements).
	SyncCauseBehind = "awaited session behind"
	// What the wait awaited kept making progress, but had not brought
	// the commit after SyncWaitLimit timeouts in all.
	SyncCauseLimit = "awaited side slow past the wait limit"
)

// MaxSyncTimeoutShare is the share of the statements run whose sync
// wait may give up at the timeout before the replay is marked degraded:
// such statements run up to the timeout late and before what they
// depended on, and the sessions that waited for them later still.
const MaxSyncTimeoutShare = 0.001

// The deadlock check: first after a wait has lasted deadlockCheckAfter,
// then every deadlockCheckEvery.
const (
	deadlockCheckAfter = 20 * time.Millisecond
	deadlockCheckEvery = 50 * time.Millisecond
)

// syncRun is a synchronized replay's state.
type syncRun struct {
	timeout time.Duration
	tr      *syncdep.Tracker // the dispatcher's
	// byRow and keyNotLogged count the dispatcher's steps by their
	// RowOrder (the dispatcher's).
	byRow, keyNotLogged int64
	steps               int64 // execution events read (the dispatcher's)
	board               *syncdep.Board
	// lanes are the trackers of the lanes after the first
	// (event.Event.Lane: a folded log's slices), made at their first
	// session, each with its own Board: commits are ordered within a
	// lane, never across lanes. catalogs keeps the catalogs read, by
	// database, for the lanes that come to a database after another
	// (nil: it could not be read). Both the dispatcher's.
	lanes    map[uint8]*syncdep.Tracker
	catalogs map[string]*syncdep.Catalog
	pids     sync.Map // backend pid -> *session, for the deadlock check
	mon      lockMonitor
	// sharded: the log has sessions that other processes replay (a
	// shard's), whose sync waits the deadlock check cannot see.
	sharded bool

	notesMu sync.Mutex
	notes   []string
	catalog time.Duration // the dispatcher's, read after Run

	mu      sync.Mutex
	waits   *results.Recorder // µs
	causes  map[string]int64  // timeouts by cause
	lostTxs []results.LostCommit

	waited, timeouts, deadlocks, starts, lostN, shardLost atomic.Int64
	// unpaced: speed 0, where no session pauses by its schedule (see
	// foreignStill).
	unpaced bool
	// peers: other shards' commits and statements are waited for
	// (Options.Peers).
	peers bool
}

// newSyncRun returns the state of a synchronized replay, or nil and why
// there is none.
func newSyncRun(o Options) (*syncRun, string) {
	switch {
	case o.Sync == syncdep.Off:
		return nil, ""
	case o.DryRun:
		return nil, "a dry run sends nothing to wait for"
	case o.Multiply > 1:
		return nil, "multiplied sessions are copies that run freely, so they are not synchronized"
	}
	tr := newTracker(o.Sync)
	return &syncRun{timeout: o.SyncTimeout, tr: tr, board: tr.Board(), waits: results.NewRecorder(), causes: map[string]int64{},
		sharded: o.Peers != nil || o.OthersUnseen, peers: o.Peers != nil, unpaced: !o.Schedule().Paced()}, ""
}

func (sr *syncRun) note(format string, args ...any) {
	sr.notesMu.Lock()
	sr.notes = append(sr.notes, fmt.Sprintf(format, args...))
	sr.notesMu.Unlock()
}

// attach makes the tracker follow a new session, reading its database's
// catalog on the target first if it is the first session there. At speed
// 0 it also sets what the session waits for before it connects. It runs
// on the dispatcher.
//
// A database the log creates (created) does not exist yet when its first
// session attaches: it will be a copy of a template, whose catalog (that
// of template1, which holds the built-in functions and what the target
// added to every new database) is read instead, so that its statements
// wait by object as any other's rather than for every earlier commit, as
// in commit mode (PostgreSQL's regression suite creates its database).
func (r *Replayer) attachSync(s *session, ev *event.Event, created bool) {
	sr := r.sync
	tr := sr.tracker(ev.Lane)
	if !tr.HasDatabase(s.db) {
		cat, read := sr.catalogs[s.db]
		if !read {
			began := time.Now()
			var err error
			cat, err = r.syncCatalog(s.user, s.db, ev.Database)
			if err != nil && created {
				if tcat, terr := r.loadCatalog(s.user, "template1"); terr == nil {
					sr.note("database %q is created by the log: its statements waited by object, with the catalog of template1", s.db)
					cat, err = tcat, nil
				}
			}
			sr.catalog += time.Since(began)
			if err != nil {
				sr.note("database %q: its catalog could not be read at the start (%v), so its statements waited as in commit mode", s.db, err)
			}
			if sr.catalogs == nil {
				sr.catalogs = map[string]*syncdep.Catalog{}
			}
			sr.catalogs[s.db] = cat
		}
		tr.SetCatalog(s.db, cat)
	}
	s.sx = tr.Session(s.db, s)
	s.lane, s.board = ev.Lane, tr.Board()
	if !r.sched.Paced() {
		s.startWait = s.sx.Start(ev.Time)
	}
}

// newTracker is a Tracker for mode whose local sessions are this
// replay's: another shard's, which the peers follow in it, get no marks
// in answers mode (syncdep.Tracker.SetLocal).
func newTracker(mode syncdep.Mode) *syncdep.Tracker {
	tr := syncdep.NewTracker(mode)
	tr.SetLocal(func(owner any) bool { _, ok := owner.(*session); return ok })
	return tr
}

// tracker is the Tracker of a lane (event.Event.Lane): the replay's for
// the first, which every log's events are in; one of its own for each
// other, made at its first session. It runs on the dispatcher.
func (sr *syncRun) tracker(lane uint8) *syncdep.Tracker {
	if lane == 0 {
		return sr.tr
	}
	tr := sr.lanes[lane]
	if tr == nil {
		if sr.lanes == nil {
			sr.lanes = map[uint8]*syncdep.Tracker{}
		}
		tr = newTracker(sr.tr.Mode())
		sr.lanes[lane] = tr
	}
	return tr
}

// advisoryUnread counts the advisory-lock calls whose key the trackers
// of every lane could not read (see syncdep.Tracker.AdvisoryUnread).
func (sr *syncRun) advisoryUnread() int64 {
	n := sr.tr.AdvisoryUnread()
	for _, tr := range sr.lanes {
		n += tr.AdvisoryUnread()
	}
	return n
}

// syncBoard is the Board of the session's lane.
func (s *session) syncBoard() *syncdep.Board {
	if s.board != nil {
		return s.board
	}
	return s.r.sync.board
}

// syncStep returns the synchronization of one execution event, and its
// statements, which the session then need not look up again.
func (r *Replayer) syncStep(s *session, ev *event.Event) (syncdep.Step, []fingerprint.Item) {
	items := r.cache.Get(ev.Query)
	st := s.sx.Event(syncExec(ev, items))
	r.sync.steps++
	switch st.Rows {
	case syncdep.RowsByKey:
		r.sync.byRow++
	case syncdep.RowsKeyNotLogged:
		r.sync.keyNotLogged++
	}
	return st, items
}

// syncExec is what the Tracker needs of an execution event whose
// statements are items.
func syncExec(ev *event.Event, items []fingerprint.Item) syncdep.Exec {
	end := ev.Time
	if ev.Duration >= 0 {
		end += ev.Duration
	}
	// A capture's binary parameters read as their text: a key sent as
	// a binary int8 is the row the same key sent as text is.
	return syncdep.Exec{Start: ev.Time, End: end, Items: items, Text: ev.Query, Failed: ev.Failed,
		Params: ev.TextParams(), ParamState: ev.ParamState, Answer: answerBool(ev.Answer())}
}

// answerBool reads an answer of one row of one boolean (a try of an
// advisory lock), in text or binary format, from its digest.
func answerBool(a *event.Answer) syncdep.AnswerBool {
	if a == nil || len(a.Digests) != 1 || a.Digests[0].Rows != 1 {
		return syncdep.AnswerUnknown
	}
	for _, c := range [...]struct {
		v      byte
		answer syncdep.AnswerBool
	}{{'t', syncdep.AnswerTrue}, {1, syncdep.AnswerTrue}, {'f', syncdep.AnswerFalse}, {0, syncdep.AnswerFalse}} {
		var d rowdigest.Digest
		// A DataRow's body: one column, of one byte.
		d.AddVersion(a.DigestVersion, []byte{0, 1, 0, 0, 0, 1, c.v})
		if d.Equal(a.Digests[0], false) {
			return c.answer
		}
	}
	return syncdep.AnswerUnknown
}

// syncCatalog is the catalog the synchronization reads for the logged
// database logged, db on the target, as user: Options.CatalogFrom's when
// set and readable, else the target's.
func (r *Replayer) syncCatalog(user, db, logged string) (*syncdep.Catalog, error) {
	if r.opts.CatalogFrom == "" {
		return r.loadCatalog(user, db)
	}
	from := mapped(r.opts.CatalogDatabaseMap, logged)
	ctx, cancel := context.WithTimeout(r.hard, r.opts.ConnectTimeout+syncdep.CatalogTimeout)
	defer cancel()
	cfg, err := connstr.Parse(withUserDB(r.opts.CatalogFrom, user, from))
	if err == nil {
		var conn *pgconn.PgConn
		if conn, err = r.dial(ctx, ownConfig(cfg, true)); err == nil {
			defer conn.Close(context.Background())
			var cat *syncdep.Catalog
			if cat, err = syncdep.LoadCatalog(ctx, conn); err == nil {
				return cat, nil
			}
		}
	}
	r.sync.note("database %q: the catalog of the server it was to be read from could not be read (%v), so the target's was", db, err)
	return r.loadCatalog(user, db)
}

// loadCatalog reads a database's catalog on the target, as user.
func (r *Replayer) loadCatalog(user, db string) (*syncdep.Catalog, error) {
	ctx, cancel := context.WithTimeout(r.hard, r.opts.ConnectTimeout+syncdep.CatalogTimeout)
	defer cancel()
	conn, err := r.quietConn(ctx, user, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	return syncdep.LoadCatalog(ctx, conn)
}

// The application_name of the replayer's own connections: pre-flight
// logins, and catalog reads and sync probes.
const (
	PreflightApplication = event.OwnApplicationPrefix + "preflight"
	OwnApplication       = event.OwnApplicationPrefix + "replay"
)

// quietConn opens a connection of the replayer's own (not a replayed
// session's) that pg_stat_statements does not count, where the user may
// say so (superusers): the target's statistics are the workload's. A
// session's user that may not (an application's role) gives way to the
// target's own login (its DSN's user), most often the one that may; the
// session's user, counted, is the last resort. Which session reads a
// database's catalog first (another shard's, in a sharded replay) thus
// no longer decides whether the read is in the target's statistics.
func (r *Replayer) quietConn(ctx context.Context, user, db string) (*pgconn.PgConn, error) {
	cfg, err := r.config(user, db)
	if err != nil {
		return nil, err
	}
	// Named as the tool's own, so that an analysis of the target's log
	// leaves it out too (event.OwnApplicationPrefix).
	named := ownConfig(cfg, false)
	conn, err := r.dial(ctx, ownConfig(cfg, true))
	if !insufficientPrivilege(err) {
		return conn, err
	}
	if login, lerr := r.config("", db); lerr == nil && login.User != cfg.User {
		if conn, err := r.dial(ctx, ownConfig(login, true)); err == nil {
			return conn, nil
		}
	}
	return r.dial(ctx, named)
}

// ownConfig is cfg named as the replayer's own connection, untracked by
// pg_stat_statements when quiet.
func ownConfig(cfg *pgconn.Config, quiet bool) *pgconn.Config {
	c := cfg.Copy()
	c.RuntimeParams["application_name"] = OwnApplication
	if quiet {
		c.RuntimeParams["pg_stat_statements.track"] = "none"
	}
	return c
}

// insufficientPrivilege reports whether err is the server's refusal of a
// setting the user may not make.
func insufficientPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// synced is what a statement's sync wait did: how long it waited, why
// it gave up ("" when its dependencies committed), whether a commit
// it waited for was lost on the target (lostDep), and whether the
// statement raced with another session's transaction in the original
// (syncdep.Step.Race, which a transaction read after it may still set).
type synced struct {
	wait    time.Duration
	giveUp  string
	lostDep bool
	race    *syncdep.Race
	tables  []string       // syncdep.Step.Tables
	unknown bool           // syncdep.Step.Unknown
	reach   *syncdep.Reach // syncdep.Step.Reach
}

// lose marks a commit as lost on the target (its event was skipped for
// a fault) and keeps its place in the log's commit order.
func (sr *syncRun) lose(tx *syncdep.Txn) {
	tx.Lose()
	if tx.Position() == 0 {
		// A write by key, not a commit: its transaction's commit is
		// lost too, and counted then.
		return
	}
	sr.lostN.Add(1)
	sr.mu.Lock()
	if len(sr.lostTxs) < results.MaxLostCommits {
		sr.lostTxs = append(sr.lostTxs, results.LostCommit{Position: tx.Position(), At: results.Time(tx.At())})
	}
	sr.mu.Unlock()
}

// syncPending reports whether syncWait would wait: for an event of a
// barrier, or for a commit of w.
func (s *session) syncPending(w syncdep.Wait, deps []dep) bool {
	for _, d := range deps {
		if d.s.completed.Load() < d.n && !d.s.exited.Load() {
			return true
		}
	}
	return s.r.sync != nil && !w.None() && s.syncBoard().Blocker(w) != nil
}

// syncWait waits until the commits w depends on have run on the target,
// and the events deps (a barrier, see syncdep.Step), until the deadline
// passes or a deadlock is found. It returns false when told to stop
// meanwhile. t is the session's timer.
func (s *session) syncWait(w syncdep.Wait, deps []dep, t *time.Timer, start bool) (synced, bool) {
	return s.syncWaitFrom(time.Time{}, s.syncBoard().LostMark(), w, deps, t, start)
}

// syncWaitFrom is syncWait for a wait that began at began, when not zero
// (the engine's, syncWaitParked, hands its longer waits over here), with
// the Board's LostMark taken then.
func (s *session) syncWaitFrom(began time.Time, mark uint64, w syncdep.Wait, deps []dep, t *time.Timer, start bool) (synced, bool) {
	sr := s.r.sync
	// next returns what the session still waits for.
	next := func() (<-chan struct{}, *awaited) {
		for len(deps) > 0 {
			d := deps[0]
			if d.s.completed.Load() < d.n && !d.s.exited.Load() {
				return d.s.completedCh(d.n), &awaited{dep: d, owner: d.s}
			}
			deps = deps[1:]
		}
		if tx := s.syncBoard().Blocker(w); tx != nil {
			owner, _ := tx.Owner().(*session)
			return tx.Wait(), &awaited{tx: tx, owner: owner}
		}
		return nil, nil
	}
	ch, aw := next()
	if ch == nil {
		lost := s.lostDuring(w, mark, start) // since the caller's look
		if began.IsZero() {
			return synced{lostDep: lost}, true
		}
		waited := time.Since(began)
		sr.record(waited, "", "", start)
		return synced{wait: waited, lostDep: lost}, true
	}
	if began.IsZero() {
		began = time.Now()
	}
	clock := newWaitClock(began, sr.timeout, aw)
	check := began.Add(deadlockCheckAfter)
	defer s.waitingOn.Store(nil)
	reason := ""
	lostDep := false
	// unchecked: a deadlock check was due and could not look.
	unchecked, checked := false, false
wait:
	for ch != nil {
		s.waitingOn.Store(aw)
		at := check
		if d := clock.deadline(); d.Before(at) {
			at = d
		}
		t.Reset(time.Until(at))
		select {
		case <-ch:
			t.Stop()
			if lostDep, reason = woken(aw, start); lostDep || reason != "" {
				break wait
			}
			if ch, aw = next(); ch != nil {
				clock.arrived(time.Now(), aw)
			}
		case <-s.r.stopCh:
			t.Stop()
			return synced{wait: time.Since(began)}, false
		case now := <-t.C:
			if !aw.pending() {
				// Done as the timer fired: select chose the timer.
				// Lost or given up, it is told as on its channel.
				if lostDep, reason = woken(aw, start); lostDep || reason != "" {
					break wait
				}
				if ch, aw = next(); ch != nil {
					clock.arrived(now, aw)
				}
				continue
			}
			clock.look(now, aw)
			if !now.Before(clock.deadline()) {
				reason = SyncTimeout
				if why := givenUp(aw); why != "" {
					reason = why
				}
				break wait
			}
			check = now.Add(deadlockCheckEvery)
			looked, found, ok := s.deadlockCheck(aw, now.Sub(clock.moved))
			checked, unchecked = checked || looked, unchecked || !ok
			if found {
				reason = SyncDeadlock
				break wait
			}
		}
	}
	waited := time.Since(began)
	if !lostDep && reason == "" {
		lostDep = s.lostDuring(w, mark, start)
	}
	cause := ""
	switch {
	case reason == SyncTimeout && clock.progressing(time.Now()):
		// Given up at the limit while the awaited side progressed.
		cause = SyncCauseLimit
	case reason == SyncTimeout:
		cause = sr.timeoutCause(s, aw, unchecked)
	}
	if checked && s.inTx() {
		// The session held its open transaction's locks while it
		// waited: statements blocked on them waited for the replayer.
		sr.markDelayed(s)
	}
	sr.record(waited, reason, cause, start)
	return synced{wait: waited, giveUp: reason, lostDep: lostDep}, true
}

// inTx reports whether the session's connection is in a transaction.
func (s *session) inTx() bool {
	return s.conn != nil && !s.conn.IsClosed() && s.conn.TxStatus() != 'I'
}

// deadlockCheck looks, for a session whose sync wait for aw is due a
// check, whether the wait keeps the awaited session blocked on a lock of
// the waiting session's open transaction (found). looked says a check was
// made, ok false that it could not look. still is how long the awaited
// side has made no progress.
func (s *session) deadlockCheck(aw *awaited, still time.Duration) (looked, found, ok bool) {
	sr := s.r.sync
	// Only a session in a transaction holds row locks that the awaited
	// one could be blocked on.
	switch {
	case aw.owner == nil && aw.tx != nil && s.r.opts.Peers != nil && s.inTx():
		// Another shard's commit: its session is not ours to follow, so
		// any other shard's backend blocked by this one's locks is
		// taken for it (see foreignCycle).
		found, ok = sr.foreignCycle(s, aw.tx.At())
		return true, found, ok
	case aw.owner != nil && s.inTx():
		found, ok = sr.cycle(s, aw, still)
		return true, found, ok
	}
	return false, false, true
}

// waitClock is when a sync wait gives up: SyncTimeout after the awaited
// side last made progress (moved: a commit the wait awaited arrived, or
// the stamp of what it awaits changed when the wait looked), or at its
// limit (SyncWaitLimit timeouts after it began), whichever comes first.
type waitClock struct {
	timeout      time.Duration
	limit, moved time.Time
	stamp        uint64
}

func newWaitClock(began time.Time, timeout time.Duration, aw *awaited) waitClock {
	return waitClock{timeout: timeout, limit: began.Add(waitLimit(timeout)), moved: began, stamp: aw.progress()}
}

func (c *waitClock) deadline() time.Time {
	if d := c.moved.Add(c.timeout); d.Before(c.limit) {
		return d
	}
	return c.limit
}

// arrived notes that what the wait awaited arrived at now (progress), and
// that it waits for aw next.
func (c *waitClock) arrived(now time.Time, aw *awaited) {
	c.moved, c.stamp = now, aw.progress()
}

// look notes progress at now if aw's stamp changed since the last look.
func (c *waitClock) look(now time.Time, aw *awaited) {
	if p := aw.progress(); p != c.stamp {
		c.moved, c.stamp = now, p
	}
}

// progressing reports whether the awaited side made progress within the
// timeout before now: a wait that gave up then did so at its limit.
func (c *waitClock) progressing(now time.Time) bool {
	return now.Sub(c.moved) < c.timeout
}

// lostDuring reports whether a commit that w waited for was lost while it
// waited, since mark (syncdep.Board.LostSince): the wait looks at what it
// woke for (woken), but a commit lost while it waited for another, or
// seen done without being asked how, leaves the Board as one that ran.
// Not said of a start barrier's wait, as in woken.
func (s *session) lostDuring(w syncdep.Wait, mark uint64, start bool) bool {
	return !start && s.syncBoard().LostSince(w, mark) != nil
}

// woken says what became of what a wait for aw woke for: the commit
// lost, so that what depended on it will never be on the target (not said
// of a start barrier's wait), or why its owner gave it up (another shard's
// commit, released because its shard was lost: it did not run); neither
// when the wait goes on to what is next.
func woken(aw *awaited, start bool) (lost bool, why string) {
	if aw.tx != nil && aw.tx.Lost() && !start {
		return true, ""
	}
	return false, givenUp(aw)
}

// givenUp is why the owner of the awaited commit gave it up (another
// shard, lost), "" when it did not.
func givenUp(aw *awaited) string {
	if aw.tx == nil {
		return ""
	}
	if g, ok := aw.tx.Owner().(SyncGiver); ok {
		return string(g.SyncGiveUp())
	}
	return ""
}

// waitLimit is how long a wait may last in all (SyncWaitLimit timeouts),
// the longest time.Duration when that overflows.
func waitLimit(timeout time.Duration) time.Duration {
	if timeout > math.MaxInt64/SyncWaitLimit {
		return math.MaxInt64
	}
	return SyncWaitLimit * timeout
}

// maxProgressChain bounds how far awaited.progress follows a chain of
// sync waits.
const maxProgressChain = 64

// progress is a stamp of the progress of what a wait for a depends on: it
// changes when the session that is to bring it completes an event, or,
// while that session is itself in a sync wait, when the one it waits for
// does (and so on along the chain, which a slow session at its end keeps
// moving), or when another shard whose commit is awaited along the chain
// publishes a new commit position (SyncProgressor). A session running a
// statement, blocked on a lock, or reconnecting, and a frozen or silent
// shard, leave it as it is: their waiters give up after SyncTimeout. The
// chain changes shape only when a wait in it ends, itself progress or a
// give-up that ends in a completed event.
func (a *awaited) progress() uint64 {
	var sum uint64
	for range maxProgressChain {
		if a == nil {
			break
		}
		if a.tx != nil {
			if p, ok := a.tx.Owner().(SyncProgressor); ok {
				sum += p.SyncProgress()
			}
		}
		o := a.owner
		if o == nil {
			break
		}
		sum += uint64(o.completed.Load())
		a = o.live().waitingOn.Load()
	}
	return sum
}

// awaited is what a session's sync wait waits for: a commit of the log,
// or (a barrier) another session's progress; owner is the session that
// will bring it.
type awaited struct {
	tx    *syncdep.Txn
	dep   dep
	owner *session
}

// pending reports whether it is still awaited. A waiting session's
// waitingOn may outlive what it waited for by as long as its goroutine
// takes to run again (on a loaded machine, milliseconds): the deadlock
// check follows an edge only while this holds, or it would find cycles
// through waits that are over.
func (a *awaited) pending() bool {
	if a.tx != nil {
		return !a.tx.Ran()
	}
	return a.dep.s.completed.Load() < a.dep.n && !a.dep.s.exited.Load()
}

// barrierOf lists what a statement of s whose effects are unknown (DDL)
// waits for when synchronized: every event of another session that ended
// in the log before the statement started (before, a log time), committed
// or not.
func (d *dispatcher) barrierOf(s *session, before int64) []dep {
	var deps []dep
	d.prune()
	for _, o := range d.running {
		if o == s || o.lane != s.lane {
			// Sessions of other lanes are other slices' traffic.
			continue
		}
		if n := o.ends.before(before); o.completed.Load() < n {
			deps = append(deps, dep{s: o, n: n})
		}
	}
	return deps
}

// endRing keeps when a session's last events ended in the log, and how
// many it had been routed by then, for barrierOf: a few are enough, since
// a barrier comes right after the events it waits for.
type endRing struct {
	at [8]int64
	n  [8]int64
	i  int
}

// add notes that the session's nth event, ev, was routed.
func (e *endRing) add(ev *event.Event, n int64) {
	at := ev.Time
	if ev.Duration > 0 {
		at += ev.Duration
	}
	e.at[e.i], e.n[e.i] = at, n
	e.i = (e.i + 1) % len(e.at)
}

// before returns how many events had ended before log time t: the
// newest one kept, or 0 when every one kept ended later (fewer than
// there were: waiting for fewer is safe, for more could deadlock).
func (e *endRing) before(t int64) int64 {
	for k := 1; k <= len(e.at); k++ {
		j := (e.i - k + len(e.at)) % len(e.at)
		if e.n[j] > 0 && e.at[j] < t {
			return e.n[j]
		}
	}
	return 0
}

// completedCh returns a channel closed once the session has completed n
// events, or exited.
func (s *session) completedCh(n int64) <-chan struct{} {
	ch := make(chan struct{})
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.completed.Load() >= n || s.exited.Load() {
		close(ch)
		return ch
	}
	s.waiters = append(s.waiters, waiter{n: n, ch: ch})
	s.hasWaiters.Store(true)
	return ch
}

func (sr *syncRun) record(d time.Duration, reason, cause string, start bool) {
	switch reason {
	case SyncTimeout:
		sr.timeouts.Add(1)
		sr.mu.Lock()
		sr.causes[cause]++
		sr.mu.Unlock()
	case SyncDeadlock:
		sr.deadlocks.Add(1)
	case string(results.SyncGiveUpShardLost):
		sr.shardLost.Add(1)
	}
	if start {
		sr.starts.Add(1)
		return
	}
	sr.waited.Add(1)
	sr.mu.Lock()
	sr.waits.Record(d.Microseconds())
	sr.mu.Unlock()
}

// syncLag takes out of a statement's lateness L what sync waits caused:
// the session's push (how late earlier waits left it) up to L. The rest
// is schedule lag. The push carried on is what remains of it plus this
// statement's own wait w; a session that catches up (L = 0) has none.
func (s *session) syncLag(late, w time.Duration) time.Duration {
	carried := min(late, s.syncPush)
	s.syncPush = carried + w
	return late - carried
}

// connected and disconnected keep the pid registry of the deadlock check.
func (s *session) syncConnected() {
	if sr := s.r.sync; sr != nil && s.conn != nil {
		pid := s.conn.PID()
		s.pid.Store(pid)
		sr.pids.Store(pid, s)
	}
}

func (s *session) syncDisconnected() {
	if sr := s.r.sync; sr != nil {
		if pid := s.pid.Swap(0); pid != 0 {
			sr.pids.CompareAndDelete(pid, s)
		}
	}
}

// syncResult fills res.Sync and res.SyncWait, and closes the deadlock
// check's connection.
func (r *Replayer) syncResult(res *results.Result) error {
	if r.sync == nil {
		res.Sync = &results.Sync{Mode: syncMode(syncdep.Off)}
		if r.syncOff != "" {
			res.Sync.Notes = []string{r.syncOff}
		}
		return nil
	}
	r.sync.mon.close()
	sr := r.sync
	st := &results.Sync{Mode: syncMode(r.opts.Sync), TimeoutSeconds: sr.timeout.Seconds(), CatalogMS: float64(sr.catalog.Microseconds()) / 1000}
	st.Waited = sr.waited.Load()
	st.Timeouts, st.Deadlocks, st.SessionStartsWaited = sr.timeouts.Load(), sr.deadlocks.Load(), sr.starts.Load()
	st.LostTransactions = sr.lostN.Load()
	st.ShardLost = sr.shardLost.Load()
	st.ByRow, st.KeyNotLogged = sr.byRow, sr.keyNotLogged
	if n := sr.coarseNote(); n != "" {
		sr.note("%s", n)
	}
	sr.notesMu.Lock()
	st.Notes = append(st.Notes, sr.notes...)
	sr.notesMu.Unlock()
	if n := sr.advisoryUnread(); n > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d advisory-lock calls named their key by a column or an expression (or a parameter not logged), not read from the text: the server alone ordered them", n))
	}
	var f string
	f, st.CheckReconnects = sr.mon.failure()
	if f != "" {
		st.Notes = append(st.Notes, f)
	}
	res.Sync = st
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if len(sr.causes) > 0 {
		st.TimeoutsByCause = maps.Clone(sr.causes)
	}
	st.LostCommits = slices.Clone(sr.lostTxs)
	slices.SortFunc(st.LostCommits, func(a, b results.LostCommit) int { return cmp.Compare(a.Position, b.Position) })
	var err error
	res.SyncWait, err = sr.waits.Distribution()
	return err
}

// lockMonitor finds the deadlocks that a sync wait can make with row
// locks: session B waits for A's commit while A is blocked, directly or
// through other sessions (by locks or by their own sync waits), by a lock
// that B's open transaction holds. Lock edges come from one snapshot of
// every backend waiting for a lock and those that block it
// (pg_blocking_pids), read on a connection of its own, opened at the
// first check, and shared: a check uses a snapshot taken at most
// graphFresh before it asked, so that waiters checking at once cost one
// query, not one per waiter and per session of their chains.
//
// Whenever that connection is lost (a restart, a terminated backend, an
// idle timeout, a pooler), it is made again at the next check, with
// backoff after failed attempts: the check is never given up for the rest
// of a run. The checks that come while it cannot look say so, and a wait
// that then ends at its timeout is counted under SyncCauseUnchecked.
type lockMonitor struct {
	mu   sync.Mutex
	conn *pgconn.PgConn
	// g is the last snapshot of the lock waits.
	g lockGraph
	// retryAt: no new attempt at the connection before it; backoff:
	// the next pause after a failure.
	retryAt time.Time
	backoff time.Duration
	// failures: connections lost or attempts that failed, with the
	// last error; reconnects: connections made after a loss.
	failures, reconnects int64
	lastErr              string
	hadConn              bool
}

// lockGraph is a snapshot of the server's lock waits: for each backend
// waiting for a lock, the backends that block it.
type lockGraph struct {
	at    time.Time
	edges map[uint32][]uint32
}

// graphFresh is how old a snapshot of the lock waits may be for a check
// that asks now: the snapshots of waiters checking within it are shared.
const graphFresh = 10 * time.Millisecond

// Backoff of the deadlock check's connection attempts after failures.
const (
	monitorBackoffMin = 50 * time.Millisecond
	monitorBackoffMax = 2 * time.Second
	// monitorTimeout bounds one check's connection attempt and query.
	monitorTimeout = 5 * time.Second
)

// times is "once", "2 times".
func times(n int64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// failure says what went wrong with the check's connection during the
// run, "" when nothing did, and how often it was made again.
func (m *lockMonitor) failure() (string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures == 0 {
		return "", m.reconnects
	}
	return fmt.Sprintf("the deadlock check's connection failed %s (last: %s) and was made again %s; "+
		"waits that came while it could not look and ended at the timeout are counted as %q", times(m.failures), m.lastErr, times(m.reconnects), SyncCauseUnchecked), m.reconnects
}

// fail notes that the connection failed or was lost with err, and when
// to try again. Called with m.mu held.
func (m *lockMonitor) fail(err error) {
	if m.conn != nil {
		m.conn.Close(context.Background())
		m.conn = nil
	}
	m.failures++
	m.lastErr = err.Error()
	m.backoff = min(max(2*m.backoff, monitorBackoffMin), monitorBackoffMax)
	m.retryAt = time.Now().Add(m.backoff)
}

// ready makes sure the check has a connection, as the waiter's user to
// its database; false when it has none now. Called with m.mu held.
func (m *lockMonitor) ready(ctx context.Context, waiter *session) bool {
	if m.conn != nil && !m.conn.IsClosed() {
		return true
	}
	if m.conn != nil {
		m.fail(errors.New("connection closed"))
	}
	if time.Now().Before(m.retryAt) {
		return false
	}
	conn, err := waiter.r.quietConn(ctx, waiter.user, waiter.db)
	if err != nil {
		m.fail(err)
		return false
	}
	if m.hadConn {
		m.reconnects++
	}
	m.conn, m.hadConn, m.backoff = conn, true, 0
	return true
}

// graph returns a snapshot of the lock waits taken at notBefore or
// later, reading one when the last is older; ok false when the check's
// connection is away. Waiters that ask while one is read wait for it and
// share it.
func (m *lockMonitor) graph(waiter *session, notBefore time.Time) (lockGraph, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.g.edges != nil && !m.g.at.Before(notBefore) {
		return m.g, true
	}
	ctx, cancel := context.WithTimeout(waiter.r.hard, monitorTimeout)
	defer cancel()
	if !m.ready(ctx, waiter) {
		return lockGraph{}, false
	}
	at := time.Now()
	edges, err := lockWaits(ctx, m.conn)
	if err != nil {
		m.fail(err)
		return lockGraph{}, false
	}
	m.g = lockGraph{at: at, edges: edges}
	return m.g, true
}

func (m *lockMonitor) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m.conn.Close(ctx)
		cancel()
		m.conn = nil
	}
}

// cycle reports whether aw, what waiter waits for, is blocked through
// the chain of lock and sync waits by waiter itself, and whether it
// could look (ok false: the check's connection is away). Lock waits come
// from a snapshot taken at most graphFresh before the check; sync waits
// are read as the sessions go on: a cycle found is confirmed only if every
// sync wait in it is still pending at the end (a session whose wait just
// ended still shows it until its goroutine runs), so that a wait is ended
// only for a cycle that holds; one found in a snapshot taken before the
// check began is looked for again in a new one. The statements that the
// waiter's locks hold up are marked on the way (markBlocked). still is
// how long the awaited side has made no progress (see closes).
func (sr *syncRun) cycle(waiter *session, aw *awaited, still time.Duration) (found, ok bool) {
	asked := time.Now()
	g, ok := sr.mon.graph(waiter, asked.Add(-graphFresh))
	if !ok {
		return false, false
	}
	sr.markBlocked(waiter.pid.Load(), g.edges)
	if found = sr.closes(waiter, aw, g.edges, still); found && g.at.Before(asked) {
		if g, ok = sr.mon.graph(waiter, asked); !ok {
			return false, false
		}
		found = sr.closes(waiter, aw, g.edges, still)
	}
	return found, true
}

// closes reports whether the chain of waits from aw comes back to waiter
// (walk), or, in a shard (the log has sessions of other processes), ends
// at another process's backend that waits for no lock while the waiter's
// locks hold up another process's backend, and the awaited side has made
// no progress for foreignStill: a cycle through the other shards' sync
// waits, which this process cannot see (issue 77: such waits gave up
// after their whole timeout, "awaited session blocked by a lock"), taken
// for one as foreignCycle takes it. The other process's backend may also
// be a session between two statements of its transaction, which goes on
// by its schedule: hence the pause, which such a session does not make
// unless its log did.
func (sr *syncRun) closes(waiter *session, aw *awaited, edges map[uint32][]uint32, still time.Duration) bool {
	found, stuck, remoteAt := sr.walk(waiter, aw, edges)
	if found || !sr.sharded || !aw.pending() {
		return found
	}
	if remoteAt != 0 && sr.peers {
		// The chain reached a wait for another shard's commit or
		// statement: through it, as for a wait of the waiter's own
		// (foreignCycle), at once.
		if f, _ := sr.foreignCycleIn(waiter, edges, remoteAt); f {
			return true
		}
	}
	if !stuck || still < sr.foreignStill() {
		return false
	}
	f, _ := sr.foreignCycleIn(waiter, edges, 0)
	return f
}

// foreignStill is how long a wait's chain must stand still at another
// process's backend before closes takes it for a cycle: a tenth of the
// timeout (1 s at the default 10 s) in a paced replay, where that backend
// may be a session between two statements, going on by its schedule; at
// speed 0 no session pauses so, and a backend idle in its transaction
// that long is in a sync wait: foreignStillUnpaced, or the tenth if less.
func (sr *syncRun) foreignStill() time.Duration {
	if sr.unpaced {
		return min(sr.timeout/10, foreignStillUnpaced)
	}
	return sr.timeout / 10
}

// foreignStillUnpaced is foreignStill at speed 0: a few deadlock checks
// (deadlockCheckEvery), so that a cycle through other shards' sync waits
// ends at once rather than after a second (issue 77).
const foreignStillUnpaced = 100 * time.Millisecond

// walk follows the chain of sync and lock waits (edges) from aw, what
// waiter waits for, and reports whether it comes back to waiter. Lock
// waits are followed through backends of no session of this replay
// (another client's, another shard's): stuck says a chain ended at one
// that waits for no lock.
//
// remoteAt is the latest log time (syncdep.Txn.At) of a pending wait for
// another shard's commit or statement that a session of the chain is in,
// 0 when none: the chain goes on in that shard, out of sight.
func (sr *syncRun) walk(waiter *session, aw *awaited, edges map[uint32][]uint32) (found, stuck bool, remoteAt int64) {
	wpid := waiter.pid.Load()
	// via is the sync wait a session was reached through (nil for a
	// lock), parent the session it was reached from.
	type step struct {
		from *session
		via  *awaited
	}
	// A logical session of a pooled replay is followed to the worker
	// that runs its unit (session.live).
	reached := map[*session]step{aw.owner.live(): {waiter, aw}}
	stack := []*session{aw.owner.live()}
	seen := map[*session]bool{}
	// confirm walks the cycle back from the waiter to itself.
	confirm := func() bool {
		n := waiter
		for range len(reached) {
			st := reached[n]
			if st.via != nil && !st.via.pending() {
				return false
			}
			if n = st.from; n == waiter {
				return true
			}
		}
		return false
	}
	for len(stack) > 0 && len(seen) < 64 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		if a := n.waitingOn.Load(); a != nil && a.owner == nil && a.tx != nil && a.pending() {
			remoteAt = max(remoteAt, a.tx.At())
		} else if a != nil && a.owner != nil && a.pending() {
			o := a.owner.live()
			if o == waiter {
				reached[waiter] = step{n, a}
				if confirm() {
					return true, stuck, remoteAt
				}
				continue
			}
			if _, ok := reached[o]; !ok {
				reached[o] = step{n, a}
			}
			stack = append(stack, o)
		}
		pid := n.pid.Load()
		if pid == 0 {
			continue
		}
		ours, end := sr.lockBlockers(pid, wpid, edges)
		stuck = stuck || end
		for _, b := range ours {
			if b == wpid {
				reached[waiter] = step{n, nil}
				if confirm() {
					return true, stuck, remoteAt
				}
				continue
			}
			if o, ok := sr.pids.Load(b); ok {
				os := o.(*session)
				if _, ok := reached[os]; !ok {
					reached[os] = step{n, nil}
				}
				stack = append(stack, os)
			}
		}
	}
	return false, stuck, remoteAt
}

// maxForeignChain bounds how many backends of no session of this replay
// lockBlockers follows from one backend.
const maxForeignChain = 64

// lockBlockers returns the backends that hold up backend pid through
// lock waits (edges) and are this replay's sessions or the waiter
// (wpid): those that block it, and those that block, through any chain
// of lock waits, a backend of no session of this replay that blocks it.
// end says such a chain ended at a backend of no session of this replay
// that waits for no lock.
func (sr *syncRun) lockBlockers(pid, wpid uint32, edges map[uint32][]uint32) (ours []uint32, end bool) {
	queue := slices.Clone(edges[pid])
	seen := map[uint32]bool{pid: true}
	for len(queue) > 0 && len(seen) < maxForeignChain {
		b := queue[0]
		queue = queue[1:]
		if seen[b] {
			continue
		}
		seen[b] = true
		if _, local := sr.pids.Load(b); local || b == wpid {
			ours = append(ours, b)
			continue
		}
		if by := edges[b]; len(by) > 0 {
			queue = append(queue, by...)
		} else {
			end = true
		}
	}
	return ours, end
}

// timeoutCause says what the session that was to bring the awaited
// commit was doing when a wait gave up at its timeout.
func (sr *syncRun) timeoutCause(waiter *session, aw *awaited, unchecked bool) string {
	o := aw.owner
	if o != nil {
		o = o.live()
	}
	switch {
	case o == nil, o.pooled != nil:
		// (A pooled replay's logical session that no worker runs:
		// its unit waits for one.)
		return SyncCauseBehind
	case o.pid.Load() == 0:
		return SyncCauseReconnecting
	case func() bool { a := o.waitingOn.Load(); return a != nil && a.pending() }():
		return SyncCauseChained
	case unchecked:
		return SyncCauseUnchecked
	case o.busyUntil.Load() == 0:
		return SyncCauseBehind
	}
	g, ok := sr.mon.graph(waiter, time.Now().Add(-graphFresh))
	switch {
	case !ok:
		return SyncCauseUnchecked
	case len(g.edges[o.pid.Load()]) > 0:
		return SyncCauseLocked
	}
	return SyncCauseRunning
}

// markDelayed marks the replayed statements blocked, directly or through
// others, by the locks of waiter, whose sync wait just ended with its
// transaction open: their time on the target includes the wait the
// replayer made. A statement blocked by the waiter's locks stays blocked
// until the waiter's transaction ends, which cannot happen during its
// sync wait, so a snapshot from the wait's last deadlockCheckEvery finds
// every one blocked before then.
func (sr *syncRun) markDelayed(waiter *session) {
	if g, ok := sr.mon.graph(waiter, time.Now().Add(-deadlockCheckEvery)); ok {
		sr.markBlocked(waiter.pid.Load(), g.edges)
	}
}

// blockedBy is backend wpid and the backends that wait, through any chain
// of lock waits in edges (a backend's blockers), for one of its locks.
func blockedBy(wpid uint32, edges map[uint32][]uint32) map[uint32]bool {
	blocked := map[uint32]bool{wpid: true}
	for grew := true; grew; {
		grew = false
		for pid, by := range edges {
			if blocked[pid] {
				continue
			}
			for _, b := range by {
				if blocked[b] {
					blocked[pid], grew = true, true
					break
				}
			}
		}
	}
	return blocked
}

// markBlocked marks the sessions whose statement in flight waits, through
// any chain of lock waits in edges, for a lock of backend wpid
// (session.delayedSeq).
func (sr *syncRun) markBlocked(wpid uint32, edges map[uint32][]uint32) {
	if wpid == 0 || len(edges) == 0 {
		return
	}
	blocked := blockedBy(wpid, edges)
	delete(blocked, wpid)
	for pid := range blocked {
		if o, ok := sr.pids.Load(pid); ok {
			os := o.(*session)
			if os.busyUntil.Load() != 0 {
				os.delayedSeq.Store(os.execSeq.Load())
			}
		}
	}
}

// lockWaits returns the backends waiting for a lock, each with those
// that block it; a serializable read-only deferrable transaction waiting
// for its safe snapshot (SafeSnapshot, an IPC wait) is blocked by the
// serializable transactions still open, which pg_blocking_pids does not
// name: PostgreSQL's transactions test waits so, and a session kept in its
// transaction by a sync wait on that very statement's commit waited out
// its timeout on every statement (issue 39's speed-1 replay).
func lockWaits(ctx context.Context, conn *pgconn.PgConn) (map[uint32][]uint32, error) {
	res := conn.ExecParams(ctx, lockWaitsQuery, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, res.Err
	}
	edges := map[uint32][]uint32{}
	for _, row := range res.Rows {
		if len(row) != 2 {
			return nil, fmt.Errorf("lock waits: unexpected result")
		}
		pid, err := strconv.ParseUint(string(row[0]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("lock waits: pid %q", row[0])
		}
		by, err := parsePIDs(row[1])
		if err != nil {
			return nil, err
		}
		edges[uint32(pid)] = by
	}
	return edges, nil
}

// lockWaitsQuery reads lockWaits' edges.
const lockWaitsQuery = "SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' " +
	"UNION ALL SELECT pid, pg_safe_snapshot_blocking_pids(pid) FROM pg_stat_activity WHERE wait_event_type = 'IPC' AND wait_event = 'SafeSnapshot'"

// parsePIDs reads an int[] of backend pids in its text form.
func parsePIDs(b []byte) ([]uint32, error) {
	text := strings.Trim(string(b), "{}")
	if text == "" {
		return nil, nil
	}
	var pids []uint32
	for _, f := range strings.Split(text, ",") {
		v, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("pg_blocking_pids: %q", b)
		}
		pids = append(pids, uint32(v))
	}
	return pids, nil
}

// coarseNote says, for a replay in answers mode whose log gave its times
// in whole seconds (log_line_prefix %t, not %m or %n), that the order it
// could keep is coarse: a statement and a commit of one second cannot be
// told apart, so statements of the second a commit was sent in race with
// it, and their differing answers are explained as races. Empty
// otherwise.
func (sr *syncRun) coarseNote() string {
	if sr.tr.Mode() != syncdep.Answers || sr.steps == 0 || sr.tr.Tick() < time.Second.Microseconds() {
		return ""
	}
	return "the log's times are whole seconds (%t in log_line_prefix): answers mode orders statements and commits only a second apart; those of one second may have run in either order and count as races (log with %m or %n for milliseconds)"
}
