package syncdep

import (
	"cmp"
	"encoding/binary"
	"slices"
	"sync"
)

// Taint: the rows a replay's own divergence left with other values.
//
// A statement the replay ran out of the original's order (it raced in
// the original, its sync wait gave up, a commit it depended on was lost,
// or its own answer already differed) may have left the rows it wrote
// with values the original's did not have at that point: a raced
// delete-and-reinsert, an increment applied twice or lost. A later
// statement that reads or writes such a row may then answer otherwise
// although the target's data was the same at the start. The replay
// adds the Reach of each such statement to its Taint, and asks it of a
// later differing answer before blaming the target's data (issue 59
// item 3). Rows are compared by relation and the full hash of their key
// (keyHash), ranges by the integer keys written (as Race compares them);
// a write whose rows are not named by key taints its relation, which a
// statement that names its row by key meets only through the relation
// id a write without a key leaves (as txEnd.wrote).

// taintRow is a row named by key: its relation's any id and its key's hash.
type taintRow struct {
	any uint32
	h   uint64
}

// Reach is what one statement reads or writes (by row, by key range, by
// relation) and what it wrote, for a Taint. Nil for a statement that
// touches no relation; only the Answers mode gives it (Step.Reach).
type Reach struct {
	rows []taintRow // rows it reads or writes by key
	ids  []uint32   // relations it reaches whole (raceRels.ids)
	rng  []keyRange // key ranges it reads
	all  bool       // of unknown reach
	// whole: the ids (its rel and any) of the relation it names and
	// reads whole, neither by key nor by a range of keys (an
	// aggregate, a read of every row).
	whole []uint32
	// What it wrote: rows by key, their integer keys where the log
	// gives one, relation ids (raceRels.addWrites), and the any ids of
	// relations it wrote rows of by key whose keys the log does not
	// give as an integer (for ranges).
	wRows   []taintRow
	wKeys   []keyAt
	wIDs    []uint32
	wOpaque []uint32
	wAll    bool
}

// Writes reports whether the statement wrote anything a Taint follows.
func (r *Reach) Writes() bool {
	return r != nil && (len(r.wRows) > 0 || len(r.wIDs) > 0)
}

func (r *Reach) empty() bool {
	return len(r.rows) == 0 && len(r.ids) == 0 && len(r.rng) == 0 && !r.all && !r.Writes() && !r.wAll
}

func (r *Reach) reset() {
	r.rows, r.ids, r.rng, r.all, r.whole = r.rows[:0], r.ids[:0], r.rng[:0], false, r.whole[:0]
	r.wRows, r.wKeys, r.wIDs, r.wOpaque, r.wAll = r.wRows[:0], r.wKeys[:0], r.wIDs[:0], r.wOpaque[:0], false
}

func (r *Reach) clone() *Reach {
	// One array for the rows and one for the ids: a Reach is made for
	// every statement of an Answers replay.
	c := &Reach{all: r.all, wAll: r.wAll, rng: slices.Clone(r.rng), wKeys: slices.Clone(r.wKeys), whole: slices.Clone(r.whole)}
	if n := len(r.rows) + len(r.wRows); n > 0 {
		rows := append(append(make([]taintRow, 0, n), r.rows...), r.wRows...)
		c.rows, c.wRows = rows[:len(r.rows):len(r.rows)], rows[len(r.rows):]
	}
	if n := len(r.ids) + len(r.wIDs) + len(r.wOpaque); n > 0 {
		ids := append(append(append(make([]uint32, 0, n), r.ids...), r.wIDs...), r.wOpaque...)
		a, b := len(r.ids), len(r.ids)+len(r.wIDs)
		c.ids, c.wIDs, c.wOpaque = ids[:a:a], ids[a:b:b], ids[b:]
	}
	return c
}

// add adds what eff, a statement of event e, reaches: its row by key
// (keyed, its key's hash h) and the range g it reads (bounded), as
// Session.raceItem adds them to raceRels.
func (r *Reach) add(eff *effect, e *Exec, keyed bool, h uint64, g keyRange, bounded bool) {
	var tmp raceRels
	tmp.ids = r.ids
	tmp.addTouch(eff, 0, keyed)
	if bounded {
		tmp.bound(g)
		r.rng = append(r.rng, g)
	}
	r.ids, r.all = tmp.ids, r.all || tmp.all
	tmp = raceRels{ids: r.wIDs}
	tmp.addWrites(eff, 0, keyed)
	r.wIDs, r.wAll = tmp.ids, r.wAll || tmp.all
	// Read whole: the relations it reaches apart from the one whose
	// rows it names (eff.touch holds their ids and their any ids), and
	// that one when neither a key nor a range bounds it.
	for _, id := range eff.touch {
		r.whole = addOnce(r.whole, id)
	}
	if x := eff.rows; x != nil && !keyed && !bounded {
		r.whole = addOnce(addOnce(r.whole, x.rel), x.any)
	}
	if bounded {
		// Its range's relation is not read whole: it meets the rows
		// written by key through their keys (AffectsRow), as raceRels
		// does.
		r.whole = slices.DeleteFunc(r.whole, func(id uint32) bool { return id == g.any })
	}
	if x := eff.rows; x != nil && keyed {
		k := taintRow{any: x.any, h: h}
		if !slices.Contains(r.rows, k) {
			r.rows = append(r.rows, k)
		}
		if x.write {
			r.wRows = append(r.wRows, k)
			if v, ok := writtenKey(eff, e); ok {
				r.wKeys = append(r.wKeys, keyAt{any: x.any, v: v})
			} else {
				r.wOpaque = addOnce(r.wOpaque, x.any)
			}
		}
	}
}

// MaxTaintRows bounds the rows a Taint keeps by key: past it, a write
// taints its relations instead (Taint.FellBack).
const MaxTaintRows = 1 << 16

// Taint is the set of rows and relations the replay's own divergences
// touched (see the comment at the top). Safe for concurrent use.
type Taint struct {
	mu   sync.Mutex
	rows map[taintRow]struct{}
	keys map[uint32][]int64 // integer keys by any id
	rels map[uint32]struct{}
	// opaque are the any ids of relations written by key where some
	// key is not known as an integer: a range over them meets them
	// relation-wide.
	opaque map[uint32]struct{}
	// fell are the any ids of relations whose written rows no longer
	// fit (MaxTaintRows): every row of them is tainted, relation-wide.
	fell     map[uint32]struct{}
	n        int
	fellBack bool
}

// NewTaint returns an empty Taint.
func NewTaint() *Taint {
	return &Taint{rows: map[taintRow]struct{}{}, keys: map[uint32][]int64{}, rels: map[uint32]struct{}{}, opaque: map[uint32]struct{}{}, fell: map[uint32]struct{}{}}
}

// Add taints what the statement of reach r wrote: its rows by key, and
// the relations it wrote without naming the rows. A write of unknown
// effect (a function, DDL) taints nothing: it would excuse every later
// answer of every table, the target's data included.
func (t *Taint) Add(r *Reach) {
	if t == nil || !r.Writes() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range r.wIDs {
		t.rels[id] = struct{}{}
	}
	if t.n+len(r.wRows)+len(r.wKeys) > MaxTaintRows {
		// The keys no longer fit: their relations are tainted
		// whole, for a read by key or by range too.
		t.fellBack = true
		for _, k := range r.wRows {
			t.fell[k.any] = struct{}{}
		}
		return
	}
	for _, k := range r.wRows {
		if _, ok := t.rows[k]; !ok {
			t.rows[k] = struct{}{}
			t.n++
		}
	}
	for _, k := range r.wKeys {
		t.keys[k.any] = append(t.keys[k.any], k.v)
		t.n++
	}
	for _, id := range r.wOpaque {
		t.opaque[id] = struct{}{}
	}
}

// Affects is how the statement of reach r meets what the Taint holds:
// RaceRow when it reads or writes a tainted row by key (or, with wide,
// a tainted integer key within a range it reads), RaceRelation when it
// meets a tainted relation only as a whole (with wide: it reaches the
// relation whole, or the write named no row; or the Taint fell back),
// RaceNone when neither. Without wide (values alone differ), the rows
// it names by key are looked at, and the relations it reads whole (not
// by key, not by a range: RaceRelation), never its ranges: a range
// whose values differ holds one tainted row far more often than it owes
// the difference to it, and the target's data would then go unseen
// (measured on TestCaptureAnswersOLTP's skewed copy: 265-318 of
// 762-774 answers of a table whose values differ in a tenth of its
// rows were taken for an earlier divergence, in 3 runs), while a range
// tells which row differs (AffectsRow); a whole-table read or an
// aggregate does not.
func (t *Taint) Affects(r *Reach, wide bool) RaceKind {
	if t == nil || r == nil {
		return RaceNone
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.rels) == 0 {
		return RaceNone
	}
	found := RaceNone
	for _, k := range r.rows {
		if _, ok := t.rows[k]; ok {
			return RaceRow
		}
		if _, ok := t.fell[k.any]; ok {
			found = RaceRelation
		}
	}
	if !wide {
		// Values alone, of a read of a tainted relation whole (not by
		// key, not by range: an aggregate, a read of every row): which
		// row differs cannot be told from the rows the replay's own
		// divergence wrote, nor its key read from an aggregate's
		// answer; the replay's doing, relation-wide (issue 77: a
		// queue's tallies and counts by state, after a deadlock only
		// on the target rolled a worker's transaction back, were
		// taken for the target's data on an identical copy).
		for _, id := range r.whole {
			if _, ok := t.rels[id]; ok {
				return RaceRelation
			}
		}
		return found
	}
	for _, g := range r.rng {
		for _, v := range t.keys[g.any] {
			if v >= g.lo && v <= g.hi {
				return RaceRow
			}
		}
		_, opaque := t.opaque[g.any]
		if _, fell := t.fell[g.any]; opaque || fell {
			found = RaceRelation
		}
	}
	for _, id := range r.ids {
		if _, ok := t.rels[id]; ok {
			return RaceRelation
		}
	}
	if r.all {
		// Of unknown reach: it may read any tainted relation.
		return RaceRelation
	}
	return found
}

// AffectsRow reports whether one of keys, the key of the one row in
// which a read of ranges of keys (r) answered otherwise than the
// original (read from the columns that can hold it), is a tainted key
// within one of those ranges: that row is
// one the replay's own divergence wrote, and the difference is the
// replay's (RaceRow; RaceRelation once the relation's keys no longer fit,
// FellBack), not the target's data. Affects leaves a read of
// many rows whose values alone differ to the data, since most hold some
// tainted row; this asks of the row that differs. RaceNone otherwise.
func (t *Taint) AffectsRow(r *Reach, keys []int64) RaceKind {
	if t == nil || r == nil || len(keys) == 0 {
		return RaceNone
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	found := RaceNone
	for _, g := range r.rng {
		_, fell := t.fell[g.any]
		for _, v := range keys {
			switch {
			case v < g.lo || v > g.hi:
			case slices.Contains(t.keys[g.any], v):
				return RaceRow
			case fell:
				// Its written keys no longer fit: every row of it
				// is tainted, relation-wide.
				found = RaceRelation
			}
		}
	}
	return found
}

// Ranges reports whether the statement reads ranges of keys.
func (r *Reach) Ranges() bool { return r != nil && len(r.rng) > 0 }

// InRanges reports whether v is within a range of keys the statement
// reads.
func (r *Reach) InRanges(v int64) bool {
	if r == nil {
		return false
	}
	for _, g := range r.rng {
		if v >= g.lo && v <= g.hi {
			return true
		}
	}
	return false
}

// FellBack reports whether the Taint outgrew MaxTaintRows and tainted
// relations in place of rows since.
func (t *Taint) FellBack() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fellBack
}

// ReadKey names what the statement reads by row, by key range and by
// whole relation, the same for two statements that read the same rows
// whatever their text: its relations' ids and its rows' key hashes, in
// order. "" when it reads nothing a Reach names, or of unknown reach.
// The replay tells by it a difference of the target's data that recurs
// (the same rows read differently more than once) from one that does
// not.
func (r *Reach) ReadKey() string {
	if r == nil || r.all || len(r.rows)+len(r.rng)+len(r.ids) == 0 {
		return ""
	}
	rows := slices.Clone(r.rows)
	slices.SortFunc(rows, func(a, b taintRow) int {
		if a.any != b.any {
			return cmp.Compare(a.any, b.any)
		}
		return cmp.Compare(a.h, b.h)
	})
	rng := slices.Clone(r.rng)
	slices.SortFunc(rng, func(a, b keyRange) int {
		switch {
		case a.any != b.any:
			return cmp.Compare(a.any, b.any)
		case a.lo != b.lo:
			return cmp.Compare(a.lo, b.lo)
		}
		return cmp.Compare(a.hi, b.hi)
	})
	ids := slices.Clone(r.ids)
	slices.Sort(ids)
	b := make([]byte, 0, 12*len(rows)+20*len(rng)+4*len(ids)+3)
	b = append(b, 'r')
	for _, x := range slices.Compact(rows) {
		b = binary.LittleEndian.AppendUint32(b, x.any)
		b = binary.LittleEndian.AppendUint64(b, x.h)
	}
	b = append(b, 'g')
	for _, g := range slices.Compact(rng) {
		b = binary.LittleEndian.AppendUint32(b, g.any)
		b = binary.LittleEndian.AppendUint64(b, uint64(g.lo))
		b = binary.LittleEndian.AppendUint64(b, uint64(g.hi))
	}
	b = append(b, 'i')
	for _, id := range slices.Compact(ids) {
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	return string(b)
}
