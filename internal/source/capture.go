package source

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// capReader is a capture's Reader: the proxy's records decoded into
// events, accounted for in messages rather than lines.
type capReader struct {
	path string
	r    *capture.Reader
	dec  *capture.Decoder

	mu sync.Mutex // guards the reader's progress against Progress
	timeSpan

	// alone: path is one segment file of a capture, read without the
	// others; others counts the other segments beside it, and closed
	// says its directory has the manifest of a capture closed by its
	// proxy.
	alone  bool
	others int
	closed bool
}

// openCapture opens the capture at path (a directory, or one of its
// segment files).
func openCapture(path string) (*capReader, error) {
	r, err := capture.Open(path)
	if err != nil {
		return nil, err
	}
	c := &capReader{path: path, r: r}
	c.dec = capture.NewDecoder(lockedRecords{c})
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		c.alone = true
		dir := filepath.Dir(path)
		if segs, err := capture.Segments(dir); err == nil {
			for _, seg := range segs {
				if !sameFile(seg, path) {
					c.others++
				}
			}
		}
		_, err := capture.ReadManifest(dir)
		c.closed = err == nil
	}
	return c, nil
}

// lockedRecords reads the capture under the reader's lock, so that
// Progress may be asked from another goroutine.
type lockedRecords struct{ c *capReader }

func (l lockedRecords) Next() (*capture.Record, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.c.r.Next()
}

func (c *capReader) Next() (*event.Event, error) {
	ev, err := c.dec.Next()
	if err != nil {
		return nil, err
	}
	c.see(ev.Time)
	return ev, nil
}

func (c *capReader) Name() string            { return c.path }
func (c *capReader) Recycle(...*event.Event) {}

func (c *capReader) Progress() (read, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.Progress()
}

// Timing: the proxy stamps every message in microseconds.
func (c *capReader) Timing() logread.Timing { return logread.TimingFraction }

// Origin: a capture does not know the server's identity.
func (c *capReader) Origin() logread.Origin { return logread.Origin{} }

// Partial says why the capture does not hold every message the proxy
// saw: its writer never closed it, or the recorder lost records.
func (c *capReader) Partial() error {
	info := c.r.Info()
	switch {
	case !info.Finalized && c.r.Partial():
		return fmt.Errorf("capture %s ends in a chunk not wholly written: it is still being written, or its proxy stopped without closing it", c.path)
	case !info.Finalized && c.alone && c.closed:
		// The only segment, or one of several, of a capture its proxy
		// closed: the warning says what reading it alone cuts.
		return nil
	case !info.Finalized:
		// As a log that broke off: the proxy was killed (or still
		// runs), so what it saw last may be missing.
		return fmt.Errorf("capture %s has no manifest: its proxy was killed or is still running, so it may lack what the proxy saw last", c.path)
	case !info.Complete:
		return fmt.Errorf("capture %s is incomplete: %s (%d records lost)", c.path, info.Reason, info.Dropped)
	}
	return nil
}

func (c *capReader) Warnings() []string {
	w := c.dec.Warnings()
	switch info := c.r.Info(); {
	case c.alone && c.others > 0:
		w = append(w, fmt.Sprintf("%s is one segment file of a capture of %d, read alone: sessions that go on in the others are cut; give the capture's directory to read them all", c.path, c.others+1))
	case c.alone && c.closed:
		// The capture's only segment, its proxy closed it: whole.
	case !info.Finalized && !c.r.Partial():
		w = append(w, fmt.Sprintf("capture %s has no manifest: its proxy stopped without closing it, so sessions may be cut at its end", c.path))
	}
	return w
}

func (c *capReader) SourceCounts() results.SourceCounts {
	m := c.dec.Counts()
	// The gap records count the drops the recorder could place; the
	// manifest counts them all, those after recording stopped too.
	m.Dropped = max(m.Dropped, c.r.Info().Dropped)
	// The decoder's maps stay its own; a reason never counted is left
	// out.
	m.Skipped = maps.Clone(m.Skipped)
	if m.Skipped == nil {
		m.Skipped = map[results.MessageSkip]int64{}
	}
	maps.DeleteFunc(m.Skipped, func(_ results.MessageSkip, n int64) bool { return n == 0 })
	m.BeforeRecording = maps.Clone(m.BeforeRecording)
	return results.SourceCounts{Messages: &m}
}

func (c *capReader) Close() error { return c.r.Close() }

// StartState is the starting point the capture's manifest records, nil
// when it records none (taken without a monitoring connection, not
// finalized, or read as one segment file).
func (c *capReader) StartState() *capture.StartState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.Info().Manifest.StartState
}

// StartState is the starting point of the set's captures: of those whose
// manifest records one, the capture that started first (several captures
// replayed together start where the first did), with its path. Logs
// record none: nil, "" for a set of logs only.
func (s *Set) StartState() (*capture.StartState, string) {
	var best *capture.StartState
	var path string
	for _, r := range s.readers {
		c, ok := r.(*capReader)
		if !ok {
			continue
		}
		if st := c.StartState(); st != nil && (best == nil || st.Time.Before(best.Time)) {
			best, path = st, c.path
		}
	}
	return best, path
}
