package syncdep

import "testing"

// TestNotifyOrder: in every synchronized mode, a statement of a session
// listening on a channel, sent after another session's commit that
// notified the channel was sent, waits for that commit; one sent before
// it, a session not listening, another channel, a rolled-back NOTIFY and
// the notifier itself do not. pg_notify notifies every channel.
func TestNotifyOrder(t *testing.T) {
	for _, mode := range []Mode{Load, Object, Commit} {
		tr := newAdvShop(mode)
		b := tr.Board()
		n, l, o := tr.Session("shop", "notifier"), tr.Session("shop", "listener"), tr.Session("shop", "other")
		run(l, ms(1), ms(1), "LISTEN jobs")
		run(n, ms(2), ms(2), "BEGIN")
		run(n, ms(3), ms(3), "INSERT INTO orders VALUES (1)")
		run(n, ms(4), ms(4), "NOTIFY jobs")
		// Before the COMMIT was sent: no wait on it.
		if got := b.Blocker(run(l, ms(5), ms(5), "SELECT 1").Wait); got != nil {
			t.Errorf("%s: a statement before the COMMIT waits for %v", mode, got)
		}
		c := run(n, ms(6), ms(8), "COMMIT")
		if c.Commit == nil {
			t.Fatalf("%s: the notifying COMMIT has no Txn", mode)
		}
		// The listener got the notification before the COMMIT's
		// answer: its read of the row waits for the COMMIT, in load
		// mode too.
		if got := b.Blocker(run(l, ms(7), ms(7), "SELECT * FROM shipments").Wait); got != c.Commit {
			t.Errorf("%s: the listener's statement waits for %v, want the notifying COMMIT", mode, got)
		}
		if got := b.Blocker(run(o, ms(7), ms(7), "SELECT 1").Wait); got != nil {
			t.Errorf("%s: a session not listening waits for %v", mode, got)
		}
		// (In commit mode every statement waits for every commit.)
		if got := b.Blocker(run(n, ms(9), ms(9), "SELECT 1").Wait); got != nil && mode != Commit {
			t.Errorf("%s: the notifier waits for %v", mode, got)
		}
		c.Commit.Done()
		// A NOTIFY rolled back, and another channel, are waited for
		// by nothing; an autocommit NOTIFY and pg_notify are.
		run(n, ms(10), ms(10), "BEGIN")
		run(n, ms(11), ms(11), "NOTIFY jobs")
		run(n, ms(12), ms(12), "ROLLBACK")
		// A block that failed: its COMMIT rolls back the NOTIFY.
		run(n, ms(12), ms(12), "BEGIN")
		run(n, ms(12), ms(12), "NOTIFY jobs")
		run(n, ms(12), ms(12), "SELECT 1/0", true)
		run(n, ms(12), ms(12), "COMMIT")
		run(n, ms(13), ms(13), "NOTIFY other")
		if got := b.Blocker(run(l, ms(14), ms(14), "SELECT 1").Wait); got != nil {
			t.Errorf("%s: the listener waits for %v after a rollback and another channel", mode, got)
		}
		auto := run(n, ms(15), ms(15), "NOTIFY jobs")
		pn := run(o, ms(15), ms(15), "SELECT pg_notify('x', 'y')")
		w := run(l, ms(16), ms(16), "SELECT 1").Wait
		if got := b.Blocker(w); got != auto.Commit || got == nil {
			t.Errorf("%s: the listener waits for %v, want the autocommit NOTIFY", mode, got)
		}
		auto.Commit.Done()
		if got := b.Blocker(w); got != pn.Commit || got == nil {
			t.Errorf("%s: the listener waits for %v, want the pg_notify", mode, got)
		}
		pn.Commit.Done()
		// UNLISTEN *: no more waits.
		run(l, ms(17), ms(17), "UNLISTEN *")
		run(n, ms(18), ms(18), "NOTIFY jobs")
		if got := b.Blocker(run(l, ms(19), ms(19), "SELECT 1").Wait); got != nil {
			t.Errorf("%s: after UNLISTEN * the session waits for %v", mode, got)
		}
	}
}
