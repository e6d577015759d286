// Package numfmt formats numbers for people to read: counts with their
// thousands separated, figures rounded to what a reader can take in.
//
// It is the one place those choices live, so that a domain package writing
// a figure into its data (a finding's evidence) and the reporting layer
// writing the same figure into a table agree. It formats strings only: it
// lays nothing out and writes nowhere.
package numfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Thousands puts a comma between every three digits of the integer part
// of a decimal number ("-1234567.25" becomes "-1,234,567.25"), so that
// counts in the summaries read at a glance. Anything after the digits (a
// fraction, a unit) is kept as it is.
func Thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, s = s[:1], s[1:]
	}
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	digits, rest := s[:n], s[n:]
	var b strings.Builder
	b.WriteString(sign)
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(digits[i])
	}
	b.WriteString(rest)
	return b.String()
}

// Figure formats a measured figure: a whole number with its thousands
// separated, otherwise one decimal from 10 up and two below.
func Figure(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return Thousands(strconv.FormatInt(int64(v), 10))
	case math.Abs(v) >= 10:
		return Thousands(strconv.FormatFloat(v, 'f', 1, 64))
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// Bytes is a size read at a glance: in GiB, MiB or KiB to one decimal,
// or in bytes below 1 KiB.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
