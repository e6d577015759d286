package logread

import (
	"testing"
	"time"
)

func TestParseLogTime(t *testing.T) {
	utc := func(s string) int64 {
		tm, err := time.Parse("2006-01-02 15:04:05.999999 -0700", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"2026-11-22 08:11:02.123 UTC", utc("2026-11-22 08:11:02.123 +0000"), true},
		{"2026-11-22 08:11:02 UTC", utc("2026-11-22 08:11:02 +0000"), true},
		{"2026-11-22 08:11:02.123456 GMT", utc("2026-11-22 08:11:02.123456 +0000"), true},
		{"2026-11-22 08:11:02.123456789 UTC", utc("2026-11-22 08:11:02.123456 +0000"), true}, // ns truncated
		{"2021-01-22 10:03:22.785 CET", utc("2021-01-22 10:03:22.785 +0100"), true},
		{"2024-06-27 00:00:07.369 CEST", utc("2024-06-27 00:00:07.369 +0200"), true},
		{"2026-11-22 08:11:02 EST", utc("2026-11-22 08:11:02 -0500"), true},
		{"2026-07-22 08:11:02 PDT", utc("2026-07-22 08:11:02 -0700"), true},
		{"2026-11-22 08:11:02 MSK", utc("2026-11-22 08:11:02 +0300"), true},
		{"2026-11-22 08:11:02 JST", utc("2026-11-22 08:11:02 +0900"), true},
		{"2026-11-22 08:11:02 IST", utc("2026-11-22 08:11:02 +0530"), true},
		{"2026-11-22 08:11:02 +03", utc("2026-11-22 08:11:02 +0300"), true},
		{"2026-11-22 08:11:02.5 +0530", utc("2026-11-22 08:11:02.5 +0530"), true},
		{"2026-11-22 08:11:02 -07:00", utc("2026-11-22 08:11:02 -0700"), true},
		{"2026-11-22 08:11:02 -03:30", utc("2026-11-22 08:11:02 -0330"), true},
		{"2020-05-02T13:00:20.382318Z", utc("2020-05-02 13:00:20.382318 +0000"), true},
		{"2020-05-02T13:00:20+02:00", utc("2020-05-02 13:00:20 +0200"), true},
		{"2026-11-22 08:11:02", utc("2026-11-22 08:11:02 +0000"), true},
		{"2026-11-22 08:11:02 XYZT", utc("2026-11-22 08:11:02 +0000"), true}, // unknown: UTC
		{"2024-02-29 23:59:59.999 UTC", utc("2024-02-29 23:59:59.999 +0000"), true},
		{"1970-01-01 00:00:00 UTC", 0, true},
		{"1700000000.123", 1700000000123000, true},
		{"1669575482.0968924", 1669575482096892, true},
		{"1700000000", 1700000000000000, true},

		{"", 0, false},
		{"2026-11-22", 0, false},
		{"2026-13-22 08:11:02 UTC", 0, false},
		{"2026-11-22 25:11:02 UTC", 0, false},
		{"2026-11-22 08:11:02. UTC", 0, false},
		{"2026-11-22 08:11:02 +3", 0, false},
		{"2026-11-22 08:11:02 +0330x", 0, false},
		{"2026-11-22 08:11:02 U-C", 0, false},
		{"2026/11/22 08:11:02 UTC", 0, false},
		{"2026-11-22x08:11:02 UTC", 0, false},
		{"17000000x", 0, false},
		{"1700000000.12.3", 0, false},
	}
	for _, tc := range cases {
		got, ok := parseLogTime([]byte(tc.in))
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseLogTime(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestLogTimeParserCache checks the cache never returns a stale second:
// the same text parses the same with and without the cache, in any order.
func TestLogTimeParserCache(t *testing.T) {
	var p logTimeParser
	seq := []string{
		"2026-11-22 08:11:02.123 UTC",
		"2026-11-22 08:11:02.999 UTC",
		"2026-11-22 08:11:02.999 CET",
		"2026-11-22 08:11:02 CET",
		"2026-11-22 08:11:03.001 CET",
		"2026-11-22T08:11:03.001Z",
		"1700000000.5",
		"2026-11-22 08:11:03.001 CET",
		"2026-11-22 08:11:03.001 +01",
		"2026-11-22 08:11:03.001 +01:00",
	}
	for _, s := range seq {
		want, wok := parseLogTime([]byte(s))
		got, ok := p.parse([]byte(s))
		if got != want || ok != wok {
			t.Errorf("cached parse(%q) = %d, %v; uncached %d, %v", s, got, ok, want, wok)
		}
	}
}

// TestDaysFromCivil compares the calendar arithmetic with package time
// over four centuries of days, leap years included.
func TestDaysFromCivil(t *testing.T) {
	for d := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2300; d = d.AddDate(0, 0, 1) {
		got := daysFromCivil(int64(d.Year()), int64(d.Month()), int64(d.Day()))
		if got*86400 != d.Unix() {
			t.Fatalf("%s: %d days", d.Format(time.DateOnly), got)
		}
	}
}

func FuzzParseLogTime(f *testing.F) {
	for _, s := range []string{"2026-11-22 08:11:02.123 UTC", "2020-05-02T13:00:20.382318Z", "2026-11-22 08:11:02 -07:00", "1700000000.123", "2026-11-22 08:11:02 CEST"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wok := parseLogTime(b)
		// Cached parse after an unrelated value and after itself must
		// agree with the uncached one.
		var p logTimeParser
		p.parse([]byte("2026-11-22 08:11:02.123 UTC"))
		for range 2 {
			if got, ok := p.parse(b); got != want || ok != wok {
				t.Fatalf("cached %d,%v uncached %d,%v", got, ok, want, wok)
			}
		}
		// Whatever is accepted in the layout of time.Parse must agree
		// with it.
		if wok && len(b) >= 19 && b[4] == '-' {
			if tm, err := time.Parse("2006-01-02 15:04:05.999999999 -0700", string(b)); err == nil && tm.UnixMicro() != want {
				t.Fatalf("%q: %d, time.Parse says %d", b, want, tm.UnixMicro())
			}
		}
	})
}

func BenchmarkParseLogTime(b *testing.B) {
	in := [][]byte{[]byte("2026-11-22 08:11:02.123 CET"), []byte("2026-11-22 08:11:02.456 CET")}
	var p logTimeParser
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p.parse(in[i&1])
		i++
	}
}
