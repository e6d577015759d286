package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pgrehearse/pgrehearse/internal/texttable"
)

// OneLine collapses whitespace (newlines included) and shortens s to at
// most width characters, marking a cut with "...". Tabs become spaces so
// that a query cannot break column alignment. It is for terminals; pages
// shorten with shorten.
func OneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	runes := []rune(s)
	return string(runes[:width-3]) + "..."
}

// shorten is OneLine for a page: the cut is marked with one "…".
func shorten(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}

func sortedKeys[K ~string](m map[K]int64) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errWriter keeps the first write error so that a summary can write
// freely and report once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}

// writeTable writes cells in columns: see texttable.Format.
func writeTable(ew *errWriter, indent string, table [][]string, numeric int) {
	ew.printf("%s", texttable.Format(indent, table, numeric))
}
