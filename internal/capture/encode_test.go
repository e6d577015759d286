package capture

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

func TestRecordRoundTrip(t *testing.T) {
	base := t0.UnixMicro()
	cases := []struct {
		name string
		r    Record
		prev int64
	}{
		{"startup", oneOfEach(1, base)[0], base},
		{"startup without params", Record{Kind: KindStartup, Session: 2, Time: base, ProtocolMajor: 3, ProtocolMinor: 2}, base},
		{"frontend bind", oneOfEach(1, base)[1], base},
		{"frontend sync", Record{Kind: KindFrontend, Session: 1, Time: base, Msg: []byte{'S', 0, 0, 0, 4}}, base},
		{"complete", oneOfEach(1, base)[2], base},
		{"complete with rows' digest", Record{Kind: KindComplete, Session: 1, Time: base, Tag: "SELECT 2", HasDigest: true,
			Digest: rowdigest.Digest{Rows: 2, Ordered: 1 << 63, Unordered: 12345}, DigestVersion: rowdigest.Current}, base},
		{"complete with rows' digest of V1", Record{Kind: KindComplete, Session: 1, Time: base, Tag: "SELECT 2", HasDigest: true,
			Digest: rowdigest.Digest{Rows: 2, Ordered: 1 << 63, Unordered: 12345}, DigestVersion: rowdigest.V1}, base},
		{"complete with no rows' digest", Record{Kind: KindComplete, Session: 1, Time: base, Tag: "UPDATE 0", HasDigest: true,
			DigestVersion: rowdigest.Current}, base},
		{"error", oneOfEach(1, base)[3], base},
		{"ready", oneOfEach(1, base)[4], base},
		{"copy_in", oneOfEach(1, base)[5], base},
		{"cancel", oneOfEach(1, base)[6], base},
		{"end", oneOfEach(1, base)[7], base},
		{"gap", oneOfEach(1, base)[8], base},
		{"startup of a session recorded from the middle", *resumedStartup(3, base), base},
		{"startup from the middle with no state", Record{Kind: KindStartup, Session: 3, Time: base, Resume: &Resume{}}, base},
		{"gap of every session", Record{Kind: KindGap, Time: base, Dropped: 1 << 40}, base},
		{"time before prev", Record{Kind: KindReady, Session: 1, Time: base - 5_000_000, TxStatus: 'I'}, base},
		{"extreme values", Record{Kind: KindStartup, Session: math.MaxUint64, Time: math.MinInt64, ProtocolMajor: math.MaxUint16, ProtocolMinor: math.MaxUint16, BackendPID: math.MaxUint32}, math.MaxInt64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := appendRecord([]byte("prefix"), &c.r, c.prev)
			if err != nil {
				t.Fatal(err)
			}
			d := decoder{b: b, off: len("prefix"), prev: c.prev}
			var got Record
			if err := d.next(&got); err != nil {
				t.Fatal(err)
			}
			if !sameRecord(&got, &c.r) {
				t.Errorf("got %+v\nwant %+v", got, c.r)
			}
			if d.off != len(b) {
				t.Errorf("decoded %d of %d bytes", d.off, len(b))
			}
		})
	}
}

// Fields that do not belong to a record's Kind are not written: the
// format stores what each kind means, nothing else.
func TestRecordOtherKindsFieldsDropped(t *testing.T) {
	r := Record{Kind: KindReady, Session: 1, TxStatus: 'T', Tag: "SELECT 1", Msg: []byte("x"), Dropped: 3}
	b, err := appendRecord(nil, &r, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got Record
	d := decoder{b: b}
	if err := d.next(&got); err != nil {
		t.Fatal(err)
	}
	want := Record{Kind: KindReady, Session: 1, TxStatus: 'T'}
	if !sameRecord(&got, &want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestRecordRefused(t *testing.T) {
	for _, k := range []Kind{0, KindGap + 1, 255} {
		if _, err := appendRecord(nil, &Record{Kind: k}, 0); err == nil {
			t.Errorf("%v encoded", k)
		}
	}
}

// A later writer of format version 1 may append fields to a kind's body;
// this reader skips them. (The rows' digest of a KindComplete was one,
// appended after its tag: a record without it reads as having none.)
func TestRecordTrailingFieldsSkipped(t *testing.T) {
	r := Record{Kind: KindComplete, Session: 9, Time: 100, Tag: "INSERT 0 1", HasDigest: true, DigestVersion: rowdigest.Current}
	body, _ := appendRecord(nil, &r, 0)
	// Re-encode with two extra bytes in the body.
	size := int(body[0]) + 2
	b := append([]byte{byte(size)}, body[1:]...)
	b = append(b, 0xAA, 0xBB)
	b, _ = appendRecord(b, &Record{Kind: KindReady, Session: 9, Time: 101, TxStatus: 'I'}, 100)
	d := decoder{b: b}
	var got Record
	for _, want := range []Record{r, {Kind: KindReady, Session: 9, Time: 101, TxStatus: 'I'}} {
		if err := d.next(&got); err != nil {
			t.Fatal(err)
		}
		if !sameRecord(&got, &want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
}

// TestRecordDigestVersion: a complete's digest as format version 1 wrote
// it, with no version after it, is of rowdigest.V1; one that says a
// version this reader does not know is refused, not compared; a record
// that says none is written with the current one.
func TestRecordDigestVersion(t *testing.T) {
	dg := rowdigest.Digest{Rows: 1, Ordered: 7, Unordered: 9}
	// A complete as format version 1 wrote it: kind, session, time,
	// tag, digest.
	v1 := appendString(binary.AppendVarint(binary.AppendUvarint([]byte{byte(KindComplete)}, 3), 5), "SELECT 1")
	v1 = dg.Append(v1)
	unknown := append(bytes.Clone(v1), 9)
	for _, tc := range []struct {
		name string
		body []byte
		want rowdigest.Version
		err  string
	}{
		{"format version 1", v1, rowdigest.V1, ""},
		{"unknown version", unknown, 0, "row digest of version 9"},
	} {
		d := decoder{b: append(binary.AppendUvarint(nil, uint64(len(tc.body))), tc.body...)}
		var got Record
		err := d.next(&got)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !got.HasDigest || got.Digest != dg || got.DigestVersion != tc.want:
			t.Errorf("%s: digest %+v (%v) of version %d, want %+v of %d", tc.name, got.Digest, got.HasDigest, got.DigestVersion, dg, tc.want)
		}
	}
	b, _ := appendRecord(nil, &Record{Kind: KindComplete, Session: 3, Time: 5, Tag: "SELECT 1", HasDigest: true, Digest: dg}, 0)
	d := decoder{b: b}
	var got Record
	if err := d.next(&got); err != nil || got.DigestVersion != rowdigest.Current {
		t.Errorf("a digest of no version written as %d (%v), want the current %d", got.DigestVersion, err, rowdigest.Current)
	}
}

func TestRecordCorruptRefused(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"zero length", []byte{0}},
		{"length beyond chunk", []byte{10, byte(KindReady), 1, 0}},
		{"unknown kind", []byte{3, 42, 1, 0}},
		{"message longer than record", []byte{5, byte(KindFrontend), 1, 0, 0x7f}},
		{"message over 1 GiB declared", []byte{9, byte(KindFrontend), 1, 0, 0x81, 0x80, 0x80, 0x80, 0x08}},
		{"params count beyond record", []byte{5, byte(KindStartup), 1, 0, 0xff, 0x7f}},
		{"bad TLS flag", []byte{9, byte(KindStartup), 1, 0, 0, 3, 0, 7, 0, 0}},
		{"protocol out of range", []byte{9, byte(KindStartup), 1, 0, 0, 0xff, 0xff, 0x7f, 0, 0}},
		{"digest cut short", []byte{7, byte(KindComplete), 1, 0, 1, 'X', 1, 0xAA}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decoder{b: c.b}
			var r Record
			if err := d.next(&r); err == nil {
				t.Errorf("decoded %+v", r)
			}
		})
	}
}
