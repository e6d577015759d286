package logread

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

// TestTailCacheSameEvents: the cache of prefix fields by the text after
// the time must give exactly what matching every line gives.
func TestTailCacheSameEvents(t *testing.T) {
	var synth bytes.Buffer
	if err := synthlog.Write(&synth, 1<<20); err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{"synthetic": synth.Bytes()}
	golden, _ := filepath.Glob(filepath.Join("testdata", "stderr", "*.log"))
	for _, g := range golden {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		inputs[g] = b
	}
	for name, data := range inputs {
		read := func(cache bool) ([]string, *Counters) {
			r, err := NewReader(bytes.NewReader(data), name, Options{})
			if err != nil {
				return []string{"error: " + err.Error()}, nil
			}
			if !cache {
				r.stderr.tails = nil
			} else if r.stderr.tails == nil {
				t.Logf("%s: prefix %q is not cacheable", name, r.Prefix())
			}
			var keys []string
			for ev, err := range event.All(r) {
				if err != nil {
					return append(keys, "error: "+err.Error()), r.Counters()
				}
				keys = append(keys, eventKey(ev)+"|"+ev.User+"|"+ev.Database+"|"+ev.Application)
			}
			return keys, r.Counters()
		}
		with, cw := read(true)
		without, cwo := read(false)
		if !slices.Equal(with, without) {
			t.Errorf("%s: %d events with the cache, %d without; first difference: %s", name, len(with), len(without), firstDiff(with, without))
		}
		if cw != nil && (cw.Total != cwo.Total || cw.Parsed != cwo.Parsed) {
			t.Errorf("%s: counters differ: %+v vs %+v", name, cw, cwo)
		}
	}
}
