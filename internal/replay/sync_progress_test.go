package replay

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// The sync waits of issue 44: a wait gives up once what it waits for has
// made no progress for the sync timeout, not once it has lasted that long
// in all. At speed 0 on a busy machine a session or a shard that was merely
// behind, making steady progress, was given up on at 10 s and the replay
// marked degraded. Every case runs on synctest's fake clock: its times are
// exact and no load moves them.

// progressTimeout is the sync timeout of the cases, the default's.
const progressTimeout = DefaultSyncTimeout

// shardOwner stands for another shard as the owner of its commits (the
// replay knows a coord.Peer only through SyncProgressor and SyncGiver):
// moves counts the commit positions it published.
type shardOwner struct{ moves atomic.Uint64 }

func (o *shardOwner) SyncProgress() uint64           { return o.moves.Load() }
func (o *shardOwner) SyncGiveUp() results.SyncGiveUp { return "" }

// progressCase is a reader whose statement waits for the commit of a
// writer, owned by owner (a *session of this replay, or a *shardOwner);
// it must be made inside the synctest bubble.
type progressCase struct {
	commit *syncdep.Txn
	wait   syncdep.Wait
	r      *Replayer
	reader *session
	done   chan synced
}

func newProgressCase(t *testing.T, owner any) *progressCase {
	t.Helper()
	tr := syncdep.NewTracker(syncdep.Commit)
	c := &progressCase{done: make(chan synced, 1)}
	c.commit = trackAt(tr.Session("db", owner), 10, "INSERT INTO orders VALUES (1)").Commit
	c.wait = trackAt(tr.Session("db", "reader"), 20, "INSERT INTO shipments VALUES (1)").Wait
	if c.commit == nil || tr.Board().Blocker(c.wait) != c.commit {
		t.Fatalf("the shipment does not wait for the order's commit: %v", c.commit)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	c.r = &Replayer{stopCh: stop, hard: context.Background(),
		sync: &syncRun{timeout: progressTimeout, board: tr.Board(), waits: results.NewRecorder(), causes: map[string]int64{}}}
	c.reader = &session{r: c.r, board: tr.Board()}
	return c
}

// localWriter returns a session of the replay, connected (a backend pid)
// and not running a statement.
func localWriter() *session {
	w := &session{}
	w.pid.Store(1)
	return w
}

// start begins the reader's wait on a goroutine of the bubble.
func (c *progressCase) start() {
	go func() {
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		sy, _ := c.reader.syncWait(c.wait, nil, timer, false)
		c.done <- sy
	}()
	synctest.Wait()
}

// stepFor makes progress (move) every step for span of fake time, and
// fails if the wait ended meanwhile.
func (c *progressCase) stepFor(t *testing.T, span, step time.Duration, move func()) {
	t.Helper()
	for end := time.Now().Add(span); time.Now().Before(end); {
		time.Sleep(step) // the fake clock's passage: what the case is about
		move()
		synctest.Wait()
		select {
		case sy := <-c.done:
			t.Fatalf("the wait ended %+v after %v while the awaited side made progress every %v", sy, sy.wait, step)
		default:
		}
	}
}

// ended returns how the wait ended, failing if it goes on.
func (c *progressCase) ended(t *testing.T) synced {
	t.Helper()
	synctest.Wait()
	select {
	case sy := <-c.done:
		return sy
	default:
		t.Fatal("the wait goes on")
		return synced{}
	}
}

// wantTimeout checks that the wait gave up at the timeout, after wait
// (or up to a deadlock check's period later: progress is seen when the
// wait looks), and was counted under cause.
func (c *progressCase) wantTimeout(t *testing.T, sy synced, wait time.Duration, cause string) {
	t.Helper()
	if sy.giveUp != SyncTimeout || sy.wait < wait || sy.wait > wait+deadlockCheckEvery {
		t.Errorf("the wait ended after %v, given up %q: want %q after %v", sy.wait, sy.giveUp, SyncTimeout, wait)
	}
	sr := c.r.sync
	if n := sr.timeouts.Load(); n != 1 {
		t.Errorf("%d timeouts counted, want 1", n)
	}
	if sr.causes[cause] != 1 || len(sr.causes) != 1 {
		t.Errorf("timeouts by cause %v, want 1 %q", sr.causes, cause)
	}
}

// wantCommitAfterProgress starts the wait, makes progress (move) every
// 3 s for 30 s, then brings the commit: the wait must end with it, not
// given up.
func (c *progressCase) wantCommitAfterProgress(t *testing.T, move func()) {
	t.Helper()
	c.start()
	c.stepFor(t, 30*time.Second, 3*time.Second, move)
	c.commit.Done()
	if sy := c.ended(t); sy.giveUp != "" || sy.wait != 30*time.Second {
		t.Errorf("the wait ended after %v, given up %q: want the commit after 30s", sy.wait, sy.giveUp)
	}
}

// wantTimeoutWithoutProgress starts the wait and makes no progress: it
// must give up at the timeout, counted as behind.
func (c *progressCase) wantTimeoutWithoutProgress(t *testing.T) {
	t.Helper()
	c.start()
	time.Sleep(progressTimeout)
	c.wantTimeout(t, c.ended(t), progressTimeout, SyncCauseBehind)
}

// wantTimeoutAfterProgress starts the wait and makes progress (move)
// every 3 s for span, then none: it must give up a timeout after the
// last progress (within a deadlock check's period, when it looks),
// counted under cause.
func (c *progressCase) wantTimeoutAfterProgress(t *testing.T, span time.Duration, move func(), cause string) {
	t.Helper()
	c.start()
	c.stepFor(t, span, 3*time.Second, move)
	time.Sleep(progressTimeout + deadlockCheckEvery)
	c.wantTimeout(t, c.ended(t), span+progressTimeout, cause)
}

// TestSyncWaitGoesOnWhileAwaitedSessionProgresses: the writer completes an
// event every 3 s for 30 s of fake time (behind, not stuck) with a 10 s
// timeout: the reader's wait does not give up, and ends when the commit
// arrives, uncounted as a timeout.
func TestSyncWaitGoesOnWhileAwaitedSessionProgresses(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	synctest.Test(t, func(t *testing.T) {
		w := localWriter()
		c := newProgressCase(t, w)
		c.wantCommitAfterProgress(t, func() { w.completed.Add(1) })
		if n := c.r.sync.timeouts.Load(); n != 0 {
			t.Errorf("%d timeouts counted", n)
		}
	})
}

// TestSyncWaitGivesUpWithoutProgress: a writer that completes nothing is
// given up on after the timeout, counted by what it was doing, as before;
// one that progressed for a while and then stopped is given up on a
// timeout after its last progress.
func TestSyncWaitGivesUpWithoutProgress(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	t.Run("never", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			newProgressCase(t, localWriter()).wantTimeoutWithoutProgress(t)
		})
	})
	t.Run("stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := localWriter()
			// The last progress was at 12 s: the wait ends a timeout
			// later.
			newProgressCase(t, w).wantTimeoutAfterProgress(t, 12*time.Second, func() { w.completed.Add(1) }, SyncCauseBehind)
		})
	})
}

// TestSyncWaitFollowsAChainOfWaits: the writer is itself in a sync wait
// for a third session, which progresses: the reader's wait goes on, as the
// writer's does; once the third stops, both give up a timeout later.
func TestSyncWaitFollowsAChainOfWaits(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	synctest.Test(t, func(t *testing.T) {
		w, third := localWriter(), localWriter()
		w.waitingOn.Store(&awaited{owner: third, dep: dep{s: third, n: 1 << 40}})
		newProgressCase(t, w).wantTimeoutAfterProgress(t, 30*time.Second, func() { third.completed.Add(1) }, SyncCauseChained)
	})
}

// TestSyncWaitAcrossShardsProgress: a commit of another shard, whose
// published commit position moves every 3 s, is waited for past the
// timeout until it arrives; a shard that publishes nothing (frozen: its
// heartbeat, which does not count, may still beat) is given up on after
// the timeout.
func TestSyncWaitAcrossShardsProgress(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	t.Run("moving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := &shardOwner{}
			newProgressCase(t, o).wantCommitAfterProgress(t, func() { o.moves.Add(1) })
		})
	})
	t.Run("frozen", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			newProgressCase(t, &shardOwner{}).wantTimeoutWithoutProgress(t)
		})
	})
}

// TestSyncWaitLimit: an awaited side that keeps progressing without ever
// bringing the commit is given up on after SyncWaitLimit timeouts in all,
// counted apart (SyncCauseLimit).
func TestSyncWaitLimit(t *testing.T) {
	functionalCase(t) // timed on synctest's fake clock, which no load moves
	synctest.Test(t, func(t *testing.T) {
		o := &shardOwner{}
		c := newProgressCase(t, o)
		c.start()
		limit := SyncWaitLimit * progressTimeout
		c.stepFor(t, limit-3*time.Second, 3*time.Second, func() { o.moves.Add(1) })
		time.Sleep(3 * time.Second)
		c.wantTimeout(t, c.ended(t), limit, SyncCauseLimit)
	})
}
