package replay

import (
	"context"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// lostWaitCase is a reader whose statement waits for the commits of two
// writers, the older first; sync is the replay's state for a session of
// it.
type lostWaitCase struct {
	first, second *syncdep.Txn
	wait          syncdep.Wait
	r             *Replayer
	s             *session
	stop          chan struct{}
}

func newLostWaitCase(t *testing.T) *lostWaitCase {
	t.Helper()
	tr := syncdep.NewTracker(syncdep.Commit)
	c := &lostWaitCase{stop: make(chan struct{})}
	c.first = trackAt(tr.Session("db", "first"), 10, "INSERT INTO orders VALUES (1)").Commit
	c.second = trackAt(tr.Session("db", "second"), 20, "INSERT INTO orders VALUES (2)").Commit
	c.wait = trackAt(tr.Session("db", "reader"), 30, "INSERT INTO shipments VALUES (1)").Wait
	if c.first == nil || c.second == nil || tr.Board().Blocker(c.wait) != c.first {
		t.Fatalf("the shipment does not wait for the first order's commit: commits %v %v", c.first, c.second)
	}
	c.r = &Replayer{stopCh: c.stop, hard: context.Background(),
		sync: &syncRun{timeout: time.Hour, board: tr.Board(), waits: results.NewRecorder(), causes: map[string]int64{}}}
	c.s = &session{r: c.r, board: tr.Board()}
	t.Cleanup(func() { close(c.stop) })
	return c
}

// loseSecond waits (polling) until the reader waits, then loses the
// second commit (its session's connection broke) while the reader waits
// for the first, and runs the first; the wait must then end, and say
// its dependency was lost.
func (c *lostWaitCase) loseSecond(t *testing.T, done <-chan synced) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); c.s.waitingOn.Load() == nil; {
		select {
		case sy := <-done:
			t.Fatalf("the wait ended (%+v) before the commits it waits for", sy)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader never began to wait")
		}
		time.Sleep(time.Millisecond) // polling
	}
	c.r.sync.lose(c.second)
	c.first.Done()
	select {
	case sy := <-done:
		if !sy.lostDep || sy.giveUp != "" {
			t.Errorf("the wait ended %+v: want a lost dependency", sy)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the wait did not end once its commits were done or lost")
	}
}

// TestSyncWaitLostWhileWaitingForAnother: a statement waiting for the
// older of two commits it depends on, when the other is lost on the
// target meanwhile (its session's connection broke) and the older then
// runs, is released as "dependency lost", not as if both had run: the
// lost commit left the Board as one that ran does, so the wait's next
// look found nothing left to wait for. The same look ended the wait of
// internal/cli's TestReplayCrashLosesParent without its loss, on a busy
// machine, when the deadlock check's timer fired with the lost commit's
// wake: the shipment then ran on the crashed connection and was counted
// as "connection lost". The order of events is forced.
func TestSyncWaitLostWhileWaitingForAnother(t *testing.T) {
	functionalCase(t)
	c := newLostWaitCase(t)
	done := make(chan synced, 1)
	go func() {
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		sy, _ := c.s.syncWait(c.wait, nil, timer, false)
		done <- sy
	}()
	c.loseSecond(t, done)
	if n := c.r.sync.lostN.Load(); n != 1 {
		t.Errorf("%d lost transactions, want 1", n)
	}
}

// TestSyncWaitLostAsTheCheckFires: the commit a statement waits for is
// lost just as the wait's deadlock-check timer fires, which is what
// internal/cli's TestReplayCrashLosesParent met on a busy machine (its
// deadlock check was at work when the crash came: its connection failed
// once). With both ready, select may choose the timer, whose branch saw
// the commit done and looked for the next one without asking how it was
// done; the wait then ended as if the commit had run (in 114 of 300
// tries on a machine with load 8). Which branch select takes is Go's
// choice, not the test's: it tries 100 times, and each must tell the
// loss. A try whose loss missed the timer passes as any other.
func TestSyncWaitLostAsTheCheckFires(t *testing.T) {
	functionalCase(t)
	for try := range 100 {
		c := newLostWaitCase(t)
		began := time.Now()
		done := make(chan synced, 1)
		go func() {
			timer := time.NewTimer(time.Hour)
			timer.Stop()
			sy, _ := c.s.syncWaitFrom(began, c.s.syncBoard().LostMark(), c.wait, nil, timer, false)
			done <- sy
		}()
		c.second.Done()
		time.Sleep(time.Until(began.Add(deadlockCheckAfter))) // the check's time, not a synchronization
		c.r.sync.lose(c.first)
		select {
		case sy := <-done:
			if !sy.lostDep || sy.giveUp != "" {
				t.Fatalf("try %d: the wait ended %+v: want a lost dependency", try, sy)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("try %d: the wait did not end once its commit was lost", try)
		}
	}
}
