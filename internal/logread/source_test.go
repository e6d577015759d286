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

// TestCutCompressedInput: a compressed file cut short gives the events
// before the cut, then io.EOF, with Partial saying where it broke off, and
// a warning: never an error that loses what was read, never a silent end.
func TestCutCompressedInput(t *testing.T) {
	dir := t.TempDir()
	full := syntheticLog(4 << 20) // varied enough to take many blocks
	all := countEvents(t, mustNewReader(t, full))
	for _, kind := range []string{"gzip", "zstd", "xz"} { // no bzip2 writer in Go
		t.Run(kind, func(t *testing.T) {
			data := compressWith(t, kind, full)
			path := writeFile(t, dir, "cut-"+kind, data[:len(data)/2])
			r, err := Open(path, Options{Prefix: benchPrefix})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer r.Close()
			n := countEvents(t, r)
			if n == 0 || n >= all {
				t.Errorf("%d events of %d before the cut", n, all)
			}
			p := r.Partial()
			if p == nil || !strings.Contains(p.Error(), "after ") || !strings.Contains(p.Error(), "bytes") {
				t.Fatalf("Partial() = %v, want where the data broke off", p)
			}
			if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "read in part") {
				t.Errorf("warnings %q", w)
			}
			c := r.Counters()
			if c.Total != c.Parsed+c.SkippedTotal() {
				t.Errorf("total %d != parsed %d + skipped %d", c.Total, c.Parsed, c.SkippedTotal())
			}
			t.Logf("%d of %d events; %v", n, all, p)
		})
	}
	// A whole file is not partial.
	r, err := Open(writeFile(t, dir, "whole.gz", compressWith(t, "gzip", full)), Options{Prefix: benchPrefix})
	if err != nil {
		t.Fatal(err)
	}
	countEvents(t, r)
	if p := r.Partial(); p != nil {
		t.Errorf("whole file: Partial() = %v", p)
	}
}

// TestDamagedCompressedInput: a compressed file that gives nothing before
// it breaks is an error saying so, not "the log is empty".
func TestDamagedCompressedInput(t *testing.T) {
	data := compressWith(t, "gzip", []byte(sourceLog))
	path := writeFile(t, t.TempDir(), "damaged.log.gz", data[:12])
	_, err := Open(path, Options{})
	if err == nil || errors.Is(err, ErrEmptyLog) || !strings.Contains(err.Error(), "damaged.log.gz") {
		t.Fatalf("got %v, want an error naming the file and the damage", err)
	}
}

func mustNewReader(t *testing.T, b []byte) *Reader {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), "log", Options{Prefix: benchPrefix})
	if err != nil {
		t.Fatal(err)
	}
	return r
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
	evs, _ := readAllEvents(t, path, Options{})
	return evs
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
