package rowdigest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/proctest"
	"math/bits"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// body is a DataRow's body, as the server sends it.
func body(values ...[]byte) []byte {
	b, err := (&pgproto3.DataRow{Values: values}).Encode(nil)
	if err != nil {
		panic(err)
	}
	return b[5:]
}

func digest(rows ...[]byte) Digest { return digestV(Current, rows...) }

func digestV(v Version, rows ...[]byte) Digest {
	var d Digest
	for _, r := range rows {
		d.AddVersion(v, r)
	}
	return d
}

// TestEqual: in each version, the same rows in another order are equal
// unordered, not ordered; another value, a NULL for an empty string, a
// row more or a duplicate row instead of another are never equal; Add is
// AddVersion of the current version, and AddHash of Row.
func TestEqual(t *testing.T) {
	for _, v := range []Version{V1, V2, V3} {
		testEqual(t, v)
	}
	mid, long, longer := body(bytes.Repeat([]byte("y"), 40)), body(bytes.Repeat([]byte("y"), 70)), body(bytes.Repeat([]byte("y"), 300))
	for _, rows := range [][][]byte{{}, {body(nil)}, {body([]byte("1")), mid, long, longer, body([]byte("123456"), []byte("0"))}} {
		var add, hashed Digest
		for _, r := range rows {
			add.Add(r)
			hashed.AddHash(Row(r))
		}
		if want := digestV(Current, rows...); add != want || hashed != want {
			t.Errorf("%d rows: Add %+v, AddHash %+v, AddVersion %+v", len(rows), add, hashed, want)
		}
	}
}

func testEqual(t *testing.T, v Version) {
	digest := func(rows ...[]byte) Digest { return digestV(v, rows...) }
	a, b, c := body([]byte("1"), []byte("a")), body([]byte("2"), []byte("b")), body([]byte("3"), nil)
	long := body(bytes.Repeat([]byte("z"), 33), bytes.Repeat([]byte("z"), 40))
	// Another version: V2 and V3 hash rows of up to 64 bytes alike, V1
	// and V2 longer ones.
	other, otherLong := V1, V3
	if v == V1 {
		other = Current
	}
	if v == V3 {
		otherLong = V2
	}
	for _, tc := range []struct {
		name               string
		x, y               Digest
		ordered, unordered bool
	}{
		{"same", digest(a, b, c), digest(a, b, c), true, true},
		{"none", Digest{}, digest(), true, true},
		{"reordered", digest(a, b, c), digest(c, a, b), false, true},
		{"swapped pair", digest(a, b), digest(b, a), false, true},
		{"other value", digest(a, b), digest(a, body([]byte("2"), []byte("c"))), false, false},
		{"null for empty", digest(body(nil)), digest(body([]byte{})), false, false},
		{"a row more", digest(a, b), digest(a, b, c), false, false},
		{"duplicate instead", digest(a, a), digest(a, b), false, false},
		{"duplicates cancel not", digest(a, a, b), digest(b), false, false},
		{"columns split otherwise", digest(body([]byte("ab"), []byte("c"))), digest(body([]byte("a"), []byte("bc"))), false, false},
		{"long reordered", digest(a, long, b, c), digest(long, c, b, a), false, true},
		{"other version", digest(a, b), digestV(other, a, b), false, false},
		{"other version, long rows", digest(long, long), digestV(otherLong, long, long), false, false},
	} {
		if got := tc.x.Equal(tc.y, true); got != tc.ordered {
			t.Errorf("V%d: %s: ordered equal %v, want %v", v, tc.name, got, tc.ordered)
		}
		if got := tc.x.Equal(tc.y, false); got != tc.unordered {
			t.Errorf("V%d: %s: unordered equal %v, want %v", v, tc.name, got, tc.unordered)
		}
	}
}

// TestAddRows: AddRows takes the whole DataRows at the start of a buffer,
// and stops at the first message that is not one, or not whole, or
// declares a length under 4.
func TestAddRows(t *testing.T) {
	msg := func(typ byte, body []byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{typ}, uint32(4+len(body))), body...)
	}
	a, b := body([]byte("1"), []byte("a")), body(bytes.Repeat([]byte("w"), 150))
	rows := slices.Concat(msg('D', a), msg('D', b), msg('D', a))
	for _, tc := range []struct {
		name  string
		buf   []byte
		taken int
	}{
		{"no message", nil, 0},
		{"rows then a complete", slices.Concat(rows, msg('C', []byte("SELECT 3\x00"))), 3},
		{"rows then part of a row", slices.Concat(rows, msg('D', a)[:9]), 3},
		{"rows then a length", slices.Concat(rows, msg('D', a)[:5]), 3},
		{"rows then a type", slices.Concat(rows, []byte{'D', 0}), 3},
		{"a length under 4", slices.Concat(rows, []byte{'D', 0, 0, 0, 3, 0, 0}), 3},
		{"a length that wraps", slices.Concat(rows, []byte{'D', 0xff, 0xff, 0xff, 0xff, 0, 0}), 3},
		{"a complete first", slices.Concat(msg('C', []byte("SELECT 3\x00")), rows), 0},
	} {
		var got, want Digest
		got.Add(b) // a digest under way
		want.Add(b)
		n, k := got.AddRows(tc.buf)
		for _, r := range [][]byte{a, b, a}[:tc.taken] {
			want.Add(r)
		}
		if wantN := len(rows) * tc.taken / 3; n != wantN || k != tc.taken || got != want {
			t.Errorf("%s: took %d bytes, %d rows, want %d, %d; digest %+v, want %+v", tc.name, n, k, wantN, tc.taken, got, want)
		}
	}
}

// TestStreamAndValues: a row hashed in pieces, or rebuilt from its
// decoded values as the replay has them, hashes as its body does.
func TestStreamAndValues(t *testing.T) {
	row := body([]byte("hello"), nil, []byte{}, bytes.Repeat([]byte("x"), 40000))
	var s Stream
	s.Reset(len(row))
	for p := row; len(p) > 0; {
		n := min(len(p), 16<<10)
		s.Write(p[:n])
		p = p[n:]
	}
	if s.Sum() != Row(row) {
		t.Error("a row hashed in pieces differs from the whole")
	}
	var dr pgproto3.DataRow
	if err := dr.Decode(row); err != nil {
		t.Fatal(err)
	}
	if got := Values(nil, dr.Values); !bytes.Equal(got, row) {
		t.Errorf("values rebuilt to %d bytes, the body has %d", len(got), len(row))
	}
}

// TestStreamPieces: every body of up to 300 bytes, written in pieces of
// every size up to 20, hashes as whole; and no two of those bodies (each
// a prefix of the next, or one byte changed) share a hash.
func TestStreamPieces(t *testing.T) {
	seen := map[uint64]string{}
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for n := 0; n <= len(data); n++ {
		b := data[:n]
		want := Row(b)
		for piece := 1; piece <= 20; piece++ {
			var s Stream
			s.Reset(n)
			for p := b; len(p) > 0; p = p[min(piece, len(p)):] {
				s.Write(p[:min(piece, len(p))])
			}
			if s.Sum() != want {
				t.Fatalf("%d bytes in pieces of %d: %x, whole %x", n, piece, s.Sum(), want)
			}
		}
		for _, v := range [][]byte{b, append(bytes.Clone(b), 0)} {
			if n > 0 {
				v = bytes.Clone(v)
				v[n-1] ^= 1
			}
			h := Row(v)
			if other, ok := seen[h]; ok && other != string(v) {
				t.Fatalf("%x and %x share a hash", v, other)
			}
			seen[h] = string(v)
		}
		if other, ok := seen[want]; ok && other != string(b) {
			t.Fatalf("%x and %x share a hash", b, other)
		}
		seen[want] = string(b)
	}
}

// TestPinned: the hashes of a few bodies, and a digest of two rows, are
// pinned, in each version. The proxy and a replay of its capture must hash
// alike, possibly years and releases apart: a hash that changes (to make
// the relay cheaper, say) changes every digest an older capture holds,
// which a replay would then report as other values. Such a change must
// come as a new Version, which the capture format records with each
// digest (docs/capture-format.md), the older ones kept as they are.
func TestPinned(t *testing.T) {
	for _, tc := range []struct {
		body []byte
		want uint64
	}{
		{[]byte{}, 0x96ebbe173ff72a30},
		{body(nil), 0xf4f69ad78d939b26},
		{body([]byte("1")), 0x2bb1ad8214e998fb},
		{body([]byte("-2417")), 0x7c5f995fcf5c16a0},
		{body([]byte("12345"), []byte("some text value"), []byte("2026-11-25 06:30:00+00"), nil), 0x463c93062eb904f3},
		{body(bytes.Repeat([]byte("x"), 300)), 0x683080888f25f90e},
	} {
		if got := RowV1(tc.body); got != tc.want {
			t.Errorf("V1: Row of %d bytes: %#x, pinned %#x", len(tc.body), got, tc.want)
		}
	}
	var d Digest
	d.AddVersion(V1, body([]byte("1"), []byte("a")))
	d.AddVersion(V1, body([]byte("2"), []byte("b")))
	if want := (Digest{Rows: 2, Ordered: 0xc03ea245e6c77880, Unordered: 0x525c12b6e36a8ace}); d != want {
		t.Errorf("V1: digest of two rows %+v, pinned %+v", d, want)
	}
	for _, tc := range []struct {
		body []byte
		want uint64
	}{
		{[]byte{}, 0x1ff5c2923a788d2c},
		{body(nil), 0xad30e1d21e798dd8},
		{body([]byte("1")), 0x28278534f201e05f},
		{body([]byte("-2417")), 0x261c6f6f95d69376},
		{body([]byte("123456"), []byte("0")), 0x1f27ccb7170a2358},
		{body([]byte("12345"), []byte("some text value")), 0x18618b0fee94c2a1},
		{body([]byte("12345"), []byte("some text value"), []byte("2026-11-25 06:30:00+00"), nil), 0x818ad86208f4518b},
		{body(bytes.Repeat([]byte("x"), 300)), 0x683080888f25f90e},
	} {
		if got := rowV2(tc.body); got != tc.want {
			t.Errorf("V2: Row of %d bytes: %#x, pinned %#x", len(tc.body), got, tc.want)
		}
	}
	d = digestV(V2, body([]byte("1"), []byte("a")), body([]byte("2"), []byte("b")))
	if want := (Digest{Rows: 2, Ordered: 0xede91c4bd44fac5b, Unordered: 0xb9279a980517cebb}); d != want {
		t.Errorf("V2: digest of two rows %+v, pinned %+v", d, want)
	}
	filler := body([]byte("283114"), []byte("3"), []byte("0"), bytes.Repeat([]byte(" "), 84))
	for _, tc := range []struct {
		body []byte
		want uint64
	}{
		// Up to 64 bytes, as V2.
		{[]byte{}, 0x1ff5c2923a788d2c},
		{body([]byte("1")), 0x28278534f201e05f},
		{body([]byte("12345"), []byte("some text value"), []byte("2026-11-25 06:30:00+00"), nil), 0x818ad86208f4518b},
		{filler, 0xafb3c99601a65271},
		{body(bytes.Repeat([]byte("x"), 122)), 0xaf9a758342da7e0d},
		{body(bytes.Repeat([]byte("x"), 123)), 0x83f81602e612237c},
		{body(bytes.Repeat([]byte("x"), 300)), 0x8928b0ef63facec8},
	} {
		if got := Row(tc.body); got != tc.want {
			t.Errorf("V3: Row of %d bytes: %#x, pinned %#x", len(tc.body), got, tc.want)
		}
	}
	d = digestV(V3, body([]byte("1"), []byte("a")), filler)
	if want := (Digest{Rows: 2, Ordered: 0x916aae08864f9714, Unordered: 0xf6a27df1ce894166}); d != want {
		t.Errorf("V3: digest of two rows %+v, pinned %+v", d, want)
	}
}

// TestEncoding: a digest reads back as written, a digest of no rows
// takes one byte, and a short one does not decode.
func TestEncoding(t *testing.T) {
	for _, d := range []Digest{{}, digest(body([]byte("1"))), {Rows: 1 << 40, Ordered: 1<<64 - 1, Unordered: 7}} {
		b := d.Append([]byte{0xaa})[1:]
		if len(b) != d.Size() {
			t.Errorf("%+v: %d bytes, Size says %d", d, len(b), d.Size())
		}
		got, n, ok := Decode(append(b, 0xbb))
		if !ok || n != len(b) || got != d {
			t.Errorf("%+v: decoded %+v, %d bytes, %v", d, got, n, ok)
		}
		if d.Rows != 0 {
			if _, _, ok := Decode(b[:len(b)-1]); ok {
				t.Errorf("%+v: decoded one byte short", d)
			}
		}
	}
	if (Digest{}).Size() != 1 {
		t.Error("no rows takes more than a byte")
	}
}

// FuzzDecode: any bytes decode or not without panic, and what decodes
// encodes back to the bytes it took.
func FuzzDecode(f *testing.F) {
	f.Add(digest(body([]byte("1"))).Append(nil))
	f.Add([]byte{0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, n, ok := Decode(b)
		if !ok {
			return
		}
		if n > len(b) || n != d.Size() {
			t.Fatalf("took %d of %d bytes, Size %d", n, len(b), d.Size())
		}
		if d2, _, _ := Decode(d.Append(nil)); d2 != d {
			t.Fatalf("%+v re-decoded as %+v", d, d2)
		}
	})
}

// FuzzRow: a DataRow body cut anywhere hashes in pieces as whole; Add is
// AddHash of Row and AddVersion of V3, and AddRows of its message; a row
// of up to 64 bytes hashes in V3 as in V2, a longer one in V2 as in V1
// (and AddVersion of V2 is AddHash of that); and one that decodes is
// rebuilt from its values byte for byte, so the replay's digest of what
// pgx decoded is the proxy's of what it relayed.
func FuzzRow(f *testing.F) {
	f.Add(body([]byte("a"), nil, []byte{}), 1)
	f.Add([]byte{0, 1, 0xff, 0xff, 0xff, 0xff}, 3)
	f.Add([]byte{}, 0)
	f.Add(body([]byte("123456"), []byte("0")), 9)
	f.Add(body(bytes.Repeat([]byte("w"), 27)), 20)
	f.Add(body([]byte("283114"), []byte("3"), []byte("0"), bytes.Repeat([]byte(" "), 84)), 70)
	f.Add(body(bytes.Repeat([]byte("w"), 123)), 64)
	f.Add(body(bytes.Repeat([]byte("w"), 124)), 129)
	f.Add(body(bytes.Repeat([]byte("w"), 500)), 200)
	f.Fuzz(func(t *testing.T, row []byte, cut int) {
		if cut < 0 || cut > len(row) {
			cut = len(row) / 2
		}
		var s Stream
		s.Reset(len(row))
		s.Write(row[:cut])
		s.Write(row[cut:])
		if s.Sum() != Row(row) {
			t.Fatal("pieces hash otherwise than the whole")
		}
		var add, hashed, v3, v2, hashedV2 Digest
		add.Add(row)
		hashed.AddHash(Row(row))
		v3.AddVersion(V3, row)
		if add != hashed || add != v3 {
			t.Fatalf("Add %+v, AddHash of Row %+v, AddVersion V3 %+v", add, hashed, v3)
		}
		v2.AddVersion(V2, row)
		hashedV2.AddHash(rowV2(row))
		if v2 != hashedV2 {
			t.Fatalf("AddVersion V2 %+v, AddHash of V2's row hash %+v", v2, hashedV2)
		}
		if len(row) > shortMax && rowV2(row) != RowV1(row) {
			t.Fatal("a long row hashes otherwise in V2 than in V1")
		}
		if len(row) <= shortMax && Row(row) != rowV2(row) {
			t.Fatal("a short row hashes otherwise in V3 than in V2")
		}
		// AddRows of the row as a message, twice, after a row added
		// otherwise, then a message of another type.
		msg := append(binary.BigEndian.AppendUint32([]byte{'D'}, uint32(4+len(row))), row...)
		msgs := append(append(bytes.Clone(msg), msg...), 'C', 0, 0, 0, 4)
		var rows, added Digest
		rows.Add(row)
		added.Add(row)
		added.Add(row)
		added.Add(row)
		if n, k := rows.AddRows(msgs); n != 2*len(msg) || k != 2 || rows != added {
			t.Fatalf("AddRows took %d bytes, %d rows: %+v; Add %+v", n, k, rows, added)
		}
		var dr pgproto3.DataRow
		if dr.Decode(row) != nil {
			return
		}
		// pgproto3 ignores bytes after the last value; the server
		// sends none.
		if got := Values(nil, dr.Values); !bytes.Equal(got, row[:len(got)]) {
			t.Fatalf("rebuilt %x from %x", got, row)
		}
	})
}

// BenchmarkRow is the cost of hashing one row of a typical size.
func BenchmarkRow(b *testing.B) {
	var d Digest
	row := body([]byte("12345"), []byte("some text value"), []byte("2026-11-25 06:30:00+00"), nil)
	b.SetBytes(int64(len(row)))
	for b.Loop() {
		d.Add(row)
	}
}

// dataRows is n DataRow messages as a server sends them back to back:
// narrow, two ints as pgbench_accounts' aid and abalance (bodies of 16 to
// 18 bytes, as BenchmarkCaptureDigest's narrow10k export); wide, bodies of
// 61 bytes (proxy's BenchmarkRelayRows' bulk60); filler, pgbench_accounts'
// whole rows (aid, bid, abalance, and its filler of 84 characters: bodies
// of 109 to 111 bytes, as BenchmarkCaptureDigest's wide10k export); or
// mixed, as BenchmarkCaptureDigest's rows100 (25 to 315 bytes: an int, an
// int, an int, a NULL or 84 characters, 0 to 199 more).
func dataRows(n int, shape string) []byte {
	var buf []byte
	for i := range n {
		aid := []byte(strconv.Itoa(99_000 + i*37%900_000))
		vals := [][]byte{aid, []byte("0")}
		switch shape {
		case "wide":
			vals = [][]byte{append(bytes.Repeat([]byte("k"), 16), aid...), bytes.Repeat([]byte("v"), 29)}
		case "filler":
			vals = [][]byte{aid, []byte(strconv.Itoa(1 + i*37%900_000/100_000)), []byte("0"), bytes.Repeat([]byte(" "), 84)}
		case "mixed":
			filler := []byte(nil)
			if i%3 == 0 {
				filler = bytes.Repeat([]byte(" "), 84)
			}
			vals = [][]byte{aid, []byte("1"), []byte("0"), filler, bytes.Repeat([]byte("x"), i*37%200)}
		}
		msg, err := (&pgproto3.DataRow{Values: vals}).Encode(nil)
		if err != nil {
			panic(err)
		}
		buf = append(buf, msg...)
	}
	return buf
}

// BenchmarkDataRows is the digest of a statement's rows in memory, as the
// proxy's relay makes it: DataRow messages back to back, each digested in
// place, its body framed by its length, by AddVersion of V1 and by Add
// (the current version), and only framed (the relay's least cost per
// message); and by AddRows, which frames the rows itself, as the relay
// now digests them. The four by turns in each iteration. It
// reports the CPU time per row of the framing alone (the process's:
// sturdier than the wall time on a shared machine), and of each digest
// less the framing.
//
//	go test -run '^$' -bench DataRows -benchtime 100x -count 3 ./internal/rowdigest
func BenchmarkDataRows(b *testing.B) {
	for _, shape := range []string{"narrow", "wide", "filler", "mixed"} {
		msgs := dataRows(10_000, shape)
		b.Run(shape, func(b *testing.B) {
			d := new(Digest) // in memory, as the proxy's session holds it
			var sink int
			var cpu [4]time.Duration // framed only, V1, current, AddRows
			for b.Loop() {
				for how := range cpu {
					c0 := proctest.ProcessCPU(b)
					for range 10 {
						*d = Digest{}
						if how == 3 {
							if n, _ := d.AddRows(msgs); n != len(msgs) {
								b.Fatal(n)
							}
							continue
						}
						for m := msgs; len(m) > 5; {
							n := 1 + int(binary.BigEndian.Uint32(m[1:]))
							switch how {
							case 2:
								d.Add(m[5:n])
							case 1:
								d.AddVersion(V1, m[5:n])
							default:
								sink += int(m[5])
							}
							m = m[n:]
						}
					}
					cpu[how] += proctest.ProcessCPU(b) - c0
				}
			}
			rows := float64(b.N * 10 * 10_000)
			perRow := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / rows }
			b.ReportMetric(perRow(cpu[0]), "frame-cpu-ns/row")
			b.ReportMetric(perRow(cpu[1]-cpu[0]), "v1-digest-cpu-ns/row")
			b.ReportMetric(perRow(cpu[2]-cpu[0]), "current-digest-cpu-ns/row")
			b.ReportMetric(perRow(cpu[3]-cpu[0]), "addrows-digest-cpu-ns/row")
			if d.Rows != 10_000 || sink < 0 {
				b.Fatal(d.Rows)
			}
		})
	}
}

// TestDistinct: rows such as tables hold, many alike but for a few bytes,
// hash apart in each version: two ints as text, an int in binary, a
// text of 17 to 32 bytes, one of 33 to 64 whose halves are alike but
// for a few bytes, pgbench_accounts' whole rows (110 bytes, a long
// filler alike in all), and rows of 200 to 300 bytes alike but for a
// number in their first, middle or last bytes; and in the ordered
// digest of 10,000 of them, swapping any two rows shows, as do two
// rotations.
func TestDistinct(t *testing.T) {
	var rows [][]byte
	for i := range 400 {
		for j := range 250 {
			rows = append(rows, body([]byte(strconv.Itoa(990_000+i)), []byte(strconv.Itoa(j-100))))
		}
	}
	for i := range 1 << 16 {
		rows = append(rows, body(binary.BigEndian.AppendUint32(nil, uint32(i)<<8|uint32(i>>8))))
		rows = append(rows, body([]byte(fmt.Sprintf("customer-%016d", i))))
		rows = append(rows, body([]byte(fmt.Sprintf("customer-%0*d-customer-%0*d", i%4+1, i, i%7+3, i))))
		rows = append(rows, body([]byte(strconv.Itoa(100_000+i)), []byte(strconv.Itoa(i%10)), []byte("0"), bytes.Repeat([]byte(" "), 84)))
		pad := bytes.Repeat([]byte("y"), 100+i%5*40)
		rows = append(rows, body(pad, []byte(strconv.Itoa(i)), pad))
		rows = append(rows, body([]byte(strconv.Itoa(i)), pad, pad))
		rows = append(rows, body(pad, pad, []byte(strconv.Itoa(i))))
	}
	for _, v := range []Version{V1, V2, V3} {
		seen := make(map[uint64]int, len(rows))
		for i, r := range rows {
			var d Digest
			d.AddVersion(v, r)
			if j, ok := seen[d.Unordered]; ok {
				t.Fatalf("V%d: %x and %x share a hash", v, rows[j], r)
			}
			seen[d.Unordered] = i
		}
		ten := rows[:10_000]
		want := digestV(v, ten...)
		for _, sw := range [][2]int{{0, 1}, {0, 9999}, {4999, 5000}, {17, 4113}, {255, 256}, {1, 8193}} {
			swapped := slices.Clone(ten)
			swapped[sw[0]], swapped[sw[1]] = swapped[sw[1]], swapped[sw[0]]
			if got := digestV(v, swapped...); got.Equal(want, true) || !got.Equal(want, false) {
				t.Errorf("V%d: rows %d and %d swapped: ordered equal %v, unordered %v", v, sw[0], sw[1], got.Equal(want, true), got.Equal(want, false))
			}
		}
		for _, k := range []int{1, 4096} {
			rotated := append(slices.Clone(ten[k:]), ten[:k]...)
			if got := digestV(v, rotated...); got.Equal(want, true) || !got.Equal(want, false) {
				t.Errorf("V%d: rotated by %d: ordered equal", v, k)
			}
		}
	}
}

// TestAvalanche: in V3, flipping any one bit of a row of 65 to 300 bytes
// changes its hash, by about half of its 64 bits on average (a mix of
// 16 bytes changes by fewer on some bits, as V2's of a short row).
func TestAvalanche(t *testing.T) {
	for _, n := range []int{65, 100, 110, 128, 129, 192, 193, 300} {
		row := make([]byte, n)
		for i := range row {
			row[i] = byte(i*131 + n)
		}
		h := Row(row)
		changed := 0
		for i := range n * 8 {
			row[i/8] ^= 1 << (i % 8)
			d := bits.OnesCount64(Row(row) ^ h)
			row[i/8] ^= 1 << (i % 8)
			if d == 0 {
				t.Fatalf("%d bytes: flipping bit %d leaves the hash", n, i)
			}
			changed += d
		}
		avg := float64(changed) / float64(n*8)
		t.Logf("%d bytes: %.1f bits", n, avg)
		if avg < 28 || avg > 36 {
			t.Errorf("%d bytes: a bit flipped changes %.1f bits of 64 on average", n, avg)
		}
	}
}

// TestOneRowDiffers: of two digests of as many rows, the one row that
// differs is found at its position, in V2 and V3; two rows differing, a
// row count or an order differing, V1 and equal digests find none.
func TestOneRowDiffers(t *testing.T) {
	rows := func(vals ...string) [][]byte {
		var b [][]byte
		for _, v := range vals {
			b = append(b, Values(nil, [][]byte{[]byte(v), []byte("x" + v)}))
		}
		return b
	}
	digest := func(v Version, rs [][]byte) Digest {
		var d Digest
		for _, r := range rs {
			d.AddVersion(v, r)
		}
		return d
	}
	orig := rows("1", "2", "3", "4", "5", "6", "7", "8")
	for _, v := range []Version{V2, V3} {
		for p := range orig {
			got := slices.Clone(orig)
			got[p] = Values(nil, [][]byte{[]byte("1000"), []byte("other")})
			if at, ok := OneRowDiffers(digest(v, orig), digest(v, got), v); !ok || at != int64(p) {
				t.Errorf("V%d, row %d differing: found %d, %v", v, p, at, ok)
			}
		}
		two := slices.Clone(orig)
		two[1], two[5] = rows("20")[0], rows("60")[0]
		swapped := slices.Clone(orig)
		swapped[2], swapped[3] = swapped[3], swapped[2]
		for name, got := range map[string][][]byte{"two rows": two, "an order": swapped, "a row count": orig[:7], "nothing": orig} {
			if at, ok := OneRowDiffers(digest(v, orig), digest(v, got), v); ok {
				t.Errorf("V%d, %s differing: found row %d", v, name, at)
			}
		}
	}
	got := slices.Clone(orig)
	got[3] = rows("40")[0]
	if _, ok := OneRowDiffers(digest(V1, orig), digest(V1, got), V1); ok {
		t.Error("V1: found a row; its Ordered is a chain, not a weighted sum")
	}
}
