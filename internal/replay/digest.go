package replay

import (
	"encoding/binary"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// rowDigests is the digest of the rows the target returned per statement
// of an exchange, kept only when the execution's recorded answer has
// digests to compare them with (a capture of a proxy that keeps them):
// the same digest the proxy made of the original's (package rowdigest).
type rowDigests struct {
	on bool
	// v is the version of the recorded digests, which the target's
	// rows are digested in.
	v rowdigest.Version
	// done are the digests of the statements that completed, in order,
	// as wire.rows; cur is the statement's being read; buf rebuilds a
	// row's DataRow body from the values pgconn decoded.
	done []rowdigest.Digest
	cur  rowdigest.Digest
	buf  []byte
	// keep: the execution's rows are to be kept (one that reads ranges
	// of keys, in a replay that follows its own divergences: the
	// session sets it before each execution). kept are then the rows of
	// the exchange's first statement, their DataRow bodies back to back,
	// ends[i] where row i ends, up to maxKeptRows bytes (over: past it,
	// none), so that the one row a differing answer differs in can be
	// read (differingRow).
	keep bool
	kept []byte
	ends []int
	over bool
}

// maxKeptRows bounds the bytes of rows rowDigests keeps of a statement;
// a session gives back a buffer grown past keptBuffer at the next.
const (
	maxKeptRows = 64 << 10
	keptBuffer  = 16 << 10
)

// start readies the digests for an execution: kept when its answer has
// digests to compare with.
func (d *rowDigests) start(ev *event.Event) {
	a := ev.Answer()
	d.on = a != nil && a.Digests != nil
	if d.on {
		d.v = a.DigestVersion
	}
	d.reset()
}

// reset starts an exchange, as wire.rows does.
func (d *rowDigests) reset() {
	d.done, d.cur = d.done[:0], rowdigest.Digest{}
	d.kept, d.ends, d.over = d.kept[:0], d.ends[:0], false
	if cap(d.kept) > keptBuffer {
		d.kept, d.ends = nil, nil
	}
}

// row adds a DataRow of the target's.
func (d *rowDigests) row(m *pgproto3.DataRow) {
	if !d.on {
		return
	}
	d.buf = rowdigest.Values(d.buf, m.Values)
	d.cur.AddVersion(d.v, d.buf)
	if d.keep && len(d.done) == 0 && !d.over {
		if d.over = len(d.kept)+len(d.buf) > maxKeptRows; !d.over {
			d.kept = append(d.kept, d.buf...)
			d.ends = append(d.ends, len(d.kept))
		}
	}
	if cap(d.buf) > 1<<20 {
		d.buf = nil // an odd large row is not kept
	}
}

// completed ends a statement at its CommandComplete.
func (d *rowDigests) completed() {
	if d.on {
		d.done = append(d.done, d.cur)
		d.cur = rowdigest.Digest{}
	}
}

// failed drops the rows of a statement that failed.
func (d *rowDigests) failed() { d.cur = rowdigest.Digest{} }

// differingRow is the key of the one row in which the first statement's
// rows differ from the original's (orig, their digest), when one row
// alone differs (rowdigest.OneRowDiffers) and the rows were kept: its
// value in each column that can be the key of the ranges the statement
// reads (inRange): one whose values, read alike in every row, are all
// within those ranges and all distinct, as the key's are. A column's
// format is the client's, not known here: a column is read as text, or
// else as a binary int2, int4 or int8. A column of other values (a
// quantity, another table's id) seldom passes for the key in every row,
// so the differing row is not taken for a tainted key's by a value it
// only holds. Nil otherwise.
func (d *rowDigests) differingRow(orig rowdigest.Digest, inRange func(int64) bool) []int64 {
	if !d.on || d.over || len(d.done) == 0 || int64(len(d.ends)) != d.done[0].Rows {
		return nil
	}
	p, ok := rowdigest.OneRowDiffers(orig, d.done[0], d.v)
	if !ok {
		return nil
	}
	var keys []int64
	for c := 0; c < columnCount(d.keptRow(0)); c++ {
		for _, binary := range []bool{false, true} {
			if v, ok := d.keyColumn(c, binary, inRange, int(p)); ok {
				keys = append(keys, v)
			}
		}
	}
	return keys
}

// keptRow is kept row i's DataRow body.
func (d *rowDigests) keptRow(i int) []byte {
	from := 0
	if i > 0 {
		from = d.ends[i-1]
	}
	return d.kept[from:d.ends[i]]
}

// keyColumn is row p's value of column c, read as text or as binary,
// when every kept row's is within the ranges (inRange) and distinct.
func (d *rowDigests) keyColumn(c int, binary bool, inRange func(int64) bool, p int) (int64, bool) {
	seen := make(map[int64]struct{}, len(d.ends))
	var at int64
	for i := range d.ends {
		v, ok := columnInt(d.keptRow(i), c, binary)
		if _, dup := seen[v]; !ok || dup || !inRange(v) {
			return 0, false
		}
		seen[v] = struct{}{}
		if i == p {
			at = v
		}
	}
	return at, true
}

// columnCount is how many columns a DataRow body holds.
func columnCount(body []byte) int {
	if len(body) < 2 {
		return 0
	}
	return int(binary.BigEndian.Uint16(body))
}

// columnInt reads column c of a DataRow body as an integer: as text, or
// as a binary int2, int4 or int8 (binary). False for NULL, a cut body, or
// another value.
func columnInt(body []byte, c int, bin bool) (int64, bool) {
	if c >= columnCount(body) {
		return 0, false
	}
	b := body[2:]
	for j := 0; ; j++ {
		if len(b) < 4 {
			return 0, false
		}
		l := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if l < 0 || int(l) > len(b) {
			if j == c || l >= 0 {
				return 0, false // NULL, or cut
			}
			continue
		}
		if j < c {
			b = b[l:]
			continue
		}
		v := b[:l]
		switch {
		case !bin:
			x, err := strconv.ParseInt(string(v), 10, 64)
			return x, err == nil
		case l == 2:
			return int64(int16(binary.BigEndian.Uint16(v))), true
		case l == 4:
			return int64(int32(binary.BigEndian.Uint32(v))), true
		case l == 8:
			return int64(binary.BigEndian.Uint64(v)), true
		}
		return 0, false
	}
}

// valuesDiffer compares statement i's rows with the original's: by the
// ordered digest when the statement sorts at its top level, else by the
// digest that ignores order. False when either side has no digest of it.
func valuesDiffer(ans *event.Answer, got []rowdigest.Digest, i int, it fingerprint.Item, text string) bool {
	if ans == nil || i >= len(ans.Digests) || i >= len(got) {
		return false
	}
	return !ans.Digests[i].Equal(got[i], it.Class(text).Sorted)
}

// answerCause is what explains a statement's answer differing from the
// original's, when its text tells: a volatile function it calls, or what
// a server assigns that it reads; or, for different values, when with
// seqs (the target's sequence-filled columns) it tells that it returns
// what the target's sequence assigned ("" when none). Only a different
// row count or different values are explained so: an error has its own
// causes (Outcomes.OnlyOnTargetBySQLState). A sequence changes values,
// never how many rows an INSERT returns.
func answerCause(d querystats.AnswerDiff, it fingerprint.Item, text string, seqs seqColumns) (querystats.AnswerCause, string) {
	if d != querystats.AnswerRows && d != querystats.AnswerValues {
		return "", ""
	}
	cl := it.Class(text)
	switch {
	case cl.Volatile != "":
		return querystats.CauseVolatile, cl.Volatile
	case cl.ServerState != "":
		return querystats.CauseServerState, cl.ServerState
	}
	if d == querystats.AnswerValues {
		if col := sequenceReturned(cl, seqs); col != "" {
			return querystats.CauseSequence, col
		}
	}
	return "", ""
}
