package targetlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFileHas: the marker is found after the offset only, also when it
// straddles two of fileHas's 1 MiB blocks.
func TestFileHas(t *testing.T) {
	const marker = "pgrehearse replay end 0123456789abcdef"
	dir := t.TempDir()
	write := func(name string, parts ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(parts, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	block := 1 << 20
	straddle := write("straddle.log", strings.Repeat("x", block-10), marker, "\n")
	early := write("early.log", marker, "\n", strings.Repeat("y", 100))
	tests := []struct {
		name   string
		path   string
		offset int64
		want   bool
	}{
		{"straddling two blocks", straddle, 0, true},
		{"after the offset", straddle, int64(block - 20), true},
		{"before the offset only", early, int64(len(marker) + 1), false},
		{"at the start", early, 0, true},
		{"no such file", filepath.Join(dir, "none.log"), 0, false},
	}
	for _, tt := range tests {
		if got := fileHas(tt.path, tt.offset, marker); got != tt.want {
			t.Errorf("%s: fileHas = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNote: what a file held before the replay is skipped; a file that
// does not exist yet is read from its start.
func TestNote(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.log")
	if err := os.WriteFile(old, bytes.Repeat([]byte("z"), 1234), 0o644); err != nil {
		t.Fatal(err)
	}
	f := Note([]string{old, filepath.Join(dir, "new.log")}, "")
	if f.offsets[0] != 1234 || f.offsets[1] != 0 {
		t.Errorf("offsets %v, want [1234 0]", f.offsets)
	}
}

// TestBegun: a file the server begins during the replay (a rotation at
// midnight, by size, a restart) is read from its start, after the files
// noted; a file that was there before, or of another extension, is not.
// The marker of the replay's end found only in the new file ends the
// wait.
func TestBegun(t *testing.T) {
	const marker = "pgrehearse replay end 0123456789abcdef"
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("postgresql-2026-11-27_235923.log", "before\n")
	write("postgresql-2026-11-27_120000.log", "an older file, not noted\n")
	f := Note([]string{first}, "")
	if paths, offsets := f.current(); !slices.Equal(paths, []string{first}) || !slices.Equal(offsets, []int64{7}) {
		t.Fatalf("current() = %v %v before any file was begun, want [%s] [7]", paths, offsets, first)
	}
	write("postgresql-2026-11-27_235923.csv", marker+"\n")
	rotated := write("postgresql-2026-11-28_000000.log", marker+"\n")
	paths, offsets := f.current()
	if want := []string{first, rotated}; !slices.Equal(paths, want) || !slices.Equal(offsets, []int64{7, 0}) {
		t.Errorf("current() = %v %v, want %v [7 0]", paths, offsets, want)
	}
	if err := f.waitFor(t.Context(), marker); err != nil {
		t.Errorf("waitFor: %v, want the marker found in the file begun during the replay", err)
	}
}

// An Error names its file, unless none is to blame, and unwraps to the
// cause (ErrSettings for a log without the settings).
func TestError(t *testing.T) {
	err := error(&Error{Path: "a.log", Err: ErrSettings})
	if !strings.HasPrefix(err.Error(), "a.log: the target's log cannot give") || !errors.Is(err, ErrSettings) {
		t.Errorf("error %q", err)
	}
	if err := (&Error{Err: errors.New("boom")}); err.Error() != "boom" {
		t.Errorf("error %q without a path", err)
	}
}
