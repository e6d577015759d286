package replay

import (
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Peers are the other shards of a replay split by session (package
// coord, through package replayrun): a synchronized shard's statements
// wait for the commits they depend on whichever shard replays them. The
// engine knows them only through this interface; positions are
// event.Event.Pos, the same in every shard.
//
// Every method is called on the dispatcher's goroutine except Ran.
type Peers interface {
	// Follow is called once, before the first event, with the
	// synchronized replay's tracker: the other shards' sessions are
	// followed in it. database names the target database of an
	// event's session; catalog reads a database's catalog into the
	// tracker as the user of ev, once, before its first session.
	Follow(tr *syncdep.Tracker, database func(ev *event.Event) string, catalog func(ev *event.Event, db string))
	// Before feeds the tracker the other shards' events read before
	// position pos; false when the replay must stop.
	Before(pos int64) bool
	// Advance says this shard read its event at pos, and whether it is
	// one of its own that other shards may wait for (Ran will follow):
	// a commit, or in answers mode a statement a commit may wait for
	// (syncdep.Step.Mark).
	Advance(pos int64, ownCommit bool)
	// Ran says this shard's commit or mark at pos ran on the target, or
	// never will (a fault lost it): either way nothing waits for it
	// longer. Any goroutine.
	Ran(pos int64)
}

// SyncGiver is the owner of a commit a session may wait for that can
// tell a wait to give up: another shard's sessions (a coord.Peer) say
// so once their shard is lost.
type SyncGiver interface {
	SyncGiveUp() results.SyncGiveUp
}

// SyncProgressor is the owner of commits a session may wait for that can
// tell how far it got: another shard (a coord.Peer) counts the commit
// positions it published as run. A sync wait for such a commit is not
// given up while the count moves (see awaited.progress); a heartbeat
// alone does not move it, so a frozen shard is given up on after
// SyncTimeout.
type SyncProgressor interface {
	SyncProgress() uint64
}

// startBarrier waits, before anything runs, for the start the shards
// share (Options.StartAt), less what a paced replay connects ahead of its
// first statements. It returns false when told to stop meanwhile.
func (r *Replayer) startBarrier() bool {
	if r.opts.StartAt.IsZero() {
		return true
	}
	at := r.opts.StartAt
	if r.sched.Paced() {
		at = at.Add(-r.opts.connectLead)
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	return waitUntil(t, at, r.stopCh)
}

// followPeers gives the peers the tracker, on the dispatcher's
// goroutine before the first event.
func (r *Replayer) followPeers() {
	if r.opts.Peers == nil || r.sync == nil {
		return
	}
	sr := r.sync
	r.opts.Peers.Follow(sr.tr, func(ev *event.Event) string { return mapped(r.opts.DatabaseMap, ev.Database) },
		func(ev *event.Event, db string) {
			began := time.Now()
			cat, err := r.syncCatalog(mapped(r.opts.UserMap, ev.User), db, ev.Database)
			sr.catalog += time.Since(began)
			if err != nil {
				sr.note("database %q: its catalog could not be read at the start (%v), so its statements waited as in commit mode", db, err)
			}
			sr.tr.SetCatalog(db, cat)
		})
}

// peers returns the peers when a synchronized replay follows them.
func (r *Replayer) peers() Peers {
	if r.sync == nil {
		return nil
	}
	return r.opts.Peers
}

// SetStart sets the start barrier (Options.StartAt) once it is known (a
// rendezvous fixes it after New); before Run.
func (r *Replayer) SetStart(at time.Time) { r.opts.StartAt = at }

// foreignCycle reports whether waiter, in a sync wait for another
// shard's commit with its transaction open, blocks (through any chain of
// lock waits) a backend that is not one of this shard's sessions: most
// likely the awaited commit's session, which cannot commit before the
// waiter's transaction ends, so that waiting on would only end at the
// timeout. The sessions of other shards are not known here (their
// backends are), so a blocked backend of a third session also ends the
// wait: its statement runs then, as a deadlock found in one process
// would. ok is false when the check could not look.
//
// awaitedAt is the log time of the awaited commit or statement (its end,
// syncdep.Txn.At): a session of this shard blocked by the waiter's locks
// while it runs a statement that ended in the log before then is taken
// for a link of the cycle too, since the awaited side may wait for it
// through sync waits of other shards, which this one cannot see (the
// awaited session blocked by a lock the waiting session holds: issue 77's
// waits that gave up at the timeout); one that ended later may have
// waited for the waiter's lock in the original too. 0 leaves this
// shard's sessions out.
func (sr *syncRun) foreignCycle(waiter *session, awaitedAt int64) (found, ok bool) {
	g, ok := sr.mon.graph(waiter, time.Now().Add(-graphFresh))
	if !ok {
		return false, false
	}
	return sr.foreignCycleIn(waiter, g.edges, awaitedAt)
}

// foreignCycleIn is foreignCycle in the snapshot of lock waits edges.
func (sr *syncRun) foreignCycleIn(waiter *session, edges map[uint32][]uint32, awaitedAt int64) (found, ok bool) {
	wpid := waiter.pid.Load()
	if wpid == 0 {
		return false, true
	}
	blocked := blockedBy(wpid, edges)
	for pid := range blocked {
		if pid == wpid {
			continue
		}
		o, local := sr.pids.Load(pid)
		if !local {
			return true, true
		}
		if awaitedAt == 0 {
			continue
		}
		if at := o.(*session).execAt.Load(); at != 0 && at < awaitedAt {
			return true, true
		}
	}
	return false, true
}
