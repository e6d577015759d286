package event

import (
	"encoding/binary"
	"math"
	"testing"
)

func be(n int, v uint64) string {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return string(b[8-n:])
}

// TestTextParams: the binary parameters of a capture's execution read as
// the text a log would hold, by the type the Parse named; text ones, NULLs,
// unknown types and unnamed types are left as sent, the unnamed ones
// marked Binary (their place may tell their type).
func TestTextParams(t *testing.T) {
	for _, tc := range []struct {
		oid   uint32
		value string
		want  string
	}{
		{16, "\x01", "t"},
		{16, "\x00", "f"},
		{21, be(2, uint64(0xfffe)), "-2"},
		{23, be(4, 42), "42"},
		{23, be(4, uint64(math.MaxUint32)), "-1"},
		{26, be(4, uint64(math.MaxUint32)), "4294967295"},
		{20, be(8, 1_000_042), "1000042"},
		{20, be(8, uint64(1<<63)), "-9223372036854775808"},
		{701, be(8, math.Float64bits(2.5)), "2.5"},
		{700, be(4, uint64(math.Float32bits(float32(math.Inf(-1))))), "-Infinity"},
		{25, "héllo", "héllo"},
		{3802, "\x01{\"a\": 1}", `{"a": 1}`},
		{17, "\x00\xff", `\x00ff`},
		{2950, "\x12\x34\x56\x78\x9a\xbc\xde\xf0\x12\x34\x56\x78\x9a\xbc\xde\xf0", "12345678-9abc-def0-1234-56789abcdef0"},
		{1082, be(4, 9825), "2026-11-25"},
		{1082, be(4, uint64(math.MaxInt32)), "infinity"},
		{1184, be(8, uint64(848_903_400_123_456)), "2026-11-25 06:30:00.123456+00"},
		{1114, be(8, uint64(0xffffffffffffffff)), "1999-12-31 23:59:59.999999"},
		// Unknown or unnamed types, and bytes that do not fit: as sent.
		{1700, "\x00\x01", "\x00\x01"},
		{0, be(8, 7), be(8, 7)},
		{20, be(4, 7), be(4, 7)},
	} {
		ev := &Event{Params: []Param{{Value: "7"}, {Value: tc.value}, {Null: true}}}
		ev.SetWire(&Wire{ParamOIDs: []uint32{23, tc.oid, 20}, ParamFormats: []int16{0, 1, 1}})
		got := ev.TextParams()
		if len(got) != 3 || got[0].Value != "7" || got[1].Value != tc.want || !got[2].Null {
			t.Errorf("oid %d %q: %+v, want %q", tc.oid, tc.value, got, tc.want)
		}
		if len(got) == 3 && (got[1].Binary != (tc.oid == 0) || got[0].Binary || got[2].Binary) {
			t.Errorf("oid %d %q: %+v: only a binary parameter of a type left to the server is marked Binary", tc.oid, tc.value, got)
		}
		if ev.Params[1].Value != tc.value {
			t.Errorf("oid %d: the event's own parameter changed to %q", tc.oid, ev.Params[1].Value)
		}
	}
	// Without a binary parameter, the same slice.
	ev := &Event{Params: []Param{{Value: "7"}}}
	if got := ev.TextParams(); &got[0] != &ev.Params[0] {
		t.Error("text parameters were copied")
	}
	ev.SetWire(&Wire{ParamOIDs: []uint32{20}})
	if got := ev.TextParams(); &got[0] != &ev.Params[0] {
		t.Error("text parameters with a wire were copied")
	}
}
