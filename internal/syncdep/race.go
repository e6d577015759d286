package syncdep

import (
	"slices"
	"sync/atomic"
	"time"
)

// A statement races with another session's transaction when, in the
// original, that transaction ended (committed or rolled back) while the
// statement ran and had written a relation the statement touches: the
// statement may have waited for that transaction's row lock, and its
// answer (rows updated, a duplicate key) depended on which came first. A
// replay orders it after that commit when the commit was logged before
// the statement (Wait's lock cut), before it otherwise: either way the
// order in the server may not be the original's, and a differing answer
// is the race's, not the target's. Step.Race says so, so that the
// comparison of answers counts it apart from the unexplained ones. So do
// the statements that follow it in its block (their answers depend on
// its answer), and the statements of the transaction it raced with (the
// replay may run the racing statement before them), whether the
// statement raced with another transaction already or not.
//
// "While the statement ran" is read from the times of the statement that
// ended the transaction (its COMMIT or ROLLBACK, or the autocommit
// statement itself), start and end, not from its end alone: the server
// ends the transaction, and releases its locks, somewhere between the
// two, and a capture records a COMMIT's answer when the proxy relays it,
// which on a loaded machine comes milliseconds after the answer of the
// statement whose wait it ended (measured: 19 ms), while the COMMIT was
// sent before that statement's answer. So a transaction ended while the
// statement ran when the statement that ended it started before the
// statement ended (up to RaceSlack after, for a log whose lines give one
// time) and ended after the statement started: their times overlap,
// however slow the machine that recorded them was.
//
// The Tracker keeps the ends of the last maxEnds write transactions it
// read, in the order read (the order of their log lines, which is about
// that of their times), with the relations they wrote: a statement walks
// back from the newest to the first that ended before it started, so its
// cost is the number of transactions that ended while it ran. Relations
// are compared in the statement's database, row by row where both sides
// name their rows (RaceKind): a statement that reaches one row by its
// primary key (Step.Rows RowsByKey) races at row level only with a
// transaction that wrote that row's key (its bucket, keyBuckets of a
// relation: two keys in one bucket race, more explaining, never less);
// a statement whose predicate cannot be bounded (a range, a join, a
// write without a key), or a transaction that wrote rows it does not
// name, races relation-wide, which an answer's comparison counts apart
// (RaceRelation): on a busy table it holds for nearly every statement.

// RaceSlack is how long after a statement's end the statement that ended
// another session's transaction, open while it ran, may have started and
// still count as during it: a log line gives a COMMIT one time, its end,
// and the server releases a transaction's row locks before it answers
// its COMMIT, so the statement that waited for them may be logged first.
const RaceSlack = time.Millisecond

// RaceKind is how a statement raced with another session's transaction.
type RaceKind uint32

const (
	// RaceNone: it did not race.
	RaceNone RaceKind = iota
	// RaceRow: the transaction wrote a row the statement names by its
	// primary key (its key's bucket), both sides by key; or the
	// statement follows such a statement in its block, or belongs to
	// such a transaction.
	RaceRow
	// RaceRelation: the transaction wrote a relation the statement
	// touches, and one side's rows cannot be bounded (a range or a join,
	// a write without a key, a statement of unknown effect): it may not
	// have touched a row the statement reads at all. Counted apart.
	RaceRelation
)

// Race says whether a statement raced (see Step.Raced), and how. The
// Tracker sets it when it reads the event, or later, until it no longer
// keeps the statement (maxLate), when a transaction it raced with ends
// after it; the replay reads it from another goroutine, once the
// statement ran, and again once it is settled.
type Race struct {
	kind    atomic.Uint32
	settled atomic.Bool
}

// racedRow is the Race of every statement known to race by row when
// read: final, it is shared.
var racedRow = newRace(RaceRow)

func newRace(k RaceKind) *Race { r := &Race{}; r.kind.Store(uint32(k)); return r }

// racedAs is a Race of kind k: the shared one for RaceRow, a new one
// otherwise (a race relation-wide may still be found by row).
func racedAs(k RaceKind) *Race {
	if k == RaceRow {
		return racedRow
	}
	return newRace(k)
}

// Raced reports whether the statement raced.
func (r *Race) Raced() bool { return r.Kind() != RaceNone }

// Kind is how the statement raced; RaceNone when it did not.
func (r *Race) Kind() RaceKind {
	if r == nil {
		return RaceNone
	}
	return RaceKind(r.kind.Load())
}

// set records a race of kind k: a race by row is the stronger finding,
// and stays once found.
func (r *Race) set(k RaceKind) {
	for {
		old := RaceKind(r.kind.Load())
		if k == RaceNone || old == RaceRow || old == k || old == RaceRelation && k != RaceRow {
			return
		}
		if r.kind.CompareAndSwap(uint32(old), uint32(k)) {
			return
		}
	}
}

// better is the stronger of two kinds found (RaceRow over RaceRelation).
func better(a, b RaceKind) RaceKind {
	if a == RaceRow || b == RaceRow {
		return RaceRow
	}
	return max(a, b)
}

// Settled reports whether Raced can no longer change: the statement
// raced by row, touches no relation (nil), or the Tracker no longer
// keeps it for a transaction that ends after it. Once Settled, Kind is
// final.
func (r *Race) Settled() bool { return r == nil || r.settled.Load() || r.Kind() == RaceRow }

// maxLate bounds the statements a Tracker keeps for a commit logged just
// after them (RaceSlack).
const maxLate = 64

// maxLateAnswers is maxLate in Answers mode, where a statement that
// overlapped a commit is not ordered with it: a COMMIT whose answer a
// loaded proxy relayed late (19 ms measured) is read after hundreds of
// statements of a busy workload, and those it overlapped must still be
// there to be found raced, or their differing answers would be taken for
// the target's data.
const maxLateAnswers = 1024

// lateDisorder is how many statements in a row that ended before a
// commit was sent the walk of Tracker.ended passes, in Answers mode,
// before it stops: one read just before may have ended later.
const lateDisorder = 64

// lateCap is how many statements the Tracker keeps for a commit read
// after them.
func (t *Tracker) lateCap() int {
	if t.mode == Answers {
		return maxLateAnswers
	}
	return maxLate
}

// late is a statement read recently, for a commit logged just after it:
// its session, its block (Session.block; 0 outside one), when it ran,
// its Race, and up to lateRels of the relations it touches (more: all)
// and of the rows it names by key (more: taken as relation-wide).
type late struct {
	s          *Session
	block      uint64
	start, end int64
	race       *Race
	ids        [lateRels]uint32
	rows       [lateRels]uint32
	rng        [1]keyRange
	n, nr, ng  uint8
	all        bool
}

// lateRels is how many relations a late keeps; a statement that touches
// more is taken to touch all.
const lateRels = 4

// maxEnds bounds the transaction ends a Tracker keeps for Raced. A
// statement during which more ended is raced if one of the last maxEnds
// is.
const maxEnds = 1 << 12

// txEnd is one ended write transaction, for Raced: from and at are when
// the statement that ended it (COMMIT, ROLLBACK, the autocommit
// statement) started and ended.
type txEnd struct {
	from   int64
	at     int64
	began  int64  // when its first write started
	block  uint64 // its session's block (Session.block); 0: autocommit
	s      *Session
	writes []uint32 // relation ids written whole or by key (any ids), sorted
	rows   []uint32 // the bucket ids of the rows it wrote by key, sorted
	all    bool     // of unknown effect: may have written anything
	keys   []keyAt  // the integer keys it wrote by key (raceRels.keys)
	opaque []uint32 // raceRels.opaque
	// seq is its commit's Seq, 0 when it rolled back (or ended in a
	// COMMIT PREPARED's transaction, not followed here).
	seq uint64
}

// endRing holds the last maxEnds transaction ends, in the order read.
// answers: the Tracker's mode is Answers, whose order decides what can
// race (see raced); res is the Tracker's tick.
type endRing struct {
	ends    []txEnd
	next    int // where the next end goes once ends is full
	answers bool
	res     *int64
	// last is where the end added last is, for setSeq.
	last int
}

func (r *endRing) add(e txEnd) {
	if len(r.ends) < maxEnds {
		r.last = len(r.ends)
		r.ends = append(r.ends, e)
		return
	}
	r.last = r.next
	r.ends[r.next] = e
	r.next = (r.next + 1) % maxEnds
}

// setSeq gives the end added last its commit's place in the commit
// order (a Txn's Seq): it committed.
func (r *endRing) setSeq(seq uint64) { r.ends[r.last].seq = seq }

// raced calls f with each transaction of a session other than s that
// wrote what a statement of s reaches (st) and ended while it ran, from
// start to end (see RaceSlack), walking back from the newest end read to
// the first that ended before start, and with how it raced with it; it
// returns how the statement raced (the strongest kind found).
func (r *endRing) raced(s *Session, start, end int64, cut uint64, st *raceRels, f func(*txEnd, RaceKind)) RaceKind {
	n := len(r.ends)
	found := RaceNone
	for i := 0; i < n; i++ {
		e := &r.ends[(r.next+n-1-i)%n]
		switch {
		case r.answers && e.seq > 0:
			// Read before the statement, the commit did not wait
			// for it: the statement is ordered after it exactly
			// when its Wait's cut holds it (the commits logged
			// before it was sent, within the log's tick; a commit
			// whose line came late, after later ones, is not in
			// it), and after every one read before that.
			if e.seq <= cut {
				return found
			}
		case r.answers:
			// Rolled back: as a commit by its times.
			if e.at+*r.res <= start {
				continue
			}
		case e.at <= start:
			return found
		}
		if e.s == s || !r.answers && e.from > end+RaceSlack.Microseconds() {
			continue
		}
		if k := e.wrote(st.ids, st.rows, st.all, st.rng); k != RaceNone {
			f(e, k)
			found = better(found, k)
		}
	}
	return found
}

// flagTxn marks the statements of e's transaction still kept (lates) as
// raced, as k: the statement of another session it raced with may have
// run before them on the target, as it could not in the original.
func (t *Tracker) flagTxn(e *txEnd, k RaceKind) {
	for j := range t.lates {
		m := &t.lates[j]
		if m.s == e.s && (e.block != 0 && m.block == e.block || m.end == e.at) {
			m.race.set(k)
		}
	}
}

// wrote is how a statement that reaches the relations rels and the rows
// (buckets) rows (anything: all) races with the transaction: RaceRow
// when it wrote one of those rows, RaceRelation when it wrote one of
// those relations (whole, or rows of one the statement reaches whole),
// RaceNone when neither.
func (e *txEnd) wrote(rels, rows []uint32, all bool, rng []keyRange) RaceKind {
	for _, id := range rows {
		if _, ok := slices.BinarySearch(e.rows, id); ok {
			return RaceRow
		}
	}
	found := RaceNone
	for _, g := range rng {
		found = better(found, e.inRange(g))
	}
	if found == RaceRow {
		return RaceRow
	}
	if all || e.all {
		return RaceRelation
	}
	for _, id := range rels {
		if _, ok := slices.BinarySearch(e.writes, id); ok {
			return RaceRelation
		}
	}
	return found
}

// raceRels is what a transaction or a statement reaches, for Raced: ids
// are the relations it reaches whole (a relation's id, and its any id
// for one reached whole that has rows written by key; see rowRef), rows
// the buckets of the rows it reaches by key. A statement that reads a
// row by key reaches its bucket and its relation's id (what a write
// without a key wrote), not the any id: another key's write is not its.
type raceRels struct {
	ids, rows []uint32
	all       bool
	// rng are the key ranges a statement reads (ranges.go); keys and
	// opaque what a transaction wrote by key: the integer keys, and
	// the relations (any ids) it wrote rows of whose keys it cannot
	// name.
	rng    []keyRange
	keys   []keyAt
	opaque []uint32
}

func addOnce(s []uint32, id uint32) []uint32 {
	if !slices.Contains(s, id) {
		s = append(s, id)
	}
	return s
}

// addWrites adds what eff (a statement's, before rowEffect) writes; bucket
// and keyed are its row's (Tracker.raceRow).
func (r *raceRels) addWrites(eff *effect, bucket uint32, keyed bool) {
	r.all = r.all || eff.writeAll
	for _, id := range eff.write {
		r.ids = addOnce(r.ids, id)
	}
	switch x := eff.rows; {
	case x == nil || !x.write:
	case keyed:
		r.rows = addOnce(r.rows, bucket)
		r.ids = addOnce(r.ids, x.any)
	default:
		r.ids = addOnce(r.ids, x.rel)
	}
}

// addTouch adds what eff (a statement's, before rowEffect) reads or
// writes; bucket and keyed are its row's (Tracker.raceRow).
func (r *raceRels) addTouch(eff *effect, bucket uint32, keyed bool) {
	r.all = r.all || eff.readAll || eff.writeAll || eff.lockAll
	for _, id := range eff.touch {
		r.ids = addOnce(r.ids, id)
	}
	for _, id := range eff.write {
		r.ids = addOnce(r.ids, id)
	}
	switch x := eff.rows; {
	case x == nil:
	case keyed:
		r.rows = addOnce(r.rows, bucket)
		r.ids = addOnce(r.ids, x.rel)
	default:
		r.ids = addOnce(r.ids, x.rel)
		r.ids = addOnce(r.ids, x.any)
	}
	if x := eff.rows; x != nil && x.fresh != 0 {
		// The relation's fresh inserts, which in Load mode write an
		// id of their own (freshKey): raced with as with its
		// whole-relation writes.
		r.ids = addOnce(r.ids, x.fresh)
	}
}

// raceRow is the bucket of the row eff (a statement's, before rowEffect)
// names by key in event e, its id and its place among the relation's
// keyBuckets (slot), for Raced and rowEffect, and its key's hash h (for
// a Taint); keyed false when it names
// none or the log did not give its key.
func (t *Tracker) raceRow(eff *effect, e *Exec) (bucket uint32, keyed bool, slot uint32, h uint64) {
	if eff.rows == nil {
		return 0, false, 0, 0
	}
	h, ok := keyHash(eff.rows, e)
	if !ok {
		return 0, false, 0, 0
	}
	slot = uint32(h % keyBuckets)
	return t.bucket(eff.rows.any, uint64(slot)), true, slot, h
}

func (r *raceRels) empty() bool {
	return len(r.ids) == 0 && len(r.rows) == 0 && !r.all && len(r.rng) == 0 && len(r.opaque) == 0
}

func (r *raceRels) reset() {
	r.ids, r.rows, r.all = r.ids[:0], r.rows[:0], false
	r.rng, r.keys, r.opaque = r.rng[:0], r.keys[:0], r.opaque[:0]
}

// ended records that s's transaction, which wrote w from log time
// s.raceBegan, ended with a statement that ran from log time from to at.
// The statements of other sessions read before, which ran while it ended
// (see RaceSlack) while it was open and touch what it wrote, raced with
// it, and so did its own statements.
func (t *Tracker) ended(s *Session, from, at int64, w *raceRels) {
	if w.empty() {
		return
	}
	ids, rows := slices.Clone(w.ids), slices.Clone(w.rows)
	slices.Sort(ids)
	slices.Sort(rows)
	e := txEnd{from: from, at: at, began: s.raceBegan, s: s, writes: ids, rows: rows, all: w.all}
	s.endedNow = true
	if len(w.keys) > 0 || len(w.opaque) > 0 {
		e.keys, e.opaque = slices.Clone(w.keys), slices.Clone(w.opaque)
	}
	if s.inBlock {
		e.block = s.block
	}
	t.ends.add(e)
	answers := t.mode == Answers
	slack := from - RaceSlack.Microseconds()
	floor, bound := slack, slack
	if answers {
		// The statements of this process read before that ended
		// before bound are those the commit waits for (answerWaits):
		// ordered, they cannot race; every other one can, whenever it
		// ran. Another shard's commit or statement is not so ordered:
		// as in Object mode.
		if !s.foreign {
			t.answerWaits(s, &e)
		}
		bound = answerBound(from, at, t.res)
		floor = min(slack, bound)
	}
	n := len(t.lates)
	flagged := RaceNone
	below := 0 // statements in a row that ended before floor
	for i := 0; i < n; i++ {
		l := &t.lates[(t.nextLate+n-1-i)%n]
		if l.end < floor {
			// Read in about the order they ended, not exactly: in
			// Answers mode, where what overlapped is not ordered,
			// the walk goes on past a few that ended before.
			if below++; !answers || below >= lateDisorder {
				break
			}
			continue
		}
		below = 0
		if l.s == s {
			continue
		}
		if answers && !s.foreign && !l.s.foreign {
			if l.end < bound {
				continue
			}
		} else if l.end < slack || l.start >= at || e.began >= l.end {
			continue
		}
		k := e.wrote(l.ids[:l.n], l.rows[:l.nr], l.all, l.rng[:l.ng])
		if k == RaceNone {
			continue
		}
		if flagged != RaceRow && k != flagged {
			// Also when the statement raced with another
			// transaction already: it may have waited for this one
			// too, and run before its statements on the target.
			t.flagTxn(&e, k)
			flagged = better(flagged, k)
		}
		if before := l.race.Kind(); before == RaceRow || before == k {
			continue
		}
		l.race.set(k)
		if l.block == 0 {
			continue
		}
		// What its block did after it raced too (see Session.Event).
		for j := 0; j < n; j++ {
			if m := &t.lates[j]; m.s == l.s && m.block == l.block && m.end > l.end {
				m.race.set(k)
			}
		}
		if l.s.inBlock && l.s.block == l.block {
			l.s.raceOpen = better(l.s.raceOpen, k)
		}
	}
}

// read records s's event just read, whose Race is r, for a transaction
// that ends after it (see ended), raced already or not; the one it takes
// the place of is settled.
func (t *Tracker) read(s *Session, start, end int64, r *Race) {
	if r == nil {
		return
	}
	st := &s.raceStmt
	l := late{s: s, start: start, end: end, race: r, all: st.all || len(st.ids) > lateRels || len(st.rows) > lateRels || len(st.rng) > 1}
	if s.inBlock {
		l.block = s.block
	}
	if !l.all {
		l.n = uint8(copy(l.ids[:], st.ids))
		l.nr = uint8(copy(l.rows[:], st.rows))
		l.ng = uint8(copy(l.rng[:], st.rng))
	}
	if len(t.lates) < t.lateCap() {
		t.lates = append(t.lates, l)
		return
	}
	t.lates[t.nextLate].race.settled.Store(true)
	t.lates[t.nextLate] = l
	t.nextLate = (t.nextLate + 1) % t.lateCap()
}
