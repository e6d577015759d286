package syncdep

// Answers mode: each statement at its original point among the commits.
//
// Object mode orders a statement after the commits that ended before it
// was sent in the original and wrote what it reads or writes (the
// forward direction). It does not hold a commit back for a statement of
// another session that ended before the commit was sent: on the target
// that statement, late in its own session, may then run after the commit
// and see rows it did not see in the original (a range read that finds a
// row inserted after it ran). Answers mode adds that reverse direction,
// as Oracle Database Replay's commit-based synchronization does not: a
// commit waits for every statement of another session that ended before
// the commit was sent in the original and read or wrote what the commit's
// transaction wrote (by row where both name their rows by key, as Race
// compares them). Both directions together leave unordered only the
// statements whose interval overlapped such a commit: those, and only
// those, can race (see endRing.raced and Tracker.ended).
//
// Cost: each session keeps its last answerSlots statements that touch a
// relation, with when they ended and a mark (a Txn not on the Board) that
// the replay marks Done once the statement ran. A commit looks, for each
// other session, from its newest statement back to the first that ended
// before the commit was sent and touched what it wrote, and stops at the
// first statement that already ran (the session's statements run in
// order, so those before it ran too): it waits for at most one statement
// per session, and the look costs O(sessions), not O(statements). When
// the slots do not reach back far enough, it waits for the newest
// statement that ended before the commit was sent (more waiting, never
// less): every wait points to a statement read before the commit, so
// waits never make a cycle.

// SetLocal tells, in Answers mode, which sessions' owners (given to
// Session) this process replays: unless FollowRemoteMarks, the statements
// of the others (another shard's, followed for their commits) get no
// mark, since nothing here would mark them run, and no commit waits for
// them; a commit and such a statement race as in Object mode (see
// Tracker.ended). Before the first Session.
func (t *Tracker) SetLocal(local func(owner any) bool) { t.local = local }

// FollowRemoteMarks tells, in Answers mode, that the statements of the
// sessions SetLocal calls another process's get their marks too, and that
// whoever follows those sessions marks them run once their process says
// they ran (package coord, through the coordination database): a commit
// here then waits for another shard's statements as for this process's,
// and those statements are ordered with the commits as local ones are.
// Before the first Session.
func (t *Tracker) FollowRemoteMarks() { t.remoteMarks = true }

// answerSlots is how many of a session's last statements a commit of
// another session may wait for.
const answerSlots = 16

// answerStmt is a statement kept for the commits of other sessions: when
// it ended in the original, its mark (see Step.Mark), and up to lateRels
// of the relations and rows it touches (more: all), as raceRels holds
// them.
type answerStmt struct {
	end       int64
	mark      *Txn
	ids       [lateRels]uint32
	rows      [lateRels]uint32
	rng       [1]keyRange
	n, nr, ng uint8
	all       bool
}

// answerRing is a session's last answerSlots statements that touch a
// relation, newest at i-1; n counts those ever kept.
type answerRing struct {
	s [answerSlots]answerStmt
	i int
	n uint64
}

func (r *answerRing) add(st answerStmt) {
	r.s[r.i] = st
	r.i = (r.i + 1) % answerSlots
	r.n++
}

// newest is the statement kept last, nil when none.
func (r *answerRing) newest() *answerStmt {
	if r.n == 0 {
		return nil
	}
	return &r.s[(r.i+answerSlots-1)%answerSlots]
}

// before returns the statement a commit c, sent at log time bound or
// later, waits for: the newest that ended before bound and touched what
// c wrote, nil when none is still to run (see the comment at the top).
func (r *answerRing) before(bound int64, c *txEnd) *Txn {
	var first *Txn // the newest that ended before bound
	kept := min(r.n, answerSlots)
	for k := uint64(0); k < kept; k++ {
		st := &r.s[(uint64(r.i)+answerSlots-1-k)%answerSlots]
		if st.end >= bound {
			continue
		}
		if st.mark.Ran() {
			// It ran, and the session's statements before it too.
			return nil
		}
		if first == nil {
			first = st.mark
		}
		if c.wrote(st.ids[:st.n], st.rows[:st.nr], st.all, st.rng[:st.ng]) != RaceNone {
			return st.mark
		}
	}
	if r.n > answerSlots {
		// Older statements were not kept: one of them may be what c
		// waits for, and the newest before bound comes after it.
		if first == nil {
			// Every statement kept ended after bound (the session
			// ran more than answerSlots while c was open): what c
			// waits for is older than all of them, and the oldest
			// kept runs after it. Read before c, it makes no cycle.
			if o := &r.s[r.i]; !o.mark.Ran() {
				return o.mark
			}
		}
		return first
	}
	return nil
}

// answerBound is the log time before which a statement must have ended
// to be ordered before a commit sent at from and ended at at: the commit
// waits for it, and it cannot race with the commit. Times are truncated
// to the log's tick (Tracker.Tick): a statement that ended in the tick
// the commit was sent in may have ended after it. A log line that gives
// a commit one time (from == at) leaves RaceSlack before it unordered
// too: the server releases row locks before it answers a COMMIT (see
// RaceSlack).
func answerBound(from, at, tick int64) int64 {
	slack := tick - 1
	if from >= at {
		slack = max(slack, RaceSlack.Microseconds())
	}
	return from - slack
}

// answerWaits notes, for s's transaction that ended with a statement
// sent at from and ended at at, having written what c says, the
// statements of other sessions it waits for once it commits (see
// Session.answer). It runs only in Answers mode.
func (t *Tracker) answerWaits(s *Session, c *txEnd) {
	bound := answerBound(c.from, c.at, t.res)
	kept := t.live[:0]
	for _, o := range t.live {
		if o.ended {
			if n := o.ans.newest(); n == nil || n.mark.Ran() {
				continue // nothing of it left to wait for
			}
		}
		kept = append(kept, o)
		if o == s {
			continue
		}
		if m := o.ans.before(bound, c); m != nil {
			s.ansWait = append(s.ansWait, m)
		}
	}
	clear(t.live[len(kept):])
	t.live = kept
}

// answer finishes, in Answers mode, reading event e whose Step is step:
// a commit waits for the statements answerWaits found, and a statement
// that touches a relation gets its mark and its Reach, and is kept for the commits of
// other sessions read after it.
func (s *Session) answer(e *Exec, step *Step) {
	if c := step.Commit; c != nil && c.Position() > 0 {
		for _, m := range s.ansWait {
			step.Wait.addRow(m)
		}
	}
	s.ansWait = s.ansWait[:0]
	st := &s.raceStmt
	if st.empty() || s.foreign {
		return
	}
	m := &Txn{b: s.t.board, at: e.End, owner: s.owner}
	step.Mark = m
	if !s.reach.empty() {
		step.Reach = s.reach.clone()
	}
	a := answerStmt{end: e.End, mark: m, all: st.all || len(st.ids) > lateRels || len(st.rows) > lateRels || len(st.rng) > 1}
	if !a.all {
		a.n = uint8(copy(a.ids[:], st.ids))
		a.nr = uint8(copy(a.rows[:], st.rows))
		a.ng = uint8(copy(a.rng[:], st.rng))
	}
	s.ans.add(a)
}
