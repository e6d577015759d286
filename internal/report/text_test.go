package report

import (
	"strings"
	"testing"
)

// TestOneLine and TestShorten: a statement on one line, its white space
// folded, cut at 20 characters (not bytes) with "..." by OneLine and "…"
// by shorten.
func TestOneLine(t *testing.T) { testCut(t, "OneLine", OneLine, "...") }
func TestShorten(t *testing.T) { testCut(t, "shorten", shorten, "…") }

func testCut(t *testing.T, name string, cut func(string, int) string, ellipsis string) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT\n\t a,\n  b FROM t", "SELECT a, b FROM t"},
		{strings.Repeat("é", 100), strings.Repeat("é", 20-len([]rune(ellipsis))) + ellipsis},
	}
	for _, tt := range tests {
		if got := cut(tt.in, 20); got != tt.want {
			t.Errorf("%s(%q) = %q, want %q", name, tt.in, got, tt.want)
		}
	}
}
