package syncdep

import (
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// Races by key range. A plain SELECT that reads a range of a relation's
// primary key of one integer column (KeyRange: WHERE id BETWEEN $1 AND
// $2) races by row, not relation-wide, with a transaction that wrote
// that relation by key: only when one of the keys it wrote is within the
// range. So a transaction records the integer keys it wrote by key (up
// to maxRaceKeys a relation; beyond, or a key the log does not give as
// an integer, it counts as having written rows of the relation it cannot
// name, and races relation-wide). A range races with a write without a
// key (a relation's whole id) relation-wide, as before. Its waits do not
// change: it still waits for every earlier commit that wrote the
// relation.

// maxRaceKeys bounds the keys a transaction records by relation.
const maxRaceKeys = 32

// keyRange is a statement's range of a relation's keys (its any id),
// inclusive.
type keyRange struct {
	any    uint32
	lo, hi int64
}

// keyAt is a key a transaction wrote by key, in the relation whose any
// id is any.
type keyAt struct {
	any uint32
	v   int64
}

// rangeRef is a KeyRange with the relation's any id.
type rangeRef struct {
	any    uint32
	lo, hi int32
}

// rangeOf is the range of keys eff reads in event e, false when it reads
// none by range or the log does not give its bounds as integers.
func (t *Tracker) rangeOf(eff *effect, e *Exec) (keyRange, bool) {
	r := eff.rng
	if r == nil || len(e.Items) != 1 || e.Items[0].Unparsed {
		return keyRange{}, false
	}
	g := keyRange{any: r.any, lo: math.MinInt64, hi: math.MaxInt64}
	var ok bool
	if r.lo > 0 {
		if g.lo, ok = paramInt(e, r.lo); !ok {
			return keyRange{}, false
		}
	}
	if r.hi > 0 {
		if g.hi, ok = paramInt(e, r.hi); !ok {
			return keyRange{}, false
		}
	}
	return g, true
}

// writtenKey is the integer key eff (a statement's, before rowEffect)
// writes by key in event e, false when it writes none so or the key is
// not one integer the log gives.
func writtenKey(eff *effect, e *Exec) (int64, bool) {
	r := eff.rows
	if r == nil || !r.write || len(r.params) != 1 || r.kinds[0] != keyInt || len(e.Items) != 1 || e.Items[0].Unparsed {
		return 0, false
	}
	return paramInt(e, r.params[0])
}

// paramInt reads the integer value of $p of event e's one statement: a
// bind parameter, or a constant of its logged text (as keyHash does);
// false for an event of several statements or one not parsed.
func paramInt(e *Exec, p int32) (int64, bool) {
	if len(e.Items) != 1 || e.Items[0].Unparsed {
		return 0, false
	}
	maxRef := paramBound(e)
	if maxRef < 0 {
		return 0, false
	}
	var v event.Param
	switch {
	case p <= maxRef:
		if e.ParamState != event.ParamsComplete || int(p) > len(e.Params) {
			return 0, false
		}
		v = e.Params[p-1]
	default:
		c, ok := fingerprint.ConstantValue(e.Items[0].Query, e.Text, p)
		if !ok {
			return 0, false
		}
		v = event.Param{Value: c}
	}
	if v.Null {
		return 0, false
	}
	return intValue(v)
}

// raceItem adds what eff, a statement of event e (before rowEffect),
// reads and writes to what the event and its transaction reach, for
// Raced; it returns the row it names by key (Tracker.raceRow).
func (s *Session) raceItem(eff *effect, e *Exec) (bucket uint32, keyed bool, slot uint32) {
	t := s.t
	bucket, keyed, slot, h := t.raceRow(eff, e)
	s.raceStmt.addTouch(eff, bucket, keyed)
	g, bounded := t.rangeOf(eff, e)
	if bounded {
		s.raceStmt.bound(g)
	}
	if t.mode == Answers {
		s.reach.add(eff, e, keyed, h, g, bounded)
	}
	if s.raceTx.empty() {
		s.raceBegan = e.Start
	}
	s.raceTx.addWrites(eff, bucket, keyed)
	if keyed && eff.rows.write {
		v, ok := writtenKey(eff, e)
		s.raceTx.wroteKey(eff.rows.any, v, ok)
	}
	return bucket, keyed, slot
}

// bound makes the statement's reach of g's relation by key the range g:
// its any id no longer counts whole.
func (r *raceRels) bound(g keyRange) {
	r.ids = slices.DeleteFunc(r.ids, func(id uint32) bool { return id == g.any })
	r.rng = append(r.rng, g)
}

// wroteKey records that the transaction wrote, by key, a row of the
// relation whose any id is any: its key v when known (ok).
func (r *raceRels) wroteKey(any uint32, v int64, ok bool) {
	if ok && !slices.Contains(r.opaque, any) {
		n := 0
		for _, k := range r.keys {
			if k.any == any {
				if k.v == v {
					return
				}
				n++
			}
		}
		if n < maxRaceKeys {
			r.keys = append(r.keys, keyAt{any: any, v: v})
			return
		}
	}
	r.opaque = addOnce(r.opaque, any)
}

// inRange is how a statement that reads the range g races with the
// transaction: RaceRow when it wrote a key within g, RaceRelation when
// it wrote rows of g's relation by key that it cannot name, RaceNone
// when it wrote none there (by key: its whole-relation writes are
// compared apart).
func (e *txEnd) inRange(g keyRange) RaceKind {
	if _, ok := slices.BinarySearch(e.writes, g.any); !ok {
		return RaceNone
	}
	for _, k := range e.keys {
		if k.any == g.any && k.v >= g.lo && k.v <= g.hi {
			return RaceRow
		}
	}
	if slices.Contains(e.opaque, g.any) {
		return RaceRelation
	}
	return RaceNone
}
