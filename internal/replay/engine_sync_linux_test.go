//go:build linux

package replay

import (
	"context"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestSyncWaitParkedWokenLate: a session parked on the engine for the
// first of two commits, whose wake for that commit and whose
// deadlock-check timer both come while the engine is held up by another
// session (a busy machine), then waits for the second commit, which never
// comes (a deadlock with a row lock, or a lost session): it still gives
// up at the sync timeout. Before, the timer's wake was one with the
// commit's (a session is queued once), the session parked for the second
// commit with no timer left, and it waited for good: a speed-0 replay of
// internal/cli's TestCaptureRacesExplained hung until its 5-minute limit
// cut it, most of its statements uncompared (issue 44). The engine's
// hold-up is forced; only the timer's firing within it is the machine's,
// and a timer that fired after it makes the test pass without looking.
func TestSyncWaitParkedWokenLate(t *testing.T) {
	functionalCase(t)
	tr := syncdep.NewTracker(syncdep.Commit)
	writer := tr.Session("db", "writer")
	first := trackAt(writer, 10, "INSERT INTO t VALUES (1)").Commit
	second := trackAt(writer, 20, "INSERT INTO t VALUES (2)").Commit
	wait := trackAt(tr.Session("db", "reader"), 30, "SELECT * FROM t").Wait
	if first == nil || second == nil || tr.Board().Blocker(wait) != first {
		t.Fatalf("the read does not wait for the first insert's commit: commits %v %v", first, second)
	}
	e := newEngine()
	if e == nil {
		t.Fatal("no engine on this system")
	}
	defer e.close()
	const timeout = 300 * time.Millisecond
	stop := make(chan struct{})
	defer func() {
		// A session left parked (the failure) is woken to stop.
		close(stop)
		e.wakeAll()
	}()
	r := &Replayer{stopCh: stop, hard: context.Background(),
		sync: &syncRun{timeout: timeout, board: tr.Board(), waits: results.NewRecorder(), causes: map[string]int64{}}}
	s := &session{r: r, board: tr.Board()}
	done := make(chan synced, 1)
	e.start(func(tk *task) {
		s.task = tk
		// Queued now, run once the session parked: it holds the
		// engine while the commit's wake and the check's timer come.
		began := time.Now()
		e.start(func(*task) {
			first.Done()
			time.Sleep(time.Until(began.Add(3 * deadlockCheckAfter)))
		})
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		sy, _ := s.syncWaitParked(s.syncBoard().LostMark(), wait, nil, timer)
		done <- sy
	})
	select {
	case sy := <-done:
		if sy.giveUp != SyncTimeout || sy.wait < timeout {
			t.Errorf("the wait ended after %v, given up %q: want the %v timeout", sy.wait, sy.giveUp, timeout)
		}
	case <-time.After(timeout + 30*time.Second):
		t.Fatalf("the wait for a commit that never comes did not end at its %v timeout", timeout)
	}
}

// TestSyncWaitParkedLostWhileWaitingForAnother is
// TestSyncWaitLostWhileWaitingForAnother for a session parked on the
// engine (or handed over to syncWaitFrom once its wait lasted
// deadlockCheckAfter: both must tell the loss).
func TestSyncWaitParkedLostWhileWaitingForAnother(t *testing.T) {
	functionalCase(t)
	c := newLostWaitCase(t)
	e := newEngine()
	if e == nil {
		t.Fatal("no engine on this system")
	}
	defer e.close()
	defer e.wakeAll() // a session left parked (the failure) is woken to stop
	done := make(chan synced, 1)
	e.start(func(tk *task) {
		c.s.task = tk
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		sy, _ := c.s.syncWaitParked(c.s.syncBoard().LostMark(), c.wait, nil, timer)
		done <- sy
	})
	c.loseSecond(t, done)
}
