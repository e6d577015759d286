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
