package logread

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

const sourceLog = `2026-11-22 08:00:00.000 UTC [10] app@shop/web 6571e2a3.a LOG:  duration: 0.100 ms  statement: SELECT 1
2026-11-22 08:00:00.100 UTC [10] app@shop/web 6571e2a3.a LOG:  duration: 0.200 ms  execute <unnamed>: SELECT $1
2026-11-22 08:00:00.100 UTC [10] app@shop/web 6571e2a3.a DETAIL:  parameters: $1 = 'x'
`

func compressWith(t *testing.T, kind string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	var err error
	switch kind {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "zstd":
		w, err = zstd.NewWriter(&b)
	case "xz":
		w, err = xz.NewWriter(&b)
	case "bzip2":
		// The standard library only reads bzip2: a stored stream made by
		// the bzip2 tool for sourceLog.
		return bzip2Fixture(t, data)
	default:
		return data
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func bzip2Fixture(t *testing.T, data []byte) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "source", "sample.log.bz2"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != sourceLog {
		t.Fatal("bzip2 fixture holds sourceLog only")
	}
	return b
}

// TestCompressedInput reads the same log plain and compressed four ways,
// under names that do and do not tell: the first bytes decide.
func TestCompressedInput(t *testing.T) {
	dir := t.TempDir()
	want := readEvents(t, writeFile(t, dir, "plain.log", []byte(sourceLog)))
	if len(want) != 2 {
		t.Fatalf("plain log: %d events, want 2", len(want))
	}
	for _, kind := range []string{"gzip", "zstd", "bzip2", "xz"} {
		data := compressWith(t, kind, []byte(sourceLog))
		for _, name := range []string{"postgresql.log." + kind, "postgresql.log.1"} {
			got := readEvents(t, writeFile(t, dir, name, data))
			if len(got) != len(want) {
				t.Fatalf("%s as %s: %d events, want %d", kind, name, len(got), len(want))
			}
			for i := range want {
				if got[i].Query != want[i].Query || got[i].Time != want[i].Time || !equalParams(got[i].Params, want[i].Params) {
					t.Errorf("%s as %s: event %d = %+v, want %+v", kind, name, i, got[i], want[i])
				}
			}
		}
	}
}

func TestStdin(t *testing.T) {
	r, err := Open("-", Options{Stdin: strings.NewReader(sourceLog)})
	if err != nil {
		t.Fatal(err)
	}
	n := countEvents(t, r)
	if n != 2 {
		t.Errorf("stdin: %d events, want 2", n)
	}
	if _, size := r.Progress(); size != -1 {
		t.Errorf("stdin size = %d, want -1 (unknown)", size)
	}
}

// TestCorruptCompressedInput: a damaged file is an error naming the file,
// never a silent end of the log.
func TestCorruptCompressedInput(t *testing.T) {
	dir := t.TempDir()
	data := compressWith(t, "gzip", []byte(strings.Repeat(sourceLog, 100)))
	path := writeFile(t, dir, "cut.log.gz", data[:len(data)/2])
	r, err := Open(path, Options{})
	if err != nil {
		if !strings.Contains(err.Error(), "cut.log.gz") {
			t.Fatalf("error does not name the file: %v", err)
		}
		return
	}
	for {
		_, err = r.Next()
		if err != nil {
			break
		}
	}
	if err == io.EOF || !strings.Contains(err.Error(), "cut.log.gz") {
		t.Fatalf("truncated gzip: got %v, want an error naming the file", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("error: %v", err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.log"), Options{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want an error wrapping os.ErrNotExist", err)
	}
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readEvents(t *testing.T, path string) []*event.Event {
	t.Helper()
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var evs []*event.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// countEvents reads r to its end and returns how many events it gave.
func countEvents(tb testing.TB, r *Reader) int {
	tb.Helper()
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			tb.Fatal(err)
		}
		n++
	}
}
