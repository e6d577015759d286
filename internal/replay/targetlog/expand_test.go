package targetlog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExpand: a pattern that matches nothing is an error, a path
// not written yet stays as given, and each file comes once, sorted per
// pattern.
func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.log", "a.log"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Expand([]string{filepath.Join(dir, "b.log"), filepath.Join(dir, "*.log"), filepath.Join(dir, "new.log")})
	want := []string{filepath.Join(dir, "b.log"), filepath.Join(dir, "a.log"), filepath.Join(dir, "new.log")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Expand = %q, %v; want %q", got, err, want)
	}
	// A file whose name holds a pattern's characters is itself, and an
	// expanded list expands to itself (rounds, then replayrun.Run).
	odd := filepath.Join(dir, "pg[1].log")
	if err := os.WriteFile(odd, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Expand([]string{odd}); err != nil || !slices.Equal(got, []string{odd}) {
		t.Errorf("Expand(%q) = %q, %v; want the file itself", odd, got, err)
	}
	if again, err := Expand(want); err != nil || !slices.Equal(again, want) {
		t.Errorf("Expand(Expand) = %q, %v; want %q", again, err, want)
	}
	if _, err := Expand([]string{filepath.Join(dir, "*.csv")}); err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Errorf("a pattern matching nothing: %v, want an error", err)
	}
}
