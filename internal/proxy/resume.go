package proxy

import (
	"maps"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/proxy/midstream"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// Default bounds of the state the proxy keeps per session so that a
// recording can take it up from the middle (Config.ResumeSessions).
const (
	DefaultStateItems = midstream.DefaultItems
	DefaultStateBytes = midstream.DefaultBytes
)

// NotResumed says why a session open when a recording started is not in
// it.
type NotResumed string

const (
	// NotResumedUntracked: the proxy keeps no session state
	// (Config.ResumeSessions unset).
	NotResumedUntracked NotResumed = "session_state_not_kept"
	// NotResumedTooLarge: its state outgrew the proxy's bounds, or
	// could not be known (settings changed in a transaction rolled
	// back to a savepoint).
	NotResumedTooLarge NotResumed = "session_state_unknown"
	// NotResumedNeverIdle: it was inside a transaction or had a request
	// in flight from the start to the end of the recording.
	NotResumedNeverIdle NotResumed = "never_idle_while_recording"
	// NotResumedEnded: it ended before its next idle point.
	NotResumedEnded NotResumed = "ended_before_idle"
)

// ResumeCounts count what became of the sessions open when a recording
// started.
type ResumeCounts struct {
	// Resumed are the sessions taken up from the middle, Late those of
	// them that were inside a transaction or had a request in flight at
	// the start, taken up at their next idle point; Skipped the
	// messages those sent before it (relayed, not recorded), by why
	// they were not idle. Waiting are the sessions still waiting for
	// their idle point.
	Resumed, Late, Waiting int64
	Skipped                map[capture.ResumeSkip]int64
	// NotRecorded counts the sessions not in the recording, by why;
	// Reason gives, for NotResumedTooLarge, the first session's own
	// reason.
	NotRecorded map[NotResumed]int64
	Reason      string
}

func (c *ResumeCounts) notRecorded() int64 {
	var n int64
	for _, v := range c.NotRecorded {
		n += v
	}
	return n
}

func (c ResumeCounts) clone() ResumeCounts {
	c.Skipped = maps.Clone(c.Skipped)
	c.NotRecorded = maps.Clone(c.NotRecorded)
	return c
}

// Resumes counts what became of the sessions open when the latest
// recording (current or detached) started.
func (p *Proxy) Resumes() ResumeCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.last.Load()
	if b == nil {
		return ResumeCounts{}
	}
	return b.resumes.clone()
}

// notResumed counts a session left out of b. p.mu is held.
func (b *binding) notResumed(why NotResumed) {
	if b.resumes.NotRecorded == nil {
		b.resumes.NotRecorded = map[NotResumed]int64{}
	}
	b.resumes.NotRecorded[why]++
}

// gaveUp counts a session that waited for its idle point to be taken up
// into b, and will not be. p.mu is held.
func (b *binding) gaveUp(why NotResumed) {
	b.resumes.Waiting--
	b.notResumed(why)
}

// resumeAtAttach takes s, open and unbound, up into b: at once when it
// is idle, else at its next idle point. p.mu is held.
func (s *session) resumeAtAttach(b *binding) {
	st := s.st
	if st == nil {
		b.notResumed(NotResumedUntracked)
		return
	}
	st.Lock()
	defer st.Unlock()
	if why := st.Unrecordable(); why != "" {
		if b.resumes.Reason == "" {
			b.resumes.Reason = why
		}
		b.notResumed(NotResumedTooLarge)
		return
	}
	st.Await()
	if st.Idle() {
		s.resumeLocked(b)
		return
	}
	b.resumes.Waiting++
	s.join.Store(b)
}

// resumeLocked records s's startup with its state into b and binds s to
// it: its records go there from now on. p.mu and s.st's lock are held.
func (s *session) resumeLocked(b *binding) {
	rs := s.st.Resume()
	if s.join.Swap(nil) == b {
		b.resumes.Waiting--
		b.resumes.Late++
		if rs.Skipped > 0 {
			if b.resumes.Skipped == nil {
				b.resumes.Skipped = map[capture.ResumeSkip]int64{}
			}
			b.resumes.Skipped[rs.SkipReason] += rs.Skipped
		}
	}
	b.resumes.Resumed++
	b.sink.Add(s.startupRecord(rs))
	s.rec.Store(b)
}

// trackFrontend notes a client's message in the session's state, before
// it is recorded and forwarded; a recording waiting for the session's
// idle point takes it up first if it is idle, before this message.
func (s *session) trackFrontend(msg []byte) {
	st := s.st
	locked := s.join.Load() != nil
	switch msg[0] {
	case wire.CopyData, wire.CopyDone, wire.CopyFail, wire.Terminate:
		// COPY data and Terminate change no state; they count as
		// skipped while a recording waits for the session.
		if !locked {
			return
		}
	}
	if locked {
		s.p.mu.Lock()
		defer s.p.mu.Unlock()
	}
	st.Lock()
	defer st.Unlock()
	if b := s.join.Load(); b != nil {
		switch {
		case locked && st.Unrecordable() != "":
			s.join.Store(nil)
			b.gaveUp(NotResumedTooLarge)
		case locked && st.Idle():
			s.resumeLocked(b)
		default:
			st.Skip()
		}
	}
	st.Frontend(msg)
}

// trackBackend notes a server's answer in the session's state, after it
// is recorded and before it is forwarded; a recording waiting for the
// session's idle point takes it up after the answer that ends one: a
// ReadyForQuery, or the last answer to extended-protocol messages the
// client has not yet followed by a Sync (midstream.State.Idle).
func (s *session) trackBackend(typ byte, body []byte) {
	st := s.st
	locked := s.join.Load() != nil
	switch typ {
	case wire.ReadyForQuery, wire.ParseComplete, wire.CloseComplete, wire.RowDescription, wire.NoData:
	default:
		locked = false
	}
	if locked {
		s.p.mu.Lock()
		defer s.p.mu.Unlock()
	}
	st.Lock()
	defer st.Unlock()
	st.Backend(typ, body)
	if !locked {
		return
	}
	if b := s.join.Load(); b != nil {
		switch {
		case st.Unrecordable() != "":
			s.join.Store(nil)
			b.gaveUp(NotResumedTooLarge)
		case st.Idle():
			s.resumeLocked(b)
		}
	}
}
