package numfmt

import "testing"

func TestThousands(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"},
		{"999", "999"},
		{"1000", "1,000"},
		{"-1000", "-1,000"},
		{"123456", "123,456"},
		{"1234567", "1,234,567"},
		{"-9223372036854775808", "-9,223,372,036,854,775,808"},
		{"1234567.25", "1,234,567.25"},
		{"-12345.6", "-12,345.6"},
		{"0.125", "0.125"},
		{"1234 ms", "1,234 ms"},
		{"", ""},
	} {
		if got := Thousands(tc.in); got != tc.want {
			t.Errorf("Thousands(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFigure(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{1234567, "1,234,567"},
		{-1500, "-1,500"},
		{12345.67, "12,345.7"},
		{10.04, "10.0"},
		{9.996, "10.00"},
		{0.125, "0.12"},
		{-2.5, "-2.50"},
	} {
		if got := Figure(tc.in); got != tc.want {
			t.Errorf("Figure(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 20: "5.0 MiB", 3 << 29: "1.5 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
