package logread

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

// readKeys reads path to its end and returns every event's fullKey, then
// the error that ended it ("" at io.EOF). With window > 0 it recycles
// each event once window later ones came, as a consumer with events in
// flight does; an event that changed while the consumer held it (handed
// out twice, or written after Next returned it) is reported.
func readKeys(t *testing.T, path string, window int) ([]string, string) {
	t.Helper()
	r, err := Open(path, Options{})
	if err != nil {
		return nil, "open: " + err.Error()
	}
	return recycleKeys(t, r, path, window)
}

func recycleKeys(t *testing.T, r *Reader, path string, window int) ([]string, string) {
	defer r.Close()
	var keys []string
	type held struct {
		ev  *event.Event
		key string
	}
	var flight []held
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			for _, h := range flight {
				if k := fullKey(h.ev); k != h.key {
					t.Fatalf("%s: an event changed while held:\n got %s\nwant %s", path, k, h.key)
				}
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			return keys, msg
		}
		k := fullKey(ev)
		keys = append(keys, k)
		if window == 0 {
			continue
		}
		flight = append(flight, held{ev, k})
		if len(flight) > window {
			h := flight[0]
			flight = flight[1:]
			if k := fullKey(h.ev); k != h.key {
				t.Fatalf("%s: an event changed while held:\n got %s\nwant %s", path, k, h.key)
			}
			r.Recycle(h.ev)
		}
	}
}

// TestRecycleGivesSameEvents: a consumer that recycles the events it is
// done with gets the same events as one that keeps them all, and no event
// changes while it holds it, on every fixture log and on a realistic one.
func TestRecycleGivesSameEvents(t *testing.T) {
	var paths []string
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "fuzz" || d.Name() == "golden" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext == ".md" || ext == ".sh" || ext == ".tsv" || ext == ".golden" {
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	realistic := filepath.Join(t.TempDir(), "realistic.log")
	f, err := os.Create(realistic)
	if err != nil {
		t.Fatal(err)
	}
	if err := synthlog.WriteRealistic(f, 8<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, realistic)
	if len(paths) < 50 {
		t.Fatalf("only %d logs found under testdata", len(paths))
	}
	events := 0
	for _, p := range paths {
		want, wantErr := readKeys(t, p, 0)
		for _, window := range []int{1, 7, 3000} {
			got, gotErr := readKeys(t, p, window)
			if gotErr != wantErr || !slices.Equal(got, want) {
				t.Errorf("%s, recycling after %d events: %d events (%q), want %d (%q)", p, window, len(got), gotErr, len(want), wantErr)
			}
		}
		events += len(want)
		if strings.HasSuffix(p, "realistic.log") && len(want) < 10_000 {
			t.Errorf("the realistic log gave only %d events", len(want))
		}
	}
	t.Logf("%d logs, %d events", len(paths), events)
}

// FuzzRecycle: whatever the log, recycling gives the events of not
// recycling, and never changes an event the consumer still holds.
func FuzzRecycle(f *testing.F) {
	f.Add(syntheticLog(8<<10), uint8(3))
	for _, p := range []string{"testdata/stderr/log_statement.log", "testdata/pgbadger/multiline_param.log", "testdata/csvlog/anonymize.csv", "testdata/jsonlog/cnpg.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, window uint8) {
		read := func(window int) ([]string, string) {
			r, err := NewReader(bytes.NewReader(in), "fuzz", Options{})
			if err != nil {
				return nil, "open: " + err.Error()
			}
			return recycleKeys(t, r, "fuzz", window)
		}
		want, wantErr := read(0)
		got, gotErr := read(1 + int(window)%16)
		if gotErr != wantErr || !slices.Equal(got, want) {
			t.Fatalf("recycling: %d events (%q), want %d (%q)", len(got), gotErr, len(want), wantErr)
		}
	})
}
