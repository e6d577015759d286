package syncdep

import (
	"slices"
	"testing"
)

// try feeds a session a try of an advisory lock whose answer the
// capture holds.
func try(s *Session, at int64, sql string, got bool) Step {
	a := AnswerFalse
	if got {
		a = AnswerTrue
	}
	return s.Event(Exec{Start: at - 100, End: at, Items: cache.Get(sql), Text: sql, Answer: a})
}

// newAdvShop is newShop whose catalog has the advisory-lock functions
// among its builtins, as a server's has.
func newAdvShop(mode Mode) *Tracker {
	c := shopCatalog()
	c.Builtins = append(slices.Clip(c.Builtins), "hashtext", "pg_advisory_lock", "pg_advisory_lock_shared", "pg_advisory_xact_lock",
		"pg_try_advisory_lock", "pg_advisory_unlock", "pg_advisory_unlock_all", "pg_notify")
	tr := NewTracker(mode)
	tr.SetCatalog("shop", c)
	return tr
}

// TestAdvisoryOrder: in every synchronized mode, a session that took an
// advisory lock after another in the log waits until the other's taking
// ran on the target (the server then holds it until the release), or
// its release where it came before; each lock is followed by its key,
// from the text or a bind parameter, in its own key space.
func TestAdvisoryOrder(t *testing.T) {
	for _, mode := range []Mode{Load, Object, Commit} {
		tr := newAdvShop(mode)
		b := tr.Board()
		a, s2, s3 := tr.Session("shop", "a"), tr.Session("shop", "b"), tr.Session("shop", "c")
		la := run(a, ms(1), ms(1), "SELECT pg_advisory_lock(7)")
		if la.Commit == nil || la.Commit.Position() != 0 || !la.Wait.None() {
			t.Fatalf("%s: the first taking: %+v, want a mark of its run and no wait", mode, la)
		}
		// b asked while a held it: it waits for a's taking only.
		lb := runP(s2, ms(2), "SELECT pg_advisory_lock($1)", "7")
		if got := b.Blocker(lb.Wait); got != la.Commit {
			t.Fatalf("%s: b's lock waits for %v, want a's", mode, got)
		}
		// Another key, and the two-integer key space, are other locks.
		if st := run(s3, ms(2), ms(2), "SELECT pg_advisory_lock(8), pg_advisory_lock(0, 7)"); b.Blocker(st.Wait) != nil {
			t.Errorf("%s: another key waits", mode)
		}
		// a takes it again: its own, no wait.
		if st := run(a, ms(3), ms(3), "SELECT pg_advisory_lock(7)"); b.Blocker(st.Wait) != nil {
			t.Errorf("%s: a session waits for its own lock", mode)
		}
		ua := run(a, ms(4), ms(4), "SELECT pg_advisory_unlock(7), pg_advisory_unlock(7)")
		la.Commit.Done()
		if b.Blocker(lb.Wait) != nil {
			t.Errorf("%s: b still waits once a's lock ran", mode)
		}
		// c comes after a released it and b took it: it waits for
		// a's release, and for b's taking.
		lc := run(s3, ms(5), ms(5), "SELECT pg_advisory_lock(7)")
		if got := b.Blocker(lc.Wait); got != ua.Commit || ua.Commit == nil {
			t.Errorf("%s: c waits for %v, want a's release %v", mode, got, ua.Commit)
		}
		ua.Commit.Done()
		if got := b.Blocker(lc.Wait); got != lb.Commit || lb.Commit == nil {
			t.Errorf("%s: c waits for %v, want b's taking %v", mode, got, lb.Commit)
		}
		lb.Commit.Done()
		ub := run(s2, ms(6), ms(6), "SELECT pg_advisory_unlock(7)")
		lc.Commit.Done()
		uc := run(s3, ms(7), ms(7), "SELECT pg_advisory_unlock(7)")
		// After every release, a new taking waits for the releases
		// that an exclusive taking did not wait for before it.
		if got := b.Blocker(run(s2, ms(7), ms(7), "SELECT 1").Wait); got != nil {
			t.Errorf("%s: a statement without advisory locks waits for %v", mode, got)
		}
		ub.Commit.Done()
		la2 := run(a, ms(8), ms(8), "SELECT pg_advisory_lock(7)")
		if got := b.Blocker(la2.Wait); got != uc.Commit {
			t.Errorf("%s: a's new lock waits for %v, want c's release", mode, got)
		}
		for _, st := range []Step{uc, la2} {
			st.Commit.Done()
		}
		if tr.AdvisoryUnread() != 0 {
			t.Errorf("%s: %d keys unread", mode, tr.AdvisoryUnread())
		}
		// A key from an expression is left to the server, counted.
		if st := run(s3, ms(9), ms(9), "SELECT pg_advisory_lock(hashtext('jobs'))"); b.Blocker(st.Wait) != nil || tr.AdvisoryUnread() != 1 {
			t.Errorf("%s: an unread key waits, or is not counted (%d)", mode, tr.AdvisoryUnread())
		}
	}
}

// TestAdvisoryTry: a try that failed in the original waits until the
// holding it met was taken, and that holding's release waits for the
// try; a try that got the lock waits for the release before it. The
// answer is the capture's, or without one, the holdings followed.
func TestAdvisoryTry(t *testing.T) {
	for _, mode := range []Mode{Load, Object} {
		tr := newAdvShop(mode)
		b := tr.Board()
		a, c := tr.Session("shop", "a"), tr.Session("shop", "c")
		la := run(a, ms(1), ms(1), "SELECT pg_advisory_lock(7)")
		tc := try(c, ms(2), "SELECT pg_try_advisory_lock(7)", false)
		if got := b.Blocker(tc.Wait); got != la.Commit || tc.Commit == nil {
			t.Fatalf("%s: the failed try waits for %v, want a's taking", mode, got)
		}
		ua := run(a, ms(3), ms(3), "SELECT pg_advisory_unlock(7)")
		if got := b.Blocker(ua.Wait); got != tc.Commit {
			t.Errorf("%s: a's release waits for %v, want the failed try", mode, got)
		}
		la.Commit.Done()
		tc.Commit.Done()
		// A try that got it after the release waits for the release.
		tg := try(c, ms(4), "SELECT pg_try_advisory_lock(7)", true)
		if got := b.Blocker(tg.Wait); got != ua.Commit {
			t.Errorf("%s: the try that got it waits for %v, want a's release", mode, got)
		}
		ua.Commit.Done()
		// Without an answer (a log), the holdings say: c holds it, so
		// a's try failed, and c's release waits for it.
		ta := run(a, ms(5), ms(5), "SELECT pg_try_advisory_lock(7)")
		if got := b.Blocker(ta.Wait); got != tg.Commit {
			t.Errorf("%s: a's try waits for %v, want c's taking", mode, got)
		}
		if got := b.Blocker(run(c, ms(6), ms(6), "SELECT pg_advisory_unlock(7)").Wait); got != ta.Commit {
			t.Errorf("%s: c's release waits for %v, want a's failed try", mode, got)
		}
	}
}

// TestAdvisoryXactShared: a transaction-level lock is released by its
// transaction's end (COMMIT, or the statement itself outside a block);
// shared holdings wait for no other shared one, an exclusive for them
// all; a session's end releases its locks.
func TestAdvisoryXactShared(t *testing.T) {
	tr := newAdvShop(Object)
	b := tr.Board()
	a, s2, c := tr.Session("shop", "a"), tr.Session("shop", "b"), tr.Session("shop", "c")
	run(a, ms(1), ms(1), "BEGIN")
	la := run(a, ms(2), ms(2), "SELECT pg_advisory_xact_lock(5)")
	ca := run(a, ms(3), ms(3), "COMMIT")
	la.Commit.Done()
	if ca.Commit == nil {
		t.Fatal("the COMMIT that released the lock has no mark")
	}
	if got := b.Blocker(run(s2, ms(4), ms(4), "SELECT pg_advisory_xact_lock(5)").Wait); got != ca.Commit {
		t.Errorf("a lock after the release waits for %v, want the COMMIT", got)
	}
	// Shared: a and b together, c exclusive after both.
	sa := run(a, ms(5), ms(5), "SELECT pg_advisory_lock_shared(3)")
	sb := run(s2, ms(6), ms(6), "SELECT pg_advisory_lock_shared(3)")
	if got := b.Blocker(sb.Wait); got != nil {
		t.Errorf("a shared lock waits for %v", got)
	}
	xc := run(c, ms(7), ms(7), "SELECT pg_advisory_lock(3)")
	if got := b.Blocker(xc.Wait); got != sa.Commit {
		t.Errorf("the exclusive lock waits for %v first, want a's shared", got)
	}
	sa.Commit.Done()
	if got := b.Blocker(xc.Wait); got != sb.Commit {
		t.Errorf("the exclusive lock waits for %v next, want b's shared", got)
	}
	sb.Commit.Done()
	xc.Commit.Done()
	// c's session ends holding it: the next taking waits for c's.
	c.End()
	if got := b.Blocker(run(a, ms(8), ms(8), "SELECT pg_advisory_lock(3)").Wait); got != nil {
		t.Errorf("after the holder's end (its lock ran), a waits for %v", got)
	}
	if f := len(tr.adv); f != 2 {
		t.Errorf("%d locks followed, want 2", f)
	}
}
