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
// replay may run the racing statement before them). A commit logged up
// to RaceSlack after the statement counts as during it.
//
// The Tracker keeps the ends of the last maxEnds write transactions it
// read, in the order read (the order of their log lines, which is about
// that of their times), with the relations they wrote: a statement walks
// back from the newest to the first that ended before it started, so its
// cost is the number of transactions that ended while it ran. Relations
// are compared whole (not by key: a row's key names its bucket only for
// some statements), in the statement's database.

// RaceSlack is how long after a statement's end a commit of another
// session's transaction that was open while it ran may be logged and
// still count as during it. The server releases a transaction's row
// locks before it answers its COMMIT, so the statement that waited for
// them may answer first: a capture then records the commit a few
// microseconds after the statement it ended the wait of.
const RaceSlack = time.Millisecond

// Race says whether a statement raced (see Step.Raced). The Tracker sets
// it when it reads the event, or later when the commit it raced with is
// logged just after it (RaceSlack); the replay reads it once the
// statement ran, from another goroutine.
type Race struct{ b atomic.Bool }

// raced is the Race of every statement known to race when read.
var raced = func() *Race { r := &Race{}; r.b.Store(true); return r }()

// Raced reports whether the statement raced.
func (r *Race) Raced() bool { return r != nil && r.b.Load() }

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

// txEnd is one ended write transaction, for Raced.
type txEnd struct {
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

// raced returns a transaction of a session other than s that wrote one
// of rels (any relation: all) and ended after start, walking back from
// the newest end read; nil when none.
func (r *endRing) raced(s *Session, start int64, rels []uint32, all bool) *txEnd {
	n := len(r.ends)
	for i := 0; i < n; i++ {
		e := &r.ends[(r.next+n-1-i)%n]
		if e.at <= start {
			return nil
		}
		if e.s != s && e.wrote(rels, all) {
			return e
		}
	}
	return nil
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
// s.raceBegan, ended at log time at. The statements of other sessions
// read just before, which ended up to RaceSlack before at while it was
// open and touch what it wrote, raced with it (see RaceSlack).
func (t *Tracker) ended(s *Session, at int64, w *raceRels) {
	if w.empty() {
		return
	}
	ids := slices.Clone(w.ids)
	slices.Sort(ids)
	e := txEnd{at: at, began: s.raceBegan, s: s, writes: ids, all: w.all}
	if s.inBlock {
		e.block = s.block
	}
	t.ends.add(e)
	n := len(t.lates)
	for i := 0; i < n; i++ {
		l := &t.lates[(t.nextLate+n-1-i)%n]
		if l.end < at-RaceSlack.Microseconds() {
			break
		}
		if l.s == s || l.race.Raced() || l.start >= at || e.began >= l.end || !e.wrote(l.ids[:l.n], l.all) {
			continue
		}
		l.race.b.Store(true)
		t.flagTxn(&e)
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

// read records s's event just read, whose Race is r, for a commit logged
// just after it (see ended).
func (t *Tracker) read(s *Session, start, end int64, r *Race) {
	if r == nil || r.Raced() {
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
	t.lates[t.nextLate] = l
	t.nextLate = (t.nextLate + 1) % maxLate
}
