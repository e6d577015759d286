// Package texttable lays out the aligned tables of pgrehearse's terminal
// summaries.
package texttable

import (
	"strings"
	"unicode/utf8"
)

// Format returns rows as lines of columns two spaces apart, each line
// starting with indent: the first numeric columns right-aligned, the
// others left-aligned, the last not padded, so that no line ends in
// spaces. Widths count runes.
func Format(indent string, rows [][]string, numeric int) string {
	if len(rows) == 0 {
		return ""
	}
	widths := make([]int, 0, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var out, b strings.Builder
	for _, row := range rows {
		b.Reset()
		b.WriteString(indent)
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case i < numeric:
				b.WriteString(pad + c)
			case i == len(row)-1:
				b.WriteString(c)
			default:
				b.WriteString(c + pad)
			}
			if i < len(row)-1 {
				b.WriteString("  ")
			}
		}
		// An empty last cell would leave the separator behind.
		out.WriteString(strings.TrimRight(b.String(), " "))
		out.WriteByte('\n')
	}
	return out.String()
}

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
