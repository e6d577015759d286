package logread

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestNotALog: files that are no log (an executable, a document, archives
// and compressions that are not read, NUL bytes, binary data) are refused
// as not a PostgreSQL log, saying what they look like, with the prefix
// given or detected; logs, including one that starts with NUL bytes and
// one in a gzip of a log, are still read.
func TestNotALog(t *testing.T) {
	tar := make([]byte, 1024)
	copy(tar, "postgresql.log")
	copy(tar[257:], "ustar\x0000")
	binary := bytes.Repeat([]byte{0x01, 0x02, 'a', 0x03, 0xfe, 0x00, 'b', 0x10}, 200)
	tests := []struct {
		name   string
		in     []byte
		prefix string
		want   string // "" for a log that is read
	}{
		{"ELF", append([]byte("\x7fELF\x02\x01\x01\x00"), binary...), "", "an ELF binary"},
		{"ELF, prefix given", append([]byte("\x7fELF\x02\x01\x01\x00"), binary...), "%m [%p] ", "an ELF binary"},
		{"PDF", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"), "", "a PDF document"},
		{"zip", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00postgresql.log"), "", "a zip archive, which pgrehearse does not read: extract the log first"},
		{"7z", []byte("7z\xbc\xaf\x27\x1c\x00\x04"), "", "a 7z archive"},
		{"tar", tar, "", "a tar archive"},
		{"lz4", []byte("\x04\x22\x4d\x18\x64\x40\xa7\x00\x00\x00"), "", "lz4-compressed data, which pgrehearse does not read: decompress it first (lz4 -d)"},
		{"NUL-filled", make([]byte, 5000), "", "NUL bytes only, in its first 5000 bytes"},
		{"binary data", binary, "", "binary data (1000 of its first 1600 bytes are control characters)"},
		{"log after NUL bytes", append(make([]byte, 100), sourceLog...), "", ""},
		{"log", []byte(sourceLog), "", ""},
		{"gzip of a log", compressWith(t, "gzip", []byte(sourceLog)), "", ""},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_"), tt.in)
			r, err := Open(path, Options{Prefix: tt.prefix})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("a log refused: %v", err)
				}
				r.Close()
				return
			}
			if err == nil {
				r.Close()
				t.Fatal("read as a log")
			}
			if !errors.Is(err, ErrNotALog) || !strings.Contains(err.Error(), "not a PostgreSQL log: it looks like "+tt.want) {
				t.Errorf("error %q, want ErrNotALog saying %q", err, tt.want)
			}
		})
	}
}
