package syncdep

import (
	"slices"
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// Advisory locks (pg_advisory_lock and its forms) order sessions as row
// locks do, but the server alone knows them: at speed 0 a session that
// took a lock after another in the original may reach the server first
// and take it, and the two then run in the reverse order (or one waits
// in the replayer for the other's commit while holding the lock the
// other is blocked on). So, in every synchronized mode, the Tracker
// follows each lock whose key the statement's text or parameters give,
// session by session, in the log's order:
//
//   - a call that waits for the lock (pg_advisory_lock...) waits in the
//     replayer until each conflicting holding of another session that
//     came before it in the log has been taken on the target (the event
//     that took it ran): the server then holds it until that session
//     releases, as in the original. Where that holding was released
//     before in the log, it waits for the release instead;
//   - a try (pg_try_advisory_lock...) that got the lock in the original
//     waits as a blocking call does for holdings released before it
//     (their release ran), so that it finds the lock free;
//   - a try that did not get it waits until the holding it met has been
//     taken, and the release of that holding waits until the try ran, so
//     that the try meets the lock held, as in the original;
//   - shared holdings conflict only with exclusive ones.
//
// Which a try got is read from the capture's answer (its one row's digest
// against those of true and false), or, without one (a log), from the
// holdings followed. A lock is released by pg_advisory_unlock (once per
// time it was taken), pg_advisory_unlock_all, the end of the transaction
// for the _xact forms (PREPARE TRANSACTION counts as that end), or the
// session's end, which no event marks: a holding released so is waited
// for by its taking only. Keys read from a column or an expression are
// left to the server and counted (Tracker.AdvisoryUnread).

// advLock is the state of one advisory lock (a key of a database): its
// holdings in the log's order of asking, those not released and, until
// an exclusive one asks after them, those released.
type advLock struct {
	holds []*advHold
}

// advHold is one session's holding of a lock: asked for, and then taken
// n times, not yet released as many; shared: in share mode; behind: the
// conflicting holdings not yet released when it asked, which it waited
// behind on the server; got is the event that took it (it ran once the
// lock was granted), rel the one that released it (nil while held, and
// after the session's end), tries the failed tries of other sessions
// that met it, which its release waits for.
type advHold struct {
	s            *Session
	n            int
	shared, xact bool
	released     bool
	behind       []*advHold
	got, rel     *Txn
	tries        []*Txn
}

// holding reports whether h held the lock at this point of the log: it
// was not released, and everything it waited behind was.
func (h *advHold) holding() bool {
	return !h.released && !slices.ContainsFunc(h.behind, func(b *advHold) bool { return !b.released })
}

// conflicts reports whether h conflicts with a call of session s in a
// mode (shared or not): another session's, one of the two exclusive.
func (h *advHold) conflicts(s *Session, shared bool) bool {
	return h.s != s && !(shared && h.shared)
}

// advPend is a holding the event being read took (what: advGot),
// released (advRel), or met with a failed try (advTry): its mark, the
// event's Step.Commit, is set once the event is read.
type advPend struct {
	h    *advHold
	what uint8
}

const (
	advGot uint8 = iota
	advRel
	advTry
)

// AdvisoryUnread counts the advisory-lock calls read so far whose key
// neither the statement's text nor its logged parameters give (a column,
// an expression, a parameter not logged, several statements in one
// string): the server alone ordered them.
func (t *Tracker) AdvisoryUnread() int64 { return t.advUnread }

// advisory reads the advisory-lock calls of one statement of event e
// into the session's holdings and what the event waits for (advWaits,
// into its Step by advEnd).
func (s *Session) advisory(calls []fingerprint.Advisory, e *Exec) {
	for _, a := range calls {
		if a.Op == fingerprint.AdvisoryUnlockAll {
			s.advRelease(func(h *advHold) bool { return !h.xact })
			continue
		}
		key, ok := s.advKey(a, e)
		if !ok {
			s.t.advUnread++
			continue
		}
		switch a.Op {
		case fingerprint.AdvisoryLock:
			s.advAcquire(key, a)
		case fingerprint.AdvisoryTry:
			got, known := tryAnswer(e, len(calls))
			if !known {
				got = len(s.holders(key, a.Shared)) == 0
			}
			if got {
				s.advAcquire(key, a)
			} else {
				s.advTryFailed(key, a)
			}
		case fingerprint.AdvisoryUnlock:
			s.advUnlock(key, a.Shared)
		}
	}
}

// advKey is the lock's key as e gives it, within the session's database;
// false when the text or the logged parameters do not give it.
func (s *Session) advKey(a fingerprint.Advisory, e *Exec) (string, bool) {
	if len(a.Key) == 0 {
		return "", false
	}
	k := s.db.prefix + strconv.Itoa(len(a.Key))
	for _, arg := range a.Key {
		v, ok := arg.Value, arg.Const
		if !ok {
			v, ok = paramInt(e, arg.Param)
		}
		if !ok {
			return "", false
		}
		k += ":" + strconv.FormatInt(v, 10)
	}
	return k, true
}

// tryAnswer reads whether the one try of e (calls: the advisory calls
// of its statement) got the lock in the original, from the capture's
// answer (Exec.Answer). known is false without one.
func tryAnswer(e *Exec, calls int) (got, known bool) {
	if calls != 1 || len(e.Items) != 1 || e.Answer == AnswerUnknown {
		return false, false
	}
	return e.Answer == AnswerTrue, true
}

// AnswerBool is an execution's answer, where it was one boolean.
type AnswerBool uint8

const (
	// AnswerUnknown: no answer recorded (a log), or not one boolean.
	AnswerUnknown AnswerBool = iota
	AnswerTrue
	AnswerFalse
)

// lock returns the state of key, made when new.
// lock returns the state of key, made when new.
func (t *Tracker) lock(key string) *advLock {
	l := t.adv[key]
	if l == nil {
		t.advSweep()
		l = &advLock{}
		t.adv[key] = l
	}
	return l
}

// holders returns the holdings of other sessions that held key at this
// point of the log and conflict with a call in mode shared.
func (s *Session) holders(key string, shared bool) []*advHold {
	l := s.t.adv[key]
	if l == nil {
		return nil
	}
	var out []*advHold
	for _, h := range l.holds {
		if h.conflicts(s, shared) && h.holding() {
			out = append(out, h)
		}
	}
	return out
}

// advAcquire reads a call that took key (a blocking one, or a try that
// got it): it waits for each conflicting holding asked before it, until
// it was taken if not released, or released if it was.
func (s *Session) advAcquire(key string, a fingerprint.Advisory) {
	l := s.t.lock(key)
	if h := s.ownHold(l, a.Shared); h != nil {
		h.n++ // taken again: the server grants it at once
		return
	}
	h := &advHold{s: s, n: 1, shared: a.Shared, xact: a.Xact}
	for _, o := range l.holds {
		if !o.conflicts(s, a.Shared) {
			continue
		}
		switch {
		case o.released && o.rel != nil:
			s.advWait(o.rel)
		case o.got != nil:
			// Not released (the server holds this call until it
			// is), or released by its session's end.
			s.advWait(o.got)
		}
		if !o.released {
			h.behind = append(h.behind, o)
		}
	}
	// Released holdings an exclusive one waited for are waited for by
	// what comes after it through it; those that ran wait for nothing.
	l.holds = append(slices.DeleteFunc(l.holds, func(o *advHold) bool {
		return o.released && (!a.Shared || advDone(o))
	}), h)
	s.advHeld = append(s.advHeld, h)
	s.advPend = append(s.advPend, advPend{h: h, what: advGot})
}

// ownHold is the session's own holding of l in the mode asked, nil when
// it holds none.
func (s *Session) ownHold(l *advLock, shared bool) *advHold {
	for _, h := range l.holds {
		if h.s == s && h.shared == shared && !h.released {
			return h
		}
	}
	return nil
}

// advTryFailed reads a try that did not get key: it waits for the
// holdings it met to have been taken, and their release for it.
func (s *Session) advTryFailed(key string, a fingerprint.Advisory) {
	for _, h := range s.holders(key, a.Shared) {
		if h.got != nil {
			s.advWait(h.got)
		}
		s.advPend = append(s.advPend, advPend{h: h, what: advTry})
	}
}

// advUnlock reads a pg_advisory_unlock of key (shared or not) by the
// session: the holding is released once unlocked as many times as taken.
func (s *Session) advUnlock(key string, shared bool) {
	l := s.t.adv[key]
	if l == nil {
		return
	}
	if h := s.ownHold(l, shared); h != nil && !h.xact {
		if h.n--; h.n == 0 {
			s.advRelease(func(x *advHold) bool { return x == h })
		}
	}
}

// advRelease releases the session's holdings that match: the event being
// read is their release, and waits for the failed tries that met them.
func (s *Session) advRelease(match func(*advHold) bool) {
	kept := s.advHeld[:0]
	for _, h := range s.advHeld {
		if !match(h) {
			kept = append(kept, h)
			continue
		}
		h.n, h.released = 0, true
		for _, tr := range h.tries {
			s.advWait(tr)
		}
		h.tries = nil
		s.advPend = append(s.advPend, advPend{h: h, what: advRel})
	}
	clear(s.advHeld[len(kept):])
	s.advHeld = kept
}

// advEnd finishes the event being read: its transaction-level locks are
// released when it left the session outside a transaction block, and
// the holdings it took, released or met get its mark: step.Commit, made
// for it when it commits nothing.
func (s *Session) advEnd(e *Exec, step *Step) {
	if !s.inBlock && len(s.advHeld) > 0 {
		s.advRelease(advXact)
	}
	for _, w := range s.advWaits {
		step.Wait.addRow(w)
	}
	clear(s.advWaits)
	s.advWaits = s.advWaits[:0]
	if len(s.advPend) == 0 {
		return
	}
	if step.Commit == nil {
		step.Commit = &Txn{b: s.t.board, at: e.End, owner: s.owner}
	}
	for _, p := range s.advPend {
		switch p.what {
		case advGot:
			p.h.got = step.Commit
		case advRel:
			p.h.rel = step.Commit
		case advTry:
			if !p.h.released {
				p.h.tries = append(p.h.tries, step.Commit)
			}
		}
	}
	clear(s.advPend)
	s.advPend = s.advPend[:0]
}

// advWait makes the event being read wait until tx ran on the target.
func (s *Session) advWait(tx *Txn) {
	if !tx.Ran() {
		s.advWaits = append(s.advWaits, tx)
	}
}

// advSessionEnd releases the session's holdings at its end, which no
// event marks.
func (s *Session) advSessionEnd() {
	for _, h := range s.advHeld {
		h.n, h.released, h.tries = 0, true, nil
	}
	s.advHeld, s.advPend, s.advWaits = nil, nil, nil
}

// maxAdvLocks is how many locks the Tracker follows before it lets go of
// those whose holdings were all released and ran.
const maxAdvLocks = 1 << 12

// advSweep lets go of the locks no holding keeps, once there are many.
func (t *Tracker) advSweep() {
	if len(t.adv) < t.advKept+maxAdvLocks {
		return
	}
	for k, l := range t.adv {
		if !slices.ContainsFunc(l.holds, func(h *advHold) bool { return !advDone(h) }) {
			delete(t.adv, k)
		}
	}
	t.advKept = len(t.adv)
}

// advDone reports whether a holding was released and both its events
// ran: nothing waits for it any more.
func advDone(h *advHold) bool {
	return h.released && (h.rel == nil || h.rel.Ran()) && (h.got == nil || h.got.Ran())
}

// advXact matches the transaction-level holdings, which the end of the
// transaction releases.
func advXact(h *advHold) bool { return h.xact }
