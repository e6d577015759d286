package rowdigest

import (
	"bytes"
	"testing"

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

func digest(rows ...[]byte) Digest {
	var d Digest
	for _, r := range rows {
		d.Add(r)
	}
	return d
}

// TestEqual: the same rows in another order are equal unordered, not
// ordered; another value, a NULL for an empty string, a row more or a
// duplicate row instead of another are never equal.
func TestEqual(t *testing.T) {
	a, b, c := body([]byte("1"), []byte("a")), body([]byte("2"), []byte("b")), body([]byte("3"), nil)
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
	} {
		if got := tc.x.Equal(tc.y, true); got != tc.ordered {
			t.Errorf("%s: ordered equal %v, want %v", tc.name, got, tc.ordered)
		}
		if got := tc.x.Equal(tc.y, false); got != tc.unordered {
			t.Errorf("%s: unordered equal %v, want %v", tc.name, got, tc.unordered)
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

// TestStreamPieces: every body of up to 70 bytes, written in pieces of
// every size up to 20, hashes as whole; and no two of those bodies (each
// a prefix of the next, or one byte changed) share a hash.
func TestStreamPieces(t *testing.T) {
	seen := map[uint64]string{}
	data := make([]byte, 70)
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
// pinned. The proxy and a replay of its capture must hash alike, possibly years
// and releases apart: a hash that changes (to make the relay cheaper,
// say) changes every digest an older capture holds, which a replay would
// then report as other values. Such a change must come with a version of
// the digest in the capture format (docs/capture-format.md) and a replay
// that does not compare the older ones, not with new values here alone.
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
		if got := Row(tc.body); got != tc.want {
			t.Errorf("Row of %d bytes: %#x, pinned %#x", len(tc.body), got, tc.want)
		}
	}
	d := digest(body([]byte("1"), []byte("a")), body([]byte("2"), []byte("b")))
	if want := (Digest{Rows: 2, Ordered: 0xc03ea245e6c77880, Unordered: 0x525c12b6e36a8ace}); d != want {
		t.Errorf("digest of two rows %+v, pinned %+v", d, want)
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

// FuzzRow: a DataRow body cut anywhere hashes in pieces as whole, and
// one that decodes is rebuilt from its values byte for byte, so the
// replay's digest of what pgx decoded is the proxy's of what it relayed.
func FuzzRow(f *testing.F) {
	f.Add(body([]byte("a"), nil, []byte{}), 1)
	f.Add([]byte{0, 1, 0xff, 0xff, 0xff, 0xff}, 3)
	f.Add([]byte{}, 0)
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
