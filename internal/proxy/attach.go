package proxy

import (
	"cmp"
	"errors"
	"runtime"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capture"
)

// ErrAttached is returned by Attach while a sink is attached: a proxy
// records into one sink at a time.
var ErrAttached = errors.New("proxy: a sink is attached already")

// binding is one attachment of a sink. A session is bound to the
// attachment current when its KindStartup is emitted and records into it
// until it ends or the attachment is detached; a session that started
// before is taken up from the middle (resume.go), or gives it nothing.
type binding struct {
	sink capture.Sink
	// The resumes of the sessions open when it was attached; guarded
	// by Proxy.mu.
	resumes ResumeCounts
}

// Attach starts recording into sink: every session that starts from now
// on is recorded into it, until Detach. The sessions open already are
// taken up from the middle with Config.ResumeSessions: an idle one at
// once, one inside a transaction or with a request in flight at its
// next idle point (ReadyForQuery 'I'), each with a KindStartup that
// carries its state (capture.Resume); Resumes counts them. It returns
// how many open sessions it cannot take up (none kept, or past its
// bounds): they are relayed as before but not recorded.
//
// Attaching never touches a connection: the relay reads one atomic
// pointer per message to know where its records go.
func (p *Proxy) Attach(sink capture.Sink) (openBefore int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur.Load() != nil {
		return 0, ErrAttached
	}
	// Sessions bind under p.mu (emitStartup): each open session either
	// bound already, and is taken up or counted here, or binds to sink.
	b := &binding{sink: sink}
	p.cur.Store(b)
	p.last.Store(b)
	sessions := p.sessionsLocked()
	slices.SortFunc(sessions, func(x, y *session) int { return cmp.Compare(x.id, y.id) })
	for _, s := range sessions {
		if s.bindDone {
			s.resumeAtAttach(b)
		}
	}
	return b.resumes.notRecorded(), nil
}

// Detach stops recording into the attached sink, if any: the sessions
// bound to it and still open get a KindEnd with capture.EndOpen, after
// which no record reaches the sink from the proxy. The connections are
// relayed on, unrecorded. It returns how many sessions it recorded as
// open.
func (p *Proxy) Detach() (open int64) {
	p.mu.Lock()
	b := p.cur.Swap(nil)
	var bound []*session
	if b != nil {
		for _, s := range p.sessionsLocked() {
			if s.rec.Load() == b {
				bound = append(bound, s)
			}
			if s.join.Load() == b {
				// Never idle while recording: not taken up.
				s.join.Store(nil)
				b.gaveUp(NotResumedNeverIdle)
			}
		}
	}
	p.mu.Unlock()
	if b == nil {
		return 0
	}
	slices.SortFunc(bound, func(x, y *session) int { return cmp.Compare(x.id, y.id) })
	now := time.Now().UnixMicro()
	for _, s := range bound {
		// A session that ended meanwhile wrote its own KindEnd and
		// unbound itself.
		if !s.rec.CompareAndSwap(b, nil) {
			continue
		}
		s.quiesce()
		b.sink.Add(capture.Record{Kind: capture.KindEnd, Session: s.id, Time: now, End: capture.EndOpen})
		open++
	}
	return open
}

// add records r into the sink the session is bound to, if any. busy
// tells Detach that a record may be on its way to the sink, so that the
// session's KindEnd comes after its last record.
func (s *session) add(r capture.Record) {
	s.busy.Add(1)
	if b := s.rec.Load(); b != nil {
		b.sink.Add(r)
	} else {
		s.p.unrecorded.Add(1)
	}
	s.busy.Add(-1)
}

// quiesce waits until no add of s is under way: once s is unbound, one
// that loaded the binding before finishes within one Sink.Add, which
// never blocks.
func (s *session) quiesce() {
	for s.busy.Load() != 0 {
		runtime.Gosched()
	}
}

// bind binds the session to the attachment current now. The caller holds
// p.mu.
func (s *session) bind() {
	s.rec.Store(s.p.cur.Load())
	s.bindDone = true
}

// sessionsLocked returns the sessions of the open connections. The
// caller holds p.mu.
func (p *Proxy) sessionsLocked() []*session {
	out := make([]*session, 0, len(p.links))
	for l := range p.links {
		l.mu.Lock()
		s := l.sess
		l.mu.Unlock()
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}
