package report

import (
	"strings"
	"testing"
)

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT\n\t a,\n  b FROM t", "SELECT a, b FROM t"},
		{strings.Repeat("é", 100), strings.Repeat("é", 17) + "..."},
	}
	for _, tt := range tests {
		if got := OneLine(tt.in, 20); got != tt.want {
			t.Errorf("OneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestShorten(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT\n\t a,\n  b FROM t", "SELECT a, b FROM t"},
		{strings.Repeat("é", 100), strings.Repeat("é", 19) + "…"},
	}
	for _, tt := range tests {
		if got := shorten(tt.in, 20); got != tt.want {
			t.Errorf("shorten(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
