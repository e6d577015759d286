package replay

import (
	"context"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// A portal read in batches (JDBC's fetch size, an asyncpg cursor): the
// original's first Execute had a row limit and was answered
// PortalSuspended, and each later Execute on the portal (a Fetch event,
// event.Wire.Fetch) returned the next batch, without a new Bind. That is
// one statement, as pg_stat_statements counts it, whose rows are the sum
// of its batches. The replay sends the same messages (the same limit, on
// the portal the original named, Execute without Bind for each Fetch);
// it counts the statement once, at its first Execute, adds each batch's
// rows to it, and compares its answer with the original's once, when the
// original's last batch is replayed: the sums of the rows of both sides,
// and how it ended (an error on one side only).

// openFetch is a statement whose portal the original left suspended,
// whose answer is compared when its last batch is replayed.
type openFetch struct {
	item fingerprint.Item
	// query is the execution's text, which a differing answer's cause
	// reads (answerCause).
	query string
	// The rows of the batches replayed so far, the original's and the
	// target's.
	origRows, rows int64
	// How the original's and the target's batches ended: failed, and
	// the error's SQLSTATE.
	origFailed, failed bool
	origCode, code     string
	// note is the execution, kept if its answer differs
	// (Options.KeepAnswers); nil when not asked.
	note *results.DifferingAnswer
}

// startFetch keeps the answer of an execution whose original was
// suspended at its row limit, to compare once its last batch ran. It is
// called by record, with the shard's lock held.
func (s *session) startFetch(ev *event.Event, item fingerprint.Item, ans *event.Answer, rows []int64) {
	if s.fetches == nil {
		s.fetches = map[string]*openFetch{}
	}
	if old := s.fetches[ev.Portal()]; old != nil {
		// The original bound the portal anew: its last run ended.
		s.endFetchLocked(old)
	}
	f := &openFetch{item: item, query: ev.Query, note: s.answerNote(ev, []fingerprint.Item{item}, answerTally{})}
	if len(ans.Rows) > 0 {
		f.origRows = ans.Rows[0]
	}
	if len(rows) > 0 {
		f.rows = rows[0]
	}
	s.fetches[ev.Portal()] = f
}

// fetch replays a Fetch event: the next batch of a suspended portal.
// It is no statement of its own (see above): not counted among the
// statements, its rows add to its statement's.
func (s *session) fetch(it item, t *time.Timer) {
	r := s.r
	ev := it.ev
	f := s.fetches[ev.Portal()]
	if f == nil || r.opts.DryRun || s.skipTx != "" || s.failReason != "" || s.conn == nil || s.conn.IsClosed() {
		// Its statement was not run, or failed, or was not suspended
		// in the original (or its connection is gone): no portal to
		// continue, and an Execute of none would abort the
		// transaction block on the target.
		return
	}
	if !s.waitDue(it, t) {
		return
	}
	_, _, err := s.exec(ev, time.Now())
	if err != nil && r.hardDone.Load() {
		if s.conn.IsClosed() {
			s.dropConn()
		}
		return
	}
	var te targetError
	if err != nil {
		te = classifyError(err, s.conn)
		if te.lost {
			s.dropConn()
			s.lost, s.lostAt = true, time.Now()
		}
	}
	s.blame(&te, err != nil, ev)
	sh := s.shard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ans := ev.Answer()
	if ans != nil && len(ans.Rows) > 0 {
		f.origRows += ans.Rows[0]
	}
	if len(s.w.rows) > 0 && err == nil {
		f.rows += s.w.rows[0]
		sh.set.Slot(f.item.Fingerprint, f.item.Query).Rows += s.w.rows[0]
	}
	if ev.Failed {
		f.origFailed, f.origCode = true, ev.SQLState
	}
	if err != nil {
		f.failed, f.code = true, te.code
	}
	if ans == nil || !ans.Suspended || err != nil {
		// The original's last batch (or an error ended the portal).
		s.endFetchLocked(f)
		delete(s.fetches, ev.Portal())
	}
}

// endFetches compares the answers of the statements whose last batch
// never came (the original left the portal, or its session ended).
func (s *session) endFetches() {
	if len(s.fetches) == 0 {
		return
	}
	s.shard.mu.Lock()
	for _, f := range s.fetches {
		s.endFetchLocked(f)
	}
	s.shard.mu.Unlock()
	s.fetches = nil
}

// endFetchLocked compares a read-in-batches statement's answer with the
// original's, with the shard's lock held.
func (s *session) endFetchLocked(f *openFetch) {
	d := querystats.AnswerSame
	switch {
	case f.failed && !f.origFailed:
		d = querystats.AnswerErrorOnlyOnTarget
	case f.origFailed && !f.failed:
		d = querystats.AnswerErrorOnlyInOriginal
	case f.failed && f.origCode != "" && f.code != f.origCode:
		d = querystats.AnswerOtherSQLState
	case !f.failed && f.rows != f.origRows:
		d = querystats.AnswerRows
	}
	st := s.shard.set.Slot(f.item.Fingerprint, f.item.Query)
	st.RecordAnswer(d)
	s.r.c.answered.Add(1)
	if d != querystats.AnswerSame {
		s.r.c.answerDiffers.Add(1)
		// Explained or not, as any differing answer is, so that the
		// differing answers are the explained ones plus the rest.
		cause, what := answerCause(d, f.item, f.query, nil)
		if cause != "" {
			st.ExplainAnswer(cause, what)
		}
		if f.note != nil {
			f.note.Diff = d
		}
		s.r.countAnswer(f.note, cause, nil, "")
	}
}

// cancelTimeout bounds the sending of a replayed CancelRequest.
const cancelTimeout = 10 * time.Second

// armCancel sends the server a CancelRequest for the execution started
// at start, after as long as the original client waited before it sent
// its own (event.Wire.CancelAfter): the replayed statement is cancelled
// as late as the original was. The returned function, called once the
// execution's answer is read, stops the timer, or waits for a request
// already under way, so that it cannot reach the session's next
// statement.
func (s *session) armCancel(start time.Time, after int64) func() {
	conn := s.conn
	done := make(chan struct{})
	timer := time.AfterFunc(time.Until(start.Add(time.Duration(after)*time.Microsecond)), func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		defer cancel()
		// An error (the server gone) leaves the statement to end as
		// it will; its outcome says it was not cancelled.
		conn.CancelRequest(ctx)
	})
	return func() {
		if timer.Stop() {
			return
		}
		s.block(func() { <-done })
	}
}
