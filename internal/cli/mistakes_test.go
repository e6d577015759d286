package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The answers to a newcomer's mistakes: each says what is wrong in the
// user's terms, with its exit code.

// TestNotALogFile: a binary or foreign file given as the log is "not a
// PostgreSQL log", saying what it looks like, exit 1, for analyze and
// replay alike, and no escaped bytes of it are quoted.
func TestNotALogFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	elf := filepath.Join(dir, "pgrehearse")
	os.WriteFile(elf, append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00"), make([]byte, 300)...), 0o644)
	lz4 := filepath.Join(dir, "postgresql.log.lz4")
	os.WriteFile(lz4, []byte("\x04\x22\x4d\x18\x64\x40\xa7\x00\x00\x00"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"analyze ELF", []string{"analyze", elf}, "not a PostgreSQL log: it looks like an ELF binary"},
		{"replay ELF", []string{"replay", "--dry-run", elf}, "not a PostgreSQL log: it looks like an ELF binary"},
		{"analyze lz4", []string{"analyze", lz4}, "not a PostgreSQL log: it looks like lz4-compressed data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(ctx, "", tt.args...)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			if !strings.Contains(stderr, tt.want) || strings.Contains(stderr, `\x00`) || strings.Contains(stderr, "log_line_prefix") {
				t.Errorf("message lacks %q, or quotes the file:\n%s", tt.want, stderr)
			}
		})
	}
}
