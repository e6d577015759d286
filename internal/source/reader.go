package source

import (
	"bufio"
	"errors"
	"os"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Reader is one input's reader: a log file (or a part of one), a capture
// of the proxy, or events held in memory. Open makes one per input and
// detects which; everything above a Set (analyze, replay, shards) reads
// them through this one seam and knows nothing of the kind.
//
// It yields the input's events in order (event.Source), takes back the
// events its consumer is done with, and accounts for what it read in its
// own unit: lines for a log, messages for a capture (SourceCounts).
type Reader interface {
	event.Source
	event.Named
	event.Recycler
	// Progress is how much of the input was read and its size, in bytes
	// (size -1 when unknown); safe from any goroutine.
	Progress() (read, size int64)
	// Timing says how precise the input's times are; TimeRange gives
	// the first and last time read so far.
	Timing() logread.Timing
	TimeRange() (first, last int64, ok bool)
	// Origin is what the input shows of the server it came from.
	Origin() logread.Origin
	// Partial says why the input broke off (a truncated file), nil when
	// it did not.
	Partial() error
	// Warnings are what the reader assumed or set aside.
	Warnings() []string
	// SourceCounts accounts for what was read; ask once it is read.
	SourceCounts() results.SourceCounts
	Close() error
}

// logReader is a log file's Reader: a logread.Reader, whose line counters
// are the source's counts.
type logReader struct{ *logread.Reader }

func (r logReader) SourceCounts() results.SourceCounts {
	c := r.Counters()
	lc := results.LineCounts{Total: c.Total, Parsed: c.Parsed, Skipped: make(map[results.LineSkip]int64, len(c.Skipped))}
	for k, v := range c.Skipped {
		lc.Skipped[results.LineSkip(k)] = v
	}
	return results.SourceCounts{Lines: &lc}
}

// LogReader returns the log reader behind r, when r reads a log: its
// layout, format, prefix and line counters are a log's alone.
func LogReader(r Reader) (*logread.Reader, bool) {
	lr, ok := r.(logReader)
	if !ok {
		return nil, false
	}
	return lr.Reader, true
}

// ErrCaptureStdin is Open's error for a capture given on standard input.
var ErrCaptureStdin = errors.New("standard input holds a capture: give the capture's directory instead, which is read from its files")

// openReaders opens one input: a capture when it is one, else a log, in
// parts when asked.
func openReaders(path string, opts Options) ([]Reader, error) {
	if path == "-" {
		// A capture is read from its files: its segments follow each
		// other, and its manifest is beside them.
		stdin := opts.Log.Stdin
		if stdin == nil {
			stdin = os.Stdin
		}
		br := bufio.NewReader(stdin)
		if b, _ := br.Peek(len(capture.Magic)); string(b) == capture.Magic {
			return nil, ErrCaptureStdin
		}
		opts.Log.Stdin = br
	}
	if path != "-" {
		if ok, err := capture.Detect(path); err == nil && ok {
			// A capture is one reader: its sessions' messages
			// interleave, and its events need them in order.
			c, err := openCapture(path)
			if err != nil {
				return nil, err
			}
			return []Reader{c}, nil
		}
	}
	rs, err := logread.OpenSplit(path, opts.Log, max(opts.Parts, 1))
	if err != nil {
		for _, r := range rs {
			if r != nil {
				r.Close()
			}
		}
		return nil, err
	}
	out := make([]Reader, len(rs))
	for i, r := range rs {
		out[i] = logReader{r}
	}
	return out, nil
}
