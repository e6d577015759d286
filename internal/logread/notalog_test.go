package logread

import (
	"bytes"
	"errors"
	"math/rand/v2"
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
	// Random bytes hold about one control character in ten: a bound of
	// one in ten let a third of them through, quoted as a log's line
	// whose prefix could not be detected (issue 57 item 5).
	rnd := rand.New(rand.NewPCG(57, 5))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return b
	}
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
		{"random bytes, 100", random(100), "", "binary data"},
		{"random bytes, 600", random(600), "", "binary data"},
		{"random bytes, 4096", random(4096), "", "binary data"},
		{"random bytes, prefix given", random(2000), "%m [%p] ", "binary data"},
		{"gzip of random bytes", compressWith(t, "gzip", random(3000)), "", "binary data"},
		{"zstd of random bytes", compressWith(t, "zstd", random(3000)), "", "binary data"},
		{"text", []byte("# Notes\n\nThe server was restarted at 10:00.\nNothing else happened.\n"), "",
			"text, but none of its first 3 lines holds a server message"},
		{"JSON, not jsonlog", []byte(`{"level":"debug","user":"x","msg":"hello"}` + "\n" + `{"a":[1,2,3]}` + "\n"), "",
			"JSON, but none of its first 2 records is a PostgreSQL log record"},
		{"log with a stray control character", []byte(strings.Replace(sourceLog, "SELECT 1", "SELECT '\x01'", 1)), "", ""},
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
			if msg := err.Error(); !printableASCII(msg) {
				t.Errorf("error %q quotes the file's bytes", msg)
			}
			if tt.in[0] == 0x1f || tt.in[0] == 0x28 {
				// gzip, zstd: the content was looked at decompressed.
				if !strings.Contains(err.Error(), "(inside its ") {
					t.Errorf("error %q does not say the file is compressed", err)
				}
			}
		})
	}
}

// printableASCII reports whether s is printable ASCII only: a message
// that says what a file looks like, without its bytes.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
