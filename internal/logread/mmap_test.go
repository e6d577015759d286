package logread

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

// TestMappedEqualsRead: a plain stderr file read from a mapping gives the
// events and line counts of the same bytes read through a reader, and of
// each of the parts a split log is read in.
func TestMappedEqualsRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are mapped on Linux only")
	}
	dir := t.TempDir()
	var bench, real bytes.Buffer
	if err := synthlog.Write(&bench, 300<<10); err != nil {
		t.Fatal(err)
	}
	if err := synthlog.WriteRealistic(&real, 300<<10); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"bench.log": bench.Bytes(), "realistic.log": real.Bytes()}
	for _, f := range []string{"stderr/log_statement.log", "stderr/min_duration.log", "verbose/stderr.log"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(filepath.Dir(f))+"-"+filepath.Base(f)] = b
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mr, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !mr.mapped {
			t.Fatalf("%s: not read from a mapping", name)
		}
		got := allEvents(t, mr)
		gc := *mr.Counters()
		mr.Close()
		rr, err := NewReader(bytes.NewReader(data), name, Options{Prefix: mr.Prefix(), Format: FormatStderr})
		if err != nil {
			t.Fatal(err)
		}
		want := allEvents(t, rr)
		wc := rr.Counters()
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d events mapped, %d read", name, len(got), len(want))
		}
		for i := range want {
			if g, w := fullKey(got[i]), fullKey(want[i]); g != w {
				t.Fatalf("%s: event %d:\n mapped %s\n read   %s", name, i, g, w)
			}
		}
		if gc.Total != wc.Total || gc.Parsed != wc.Parsed || fmt.Sprint(gc.Skipped) != fmt.Sprint(wc.Skipped) {
			t.Errorf("%s: counters mapped %+v, read %+v", name, gc, *wc)
		}
		if read, size := mr.Progress(); read != size {
			t.Errorf("%s: progress %d of %d at the end", name, read, size)
		}
	}
}

// TestMappedFileShrinks: a file cut while it is read from a mapping ends
// the read with an error that says so, not a crash, after the events
// read before.
func TestMappedFileShrinks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are mapped on Linux only")
	}
	var log bytes.Buffer
	if err := synthlog.WriteRealistic(&log, 4<<20); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.log")
	if err := os.WriteFile(path, log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.mapped {
		t.Fatal("not read from a mapping")
	}
	n := 0
	for ; n < 1000; n++ {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if read, _ := r.Progress(); read > 2<<20 {
		t.Fatalf("read %d bytes for 1000 events: the cut would be behind the reader", read)
	}
	if err := os.Truncate(path, 2<<20); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.Next()
		if err == nil {
			n++
			continue
		}
		if errors.Is(err, io.EOF) || !errors.Is(err, errShrank) {
			t.Fatalf("after %d events: %v, want %v", n, err, errShrank)
		}
		break
	}
	if _, err := r.Next(); !errors.Is(err, errShrank) {
		t.Errorf("Next after the error: %v", err)
	}
}
