package syncdep

import (
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// Notifications (LISTEN/NOTIFY) order sessions too: a listener that ran
// a statement because a notification came (a job queue's worker reading
// the job the notifier just inserted) must not run it on the target
// before the notifier's commit, which delivered the notification. The
// input does not say which statement followed a notification (a log
// never shows one, and a capture does not record them), so every
// statement of a session listening on a channel, sent after another
// session's commit that notified that channel was sent (its COMMIT, or
// the NOTIFY itself outside a block), waits for that commit to have run
// on the target: more waiting than the notification made, never less,
// and only in the commit's own interval beyond what the statement
// waits for anyway. A pg_notify call's channel is not read from its
// text: it counts as notifying every channel. In every synchronized
// mode: a read in load mode that followed a notification reads what the
// notifier made, as the application's did.

// notified is a commit that notified a channel: the Txn the replay marks
// once it ran, when its COMMIT started in the log, and its session.
type notified struct {
	tx    *Txn
	start int64
	s     *Session
}

// maxNotified bounds the commits kept per channel; beyond it the oldest
// are let go (their listeners' statements no longer wait for them).
const maxNotified = 256

// anyChannel is the key, in Tracker.notified, of the commits that
// notified a channel the text did not give (pg_notify).
const anyChannel = "\x00any"

// notification reads a statement's LISTEN, UNLISTEN or NOTIFY.
func (s *Session) notification(n *fingerprint.Notification) {
	switch n.Op {
	case fingerprint.Listen:
		if s.listens == nil {
			s.listens = map[string]bool{}
		}
		s.listens[n.Channel] = true
	case fingerprint.Unlisten:
		if n.Channel == "" {
			clear(s.listens)
		} else {
			delete(s.listens, n.Channel)
		}
	case fingerprint.Notify:
		ch := n.Channel
		if ch == "" {
			ch = anyChannel
		}
		if !slices.Contains(s.notifying, ch) {
			s.notifying = append(s.notifying, ch)
		}
	}
}

// notifyEnd finishes event e for notifications: a listener's event waits
// for the notifying commits of other sessions sent before it started;
// the event that committed what notified (s.notifyCommit, or the event
// itself outside a block) is recorded as such, with step.Commit as its
// mark, made when it commits nothing else.
func (s *Session) notifyEnd(e *Exec, step *Step) {
	t := s.t
	if len(s.listens) > 0 {
		for ch := range s.listens {
			s.awaitNotified(t.notified[ch], e.Start, step)
		}
		s.awaitNotified(t.notified[anyChannel], e.Start, step)
	}
	committed := !e.Failed && (s.notifyCommit || !s.inBlock)
	s.notifyCommit = false
	if len(s.notifying) == 0 {
		return
	}
	if !committed {
		if !s.inBlock {
			s.notifying = s.notifying[:0] // rolled back
		}
		return
	}
	if step.Commit == nil {
		step.Commit = &Txn{b: t.board, at: e.End, owner: s.owner}
	}
	if t.notified == nil {
		t.notified = map[string][]notified{}
	}
	for _, ch := range s.notifying {
		l := slices.DeleteFunc(t.notified[ch], func(n notified) bool { return n.tx.Ran() })
		if len(l) >= maxNotified {
			l = slices.Delete(l, 0, len(l)-maxNotified+1)
		}
		t.notified[ch] = append(l, notified{tx: step.Commit, start: e.Start, s: s})
	}
	s.notifying = s.notifying[:0]
}

// notifyCommitted reads a COMMIT of the session's block: it commits
// what the block notified, or, of a block that failed, rolls it back.
func (s *Session) notifyCommitted() {
	if s.aborted {
		s.notifying = s.notifying[:0]
		return
	}
	s.notifyCommit = true
}

// awaitNotified makes the event being read, which started at start,
// wait for the commits of l of other sessions sent before it.
func (s *Session) awaitNotified(l []notified, start int64, step *Step) {
	for _, n := range l {
		if n.s != s && n.start <= start && !n.tx.Ran() {
			step.Wait.addRow(n.tx)
		}
	}
}
