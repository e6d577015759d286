// Package rowdigest is the digest of the rows a statement returned: what
// the capture proxy keeps of the DataRows it relays (never a row), and
// what a replay computes of the target's, so that answers are compared by
// content and not only by row count.
//
// A row hashes to a 64-bit hash of its DataRow body, the bytes after the
// message's type and length (column count, then each column's length and
// bytes, as the server sent them), and a Digest folds the rows' hashes two
// ways at once: Ordered depends on their order, Unordered does not (a
// sum). Which one to compare is decided when comparing: the order of a
// statement that sorts at its top level is part of its answer, the order
// of the others is the plan's and may change without anything being
// wrong. Both sides compute the same with this package, in the Version
// the capture says its digests are of.
//
// The hashes are multiply-mix hashes in the manner of wyhash (a 64x64-bit
// multiplication, its 128-bit product's halves XORed), meant to tell rows
// apart, not to resist an adversary. V1 hashed every row block by block
// and folded Ordered with a multiplication per row in a chain; V2
// hashes a row of up to 64 bytes with one to four independent
// multiplications and folds Ordered as a sum weighted by the row's
// position, so that an export of many small rows costs the proxy's relay
// about half of what V1 did (docs/capture-performance.md); V3, the current one,
// is V2 but for rows longer than 64 bytes, which V2 hashed as V1 (a chain
// of a multiplication per 16 bytes): a row of 65 to 128 bytes by eight
// independent multiplications, a longer one by four lanes of 64-byte
// stripes before them (long). The proxy digests the rows of each read in
// one loop over its buffer (AddRows), with no call per row of up to 64
// bytes.
package rowdigest

import (
	"encoding/binary"
	"math/bits"
)

// Version says which hash and folds a digest was made with. A capture
// says it of each digest it holds (docs/capture-format.md); a replay
// digests the target's rows in the same one.
type Version uint8

const (
	// V1: every row hashed by blocks of 16 bytes (RowV1), Ordered
	// folded by a multiplication chain. Captures written before V2.
	V1 Version = 1
	// V2: rows of up to 64 bytes hashed by one to four independent
	// multiplications (short), longer ones as V1; Ordered a sum of the
	// rows' hashes weighted by their positions.
	V2 Version = 2
	// V3: V2, but rows longer than 64 bytes hashed by independent
	// multiplications (long): eight for 65 to 128 bytes.
	V3 Version = 3
	// Current is the version Add, AddHash, Row and Stream make.
	Current = V3
)

// Known reports whether this package makes digests of version v.
func (v Version) Known() bool { return v >= V1 && v <= V3 }

// Digest is what a statement's rows hash to. The zero value is the
// digest of no rows.
type Digest struct {
	// Rows counts the rows hashed.
	Rows int64
	// Ordered folds the rows' hashes in order; Unordered sums them.
	Ordered, Unordered uint64
}

// orderPrime spreads each step of Ordered: in V1 an odd multiplier (the
// step is a bijection of the state, so no two states before a row
// merge); in V2 the step between the weights of consecutive positions.
const orderPrime = 0x9e3779b97f4a7c15

// The hash's constants (wyhash's), and long's others: wyhash's _wyp3 (p3)
// and _wyp4 (t1), and xxh3's PRIME64_2 (p4) and PRIME64_3 (t2).
const (
	p0 = 0xa0761d6478bd642f
	p1 = 0xe7037ed1a0b428db
	p2 = 0x8ebc6af09c88c6e3
	p3 = 0x589965cc75374cc3
	p4 = 0xc2b2ae3d27d4eb4f
	t1 = 0x1d8e4e27c47d124f
	t2 = 0x165667b19e3779f9
)

// mix folds the 128-bit product of a and b into 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// Row is the hash of one DataRow's body in the current version (V3): a
// body of up to 64 bytes by short, a longer one by long.
func Row(body []byte) uint64 {
	if len(body) <= shortMax {
		return short(body, len(body))
	}
	return long(body)
}

// rowV2 is the hash of one DataRow's body in V2: a body of up to 64 bytes
// by short, a longer one as RowV1 does.
func rowV2(body []byte) uint64 {
	if len(body) <= shortMax {
		return short(body, len(body))
	}
	return RowV1(body)
}

// shortMax is the longest body V2 and V3 hash by short.
const shortMax = 64

// le64 is the little-endian uint64 at the start of b.
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// long is V3's hash of a body of more than 64 bytes: with s its length
// XOR p0, while more than 128 bytes are left, each 64-byte stripe folded
// into four lanes that start at s, by one multiplication per 16 bytes and
// no lane depending on another; then last128 of what is left. A body of
// 65 to 128 bytes costs eight multiplications none of which waits for
// another (V1's chain costs eight that each wait for the one before).
func long(body []byte) uint64 {
	s := uint64(len(body)) ^ p0
	a, b, c, d := s, s, s, s
	r := body
	for len(r) > 128 {
		a = mix(le64(r)^p1, le64(r[8:])^a)
		b = mix(le64(r[16:])^p2, le64(r[24:])^b)
		c = mix(le64(r[32:])^p3, le64(r[40:])^c)
		d = mix(le64(r[48:])^p4, le64(r[56:])^d)
		r = r[64:]
	}
	// last128, written out: the compiler does not inline it.
	r, e := r[:64], body[len(body)-64:]
	return mix(le64(r)^p1, le64(r[8:])^a) ^ mix(le64(r[16:])^p2, le64(r[24:])^b) ^
		mix(le64(r[32:])^p3, le64(r[40:])^c) ^ mix(le64(r[48:])^p4, le64(r[56:])^d) ^
		mix(le64(e)^p1, le64(e[8:])^s^p2) ^ mix(le64(e[16:])^p2, le64(e[24:])^s^p1) ^
		mix(le64(e[32:])^p3, le64(e[40:])^s^t1) ^ mix(le64(e[48:])^p4, le64(e[56:])^s^t2)
}

// last128 is the end of long, and of a Stream's Sum: r's first 64 bytes
// mixed with the lanes a, b, c, d, XOR the last 64 bytes of the body, e,
// mixed with s (and other constants than r's, so that a body whose
// halves are alike does not cancel out).
func last128(r, e []byte, s, a, b, c, d uint64) uint64 {
	r, e = r[:64], e[:64]
	return mix(le64(r)^p1, le64(r[8:])^a) ^ mix(le64(r[16:])^p2, le64(r[24:])^b) ^
		mix(le64(r[32:])^p3, le64(r[40:])^c) ^ mix(le64(r[48:])^p4, le64(r[56:])^d) ^
		mix(le64(e)^p1, le64(e[8:])^s^p2) ^ mix(le64(e[16:])^p2, le64(e[24:])^s^p1) ^
		mix(le64(e[32:])^p3, le64(e[40:])^s^t1) ^ mix(le64(e[48:])^p4, le64(e[56:])^s^t2)
}

// short is V2's hash of a body of n bytes, at most shortMax, of which b
// holds all (or, for a Stream cut short, the first len(b)): with s the
// length XOR p0, one multiplication of its first and last 8 bytes (fewer
// when it has fewer); two independent ones for 17 to 32 bytes, of its
// first 16 and of its last 16; four for 33 to 64, of the first 32 so,
// and of the last 32 with other constants. A DataRow body starts with
// its column count, whose high byte is never p1's low byte, so that the
// first multiplier is never zero.
func short(b []byte, n int) uint64 {
	s := uint64(n) ^ p0
	switch k := len(b); {
	case k > 32:
		return mix32(b, k, s)
	case k > 16:
		return mix16(b, k, s)
	case k >= 8:
		return mix(binary.LittleEndian.Uint64(b)^p1, binary.LittleEndian.Uint64(b[k-8:])^s)
	case k >= 4:
		return mix(uint64(binary.LittleEndian.Uint32(b))^p1, uint64(binary.LittleEndian.Uint32(b[k-4:]))^s)
	case k > 0:
		return mix((uint64(b[0])<<16|uint64(b[k/2])<<8|uint64(b[k-1]))^p1, s)
	}
	return mix(p1, s)
}

// mix16 is short of 17 to 32 bytes b[:k].
func mix16(b []byte, k int, s uint64) uint64 {
	return mix(binary.LittleEndian.Uint64(b)^p1, binary.LittleEndian.Uint64(b[8:])^s) ^
		mix(binary.LittleEndian.Uint64(b[k-16:])^p2, binary.LittleEndian.Uint64(b[k-8:])^s)
}

// mix32 is short of 33 to 64 bytes b[:k]: the first 32 as mix16 of 32,
// the last 32 with the second multipliers' constants changed, so that a
// body whose halves are alike does not cancel out.
func mix32(b []byte, k int, s uint64) uint64 {
	e := b[k-32:]
	return mix(binary.LittleEndian.Uint64(b)^p1, binary.LittleEndian.Uint64(b[8:])^s) ^
		mix(binary.LittleEndian.Uint64(b[16:])^p2, binary.LittleEndian.Uint64(b[24:])^s) ^
		mix(binary.LittleEndian.Uint64(e)^p1, binary.LittleEndian.Uint64(e[8:])^s^p2) ^
		mix(binary.LittleEndian.Uint64(e[16:])^p2, binary.LittleEndian.Uint64(e[24:])^s^p1)
}

// RowV1 is the hash of one DataRow's body in V1 (and of a body longer
// than 64 bytes in V2): its length, then each 16-byte block but the
// last, then the last 1 to 16 bytes.
func RowV1(body []byte) uint64 {
	h := uint64(len(body)) ^ p0
	b := body
	for len(b) > 16 {
		h = block(h, b)
		b = b[16:]
	}
	return tail(h, b, len(body))
}

// block folds a 16-byte block into h.
func block(h uint64, b []byte) uint64 {
	return mix(binary.LittleEndian.Uint64(b)^p1, binary.LittleEndian.Uint64(b[8:])^h)
}

// tail folds the last 0 to 16 bytes of a body of n bytes into h.
func tail(h uint64, b []byte, n int) uint64 {
	var x, y uint64
	switch k := len(b); {
	case k >= 8:
		x, y = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[k-8:])
	case k >= 4:
		x, y = uint64(binary.LittleEndian.Uint32(b)), uint64(binary.LittleEndian.Uint32(b[k-4:]))
	case k > 0:
		x = uint64(b[0])<<16 | uint64(b[k/2])<<8 | uint64(b[k-1])
	}
	return mix(mix(x^p1, y^h)^p2, uint64(n)^p1)
}

// AddHash adds a row whose hash is h (Row, or a Stream's Sum), in the
// current version: Ordered gains h times an odd weight of the row's
// position, so that no multiplication chains one row to the next.
func (d *Digest) AddHash(h uint64) {
	d.Rows++
	d.Ordered += h * (uint64(d.Rows)*orderPrime | 1)
	d.Unordered += h
}

// Add adds a row, its DataRow body, in the current version: AddHash of
// Row, with short's commonest cases written out again, so that a small
// row, the proxy's commonest, costs no call (the compiler inlines neither
// short nor Add; TestEqual and FuzzRow hold the two alike).
func (d *Digest) Add(body []byte) {
	var h uint64
	s := uint64(len(body)) ^ p0
	switch k := len(body); {
	case k > shortMax:
		h = long(body)
	case k > 32:
		e := body[k-32:]
		h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[8:])^s) ^
			mix(binary.LittleEndian.Uint64(body[16:])^p2, binary.LittleEndian.Uint64(body[24:])^s) ^
			mix(binary.LittleEndian.Uint64(e)^p1, binary.LittleEndian.Uint64(e[8:])^s^p2) ^
			mix(binary.LittleEndian.Uint64(e[16:])^p2, binary.LittleEndian.Uint64(e[24:])^s^p1)
	case k > 16:
		h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[8:])^s) ^
			mix(binary.LittleEndian.Uint64(body[k-16:])^p2, binary.LittleEndian.Uint64(body[k-8:])^s)
	case k >= 8:
		h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[k-8:])^s)
	default:
		h = short(body, k)
	}
	d.Rows++
	d.Ordered += h * (uint64(d.Rows)*orderPrime | 1)
	d.Unordered += h
}

// AddRows adds the DataRows at the start of msgs, messages back to back
// as the server sends them (type 'D', length, body), in the current
// version, as Add does each body, up to the first message that is not a
// DataRow, is not whole in msgs, or declares a length under 4: it returns
// the bytes and the rows it took. It is Add in one loop over a read
// buffer, for the proxy's relay: no call per row of up to 64 bytes, and
// the digest's state kept in registers until the end. (long written out
// here too made rows of 110 bytes cheaper still, but rows of 16 to 18
// bytes dearer by a fifth: docs/capture-performance.md.)
func (d *Digest) AddRows(msgs []byte) (n, rows int) {
	ordered, unordered := d.Ordered, d.Unordered
	w := uint64(d.Rows) * orderPrime // a row's weight, less its | 1
	for len(msgs)-n >= 5 && msgs[n] == 'D' {
		l := int(binary.BigEndian.Uint32(msgs[n+1:]))
		if l < 4 || l >= len(msgs)-n {
			break
		}
		body := msgs[n+5 : n+1+l]
		n += 1 + l
		rows++
		var h uint64
		s := uint64(len(body)) ^ p0
		switch k := len(body); {
		case k > shortMax:
			h = long(body)
		case k > 32:
			e := body[k-32:]
			h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[8:])^s) ^
				mix(binary.LittleEndian.Uint64(body[16:])^p2, binary.LittleEndian.Uint64(body[24:])^s) ^
				mix(binary.LittleEndian.Uint64(e)^p1, binary.LittleEndian.Uint64(e[8:])^s^p2) ^
				mix(binary.LittleEndian.Uint64(e[16:])^p2, binary.LittleEndian.Uint64(e[24:])^s^p1)
		case k > 16:
			h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[8:])^s) ^
				mix(binary.LittleEndian.Uint64(body[k-16:])^p2, binary.LittleEndian.Uint64(body[k-8:])^s)
		case k >= 8:
			h = mix(binary.LittleEndian.Uint64(body)^p1, binary.LittleEndian.Uint64(body[k-8:])^s)
		default:
			h = short(body, k)
		}
		w += orderPrime
		ordered += h * (w | 1)
		unordered += h
	}
	d.Rows += int64(rows)
	d.Ordered, d.Unordered = ordered, unordered
	return n, rows
}

// AddVersion adds a row, its DataRow body, in version v: V1 or V2 for a
// digest of a capture written before the next, Current otherwise.
func (d *Digest) AddVersion(v Version, body []byte) {
	switch v {
	case V1:
		h := RowV1(body)
		d.Rows++
		d.Ordered = bits.RotateLeft64((d.Ordered^h)*orderPrime, 29)
		d.Unordered += h
	case V2:
		d.AddHash(rowV2(body)) // V2 folds as V3
	default:
		d.Add(body)
	}
}

// Equal reports whether two digests are of the same rows, in the same
// order when ordered.
func (d Digest) Equal(o Digest, ordered bool) bool {
	if d.Rows != o.Rows || d.Unordered != o.Unordered {
		return false
	}
	return !ordered || d.Ordered == o.Ordered
}

// OneRowDiffers finds the row in which two digests of as many rows differ
// when only one does: its position, from 0. In V2 and later Unordered is
// the sum of the rows' hashes and Ordered the sum weighted by position,
// so one row at position p whose hash differs by x changes Unordered by x
// and Ordered by p's weight times x: the position is the one whose
// weight times the difference of Unordered is the difference of Ordered.
// False when the counts differ, the digests are V1 or equal, or no one
// row explains the difference (several rows differ, or their order), or
// more than one would (a difference with that many low zero bits; the
// chance that several rows' differences pass for one row's is about the
// count over 2^64). It tries every position: for a differing answer.
func OneRowDiffers(a, b Digest, v Version) (int64, bool) {
	du, do := a.Unordered-b.Unordered, a.Ordered-b.Ordered
	if v < V2 || a.Rows != b.Rows || du == 0 {
		return 0, false
	}
	found, n := int64(0), 0
	for p := range a.Rows {
		if du*(uint64(p+1)*orderPrime|1) == do {
			found, n = p, n+1
		}
	}
	return found, n == 1
}

// Stream hashes a row given in pieces (a DataRow larger than the proxy's
// buffer, relayed as it arrives) to the same hash Row gives of the whole.
type Stream struct {
	n int // the body's length, as its message declares it
	// a, b, c, d are long's lanes.
	a, b, c, d uint64
	buf        [192]byte
	// k counts the bytes in buf: of a body of up to shortMax bytes,
	// all it got; of a longer one, those not yet folded, at most 128
	// once a Write returns.
	k int
}

// Reset starts a row whose body has n bytes.
func (s *Stream) Reset(n int) {
	h := uint64(n) ^ p0
	*s = Stream{n: n, a: h, b: h, c: h, d: h}
}

// Write adds the next piece of the row's body. A short body is kept
// whole until Sum; of a longer one, a stripe of 64 bytes is folded into
// the lanes only once more than 128 bytes after its start have come,
// since long folds the last 65 to 128 bytes otherwise (Sum).
func (s *Stream) Write(p []byte) {
	if s.n <= shortMax {
		s.k += copy(s.buf[s.k:shortMax], p)
		return
	}
	for len(p) > 0 {
		c := copy(s.buf[s.k:], p)
		s.k += c
		p = p[c:]
		for s.k > 128 {
			r := s.buf[:64]
			s.a = mix(le64(r)^p1, le64(r[8:])^s.a)
			s.b = mix(le64(r[16:])^p2, le64(r[24:])^s.b)
			s.c = mix(le64(r[32:])^p3, le64(r[40:])^s.c)
			s.d = mix(le64(r[48:])^p4, le64(r[56:])^s.d)
			s.k = copy(s.buf[:], s.buf[64:s.k])
		}
	}
}

// Sum is the row's hash. A stream that did not get the n bytes Reset
// declared (a message cut short) hashes as what it got, which no whole row
// of n bytes gives (of a long body, fewer than 64 bytes as if zeros
// followed them).
func (s *Stream) Sum() uint64 {
	if s.n <= shortMax {
		return short(s.buf[:s.k], s.n)
	}
	m := max(s.k, 64)
	return last128(s.buf[:m], s.buf[m-64:m], uint64(s.n)^p0, s.a, s.b, s.c, s.d)
}

// Values is the DataRow body of a row decoded into its values (nil for
// NULL), as a client library decodes it: the bytes Row hashes, written
// into buf (grown when too small) and returned.
func Values(buf []byte, values [][]byte) []byte {
	buf = binary.BigEndian.AppendUint16(buf[:0], uint16(len(values)))
	for _, v := range values {
		if v == nil {
			buf = binary.BigEndian.AppendUint32(buf, 0xffffffff)
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(v)))
		buf = append(buf, v...)
	}
	return buf
}

// Size is the size of a Digest's encoding: its row count as a uvarint,
// then, when it has rows, both hashes (8 bytes each, little-endian).
func (d Digest) Size() int {
	n := UvarintLen(uint64(d.Rows))
	if d.Rows != 0 {
		n += 16
	}
	return n
}

// Append appends d's encoding to b.
func (d Digest) Append(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(d.Rows))
	if d.Rows == 0 {
		return b
	}
	b = binary.LittleEndian.AppendUint64(b, d.Ordered)
	return binary.LittleEndian.AppendUint64(b, d.Unordered)
}

// Decode reads a Digest's encoding at the start of b and returns it with
// the bytes it took; ok is false when b does not hold one whole.
func Decode(b []byte) (d Digest, n int, ok bool) {
	rows, n := binary.Uvarint(b)
	if n <= 0 || rows > 1<<62 || n != UvarintLen(rows) {
		// Damaged, or not written by Append (which writes the
		// shortest form).
		return Digest{}, 0, false
	}
	d.Rows = int64(rows)
	if rows == 0 {
		return d, n, true
	}
	if len(b) < n+16 {
		return Digest{}, 0, false
	}
	d.Ordered = binary.LittleEndian.Uint64(b[n:])
	d.Unordered = binary.LittleEndian.Uint64(b[n+8:])
	return d, n + 16, true
}

// UvarintLen is the length of x's uvarint encoding
// (binary.AppendUvarint's): a Digest's row count here, and the capture
// format's lengths and numbers (package capture).
func UvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
