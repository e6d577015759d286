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
// are compared whole (not by key: a row's key names its bucket only for
// some statements), in the statement's database.

// RaceSlack is how long after a statement's end the statement that ended
// another session's transaction, open while it ran, may have started and
// still count as during it: a log line gives a COMMIT one time, its end,
// and the server releases a transaction's row locks before it answers
// its COMMIT, so the statement that waited for them may be logged first.
const RaceSlack = time.Millisecond

// Race says whether a statement raced (see Step.Raced). The Tracker sets
// it when it reads the event, or later, until it no longer keeps the
// statement (maxLate), when a transaction it raced with ends after it;
// the replay reads it from another goroutine, once the statement ran,
// and again once it is settled.
type Race struct{ b, settled atomic.Bool }

// raced is the Race of every statement known to race when read.
var raced = func() *Race { r := &Race{}; r.b.Store(true); return r }()

// Raced reports whether the statement raced.
func (r *Race) Raced() bool { return r != nil && r.b.Load() }

// Settled reports whether Raced can no longer change: the statement
// raced, touches no relation (nil), or the Tracker no longer keeps it
// for a transaction that ends after it. Once Settled, Raced is final.
func (r *Race) Settled() bool { return r == nil || r.settled.Load() || r.b.Load() }

// maxLate bounds the statements a Tracker keeps for a commit logged just
// after them (RaceSlack).
const maxLate = 64

// late is a statement read recently, for a commit logged just after it:
// its session, its block (Session.block; 0 outside one), when it ran,
// its Race, and up to lateRels of the relations it touches (more: all).
type late struct {
	s          *Session
	block      uint64
	start, end int64
	race       *Race
	ids        [lateRels]uint32
	n          uint8
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
	writes []uint32 // relation ids, sorted
	all    bool     // of unknown effect: may have written anything
}

// endRing holds the last maxEnds transaction ends, in the order read.
type endRing struct {
	ends []txEnd
	next int // where the next end goes once ends is full
}

func (r *endRing) add(e txEnd) {
	if len(r.ends) < maxEnds {
		r.ends = append(r.ends, e)
		return
	}
	r.ends[r.next] = e
	r.next = (r.next + 1) % maxEnds
}

// raced calls f with each transaction of a session other than s that
// wrote one of rels (any relation: all) and ended while a statement of
// s that ran from start to end did (see RaceSlack), walking back from the
// newest end read to the first that ended before start; it reports
// whether there was one.
func (r *endRing) raced(s *Session, start, end int64, rels []uint32, all bool, f func(*txEnd)) bool {
	n := len(r.ends)
	found := false
	for i := 0; i < n; i++ {
		e := &r.ends[(r.next+n-1-i)%n]
		if e.at <= start {
			break
		}
		if e.s != s && e.from <= end+RaceSlack.Microseconds() && e.wrote(rels, all) {
			f(e)
			found = true
		}
	}
	return found
}

// flagTxn marks the statements of e's transaction still kept (lates) as
// raced: the statement of another session it raced with may have run
// before them on the target, as it could not in the original.
func (t *Tracker) flagTxn(e *txEnd) {
	for j := range t.lates {
		m := &t.lates[j]
		if m.s == e.s && (e.block != 0 && m.block == e.block || m.end == e.at) {
			m.race.b.Store(true)
		}
	}
}

// wrote reports whether the transaction wrote one of rels (any: all).
func (e *txEnd) wrote(rels []uint32, all bool) bool {
	if all || e.all {
		return true
	}
	for _, id := range rels {
		if _, ok := slices.BinarySearch(e.writes, id); ok {
			return true
		}
	}
	return false
}

// raceRels is what a transaction or a statement reaches, relation by
// relation, for Raced: the relations as a whole, whether it reached
// them by key or not.
type raceRels struct {
	ids []uint32
	all bool
}

func (r *raceRels) addID(id uint32) {
	if !slices.Contains(r.ids, id) {
		r.ids = append(r.ids, id)
	}
}

// addWrites adds the relations eff (a statement's, before rowEffect)
// writes.
func (r *raceRels) addWrites(eff *effect) {
	r.all = r.all || eff.writeAll
	for _, id := range eff.write {
		r.addID(id)
	}
	if eff.rows != nil && eff.rows.write {
		r.addID(eff.rows.rel)
	}
}

// addTouch adds the relations eff (a statement's, before rowEffect)
// reads or writes.
func (r *raceRels) addTouch(eff *effect) {
	r.all = r.all || eff.readAll || eff.writeAll || eff.lockAll
	for _, id := range eff.touch {
		r.addID(id)
	}
	for _, id := range eff.write {
		r.addID(id)
	}
	if eff.rows != nil {
		r.addID(eff.rows.rel)
	}
}

func (r *raceRels) empty() bool { return len(r.ids) == 0 && !r.all }

func (r *raceRels) reset() { r.ids, r.all = r.ids[:0], false }

// ended records that s's transaction, which wrote w from log time
// s.raceBegan, ended with a statement that ran from log time from to at.
// The statements of other sessions read before, which ran while it ended
// (see RaceSlack) while it was open and touch what it wrote, raced with
// it, and so did its own statements.
func (t *Tracker) ended(s *Session, from, at int64, w *raceRels) {
	if w.empty() {
		return
	}
	ids := slices.Clone(w.ids)
	slices.Sort(ids)
	e := txEnd{from: from, at: at, began: s.raceBegan, s: s, writes: ids, all: w.all}
	if s.inBlock {
		e.block = s.block
	}
	t.ends.add(e)
	n := len(t.lates)
	flagged := false
	for i := 0; i < n; i++ {
		l := &t.lates[(t.nextLate+n-1-i)%n]
		if l.end < from-RaceSlack.Microseconds() {
			break
		}
		if l.s == s || l.start >= at || e.began >= l.end || !e.wrote(l.ids[:l.n], l.all) {
			continue
		}
		if !flagged {
			// Also when the statement raced with another
			// transaction already: it may have waited for this one
			// too, and run before its statements on the target.
			t.flagTxn(&e)
			flagged = true
		}
		if l.race.Raced() {
			continue
		}
		l.race.b.Store(true)
		if l.block == 0 {
			continue
		}
		// What its block did after it raced too (see Session.Event).
		for j := 0; j < n; j++ {
			if m := &t.lates[j]; m.s == l.s && m.block == l.block && m.end > l.end {
				m.race.b.Store(true)
			}
		}
		if l.s.inBlock && l.s.block == l.block {
			l.s.raceOpen = true
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
	l := late{s: s, start: start, end: end, race: r, all: s.raceStmt.all || len(s.raceStmt.ids) > lateRels}
	if s.inBlock {
		l.block = s.block
	}
	if !l.all {
		l.n = uint8(copy(l.ids[:], s.raceStmt.ids))
	}
	if len(t.lates) < maxLate {
		t.lates = append(t.lates, l)
		return
	}
	t.lates[t.nextLate].race.settled.Store(true)
	t.lates[t.nextLate] = l
	t.nextLate = (t.nextLate + 1) % maxLate
}
