package logread

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// minSplitPart is the smallest part worth a reader of its own (a
// variable for tests).
var minSplitPart int64 = 16 << 20

// OpenSplit opens a log for reading in up to n parts at once, one Reader
// per part, each to be read on its own goroutine. Only an uncompressed
// regular file can be split; anything else gives one Reader, as Open.
//
// Parts start at the first line of a message after an even split of the
// file, so no message is cut. What the log spreads over a part boundary
// is joined again: a statement announced by log_statement at the end of a
// part gets the duration logged at the start of the next one, emitted by
// whichever of the two readers finishes last. The events of the parts
// together are those of Open, in another order; the line counters of
// the parts add up to those of Open, though a single part's may not.
//
// Two things do not cross a boundary: the bind line that is the only
// trace of an execution failing at the start of the next part (it is then
// reported as a simple statement), and, in logs without %c, the counting
// of a process's sessions (each part numbers them anew).
func OpenSplit(path string, opts Options, n int) ([]*Reader, error) {
	first, err := Open(path, opts)
	if err != nil || n <= 1 || path == "-" {
		return []*Reader{first}, err
	}
	size := first.src.size
	if size < 2*minSplitPart || first.src.compressed || first.layout.env != envNone {
		// An envelope's messages are joined from parts across lines.
		return []*Reader{first}, nil
	}
	n = int(min(int64(n), size/minSplitPart))
	opts.Format, opts.Prefix = first.format, first.prefix
	first.Close()

	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var p *prefix.Prefix
	if opts.Format == FormatStderr {
		if p, err = prefix.Compile(opts.Prefix); err != nil {
			return nil, err
		}
	}
	starts := []int64{0}
	for i := 1; i < n; i++ {
		off, err := messageStart(f, size*int64(i)/int64(n), opts.Format, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if off > starts[len(starts)-1] && off < size {
			starts = append(starts, off)
		}
	}
	starts = append(starts, size)

	readers := make([]*Reader, 0, len(starts)-1)
	var left *boundary
	for i := 0; i+1 < len(starts); i++ {
		file, err := os.Open(path)
		if err != nil {
			for _, r := range readers {
				r.Close()
			}
			return nil, err
		}
		sec := io.NewSectionReader(file, starts[i], starts[i+1]-starts[i])
		src := &source{raw: &countingReader{r: sec}, size: starts[i+1] - starts[i], closer: []io.Closer{file}, file: file, off: starts[i]}
		src.r = src.raw
		r, err := newReader(path, src, opts)
		if err != nil {
			file.Close()
			return nil, err
		}
		r.left = left
		r.interp.leading = left != nil
		if i+2 < len(starts) {
			r.right = &boundary{}
		}
		left = r.right
		readers = append(readers, r)
	}
	return readers, nil
}

// messageStart returns the offset of the first line at or after off that
// starts a message: a primary severity after the prefix for stderr, a
// time for csvlog, any line for jsonlog.
func messageStart(f *os.File, off int64, format Format, p *prefix.Prefix) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, 1<<62), 1<<16)
	pos := off
	// The first line may be cut; skip to the next.
	if off > 0 {
		line, err := br.ReadSlice('\n')
		pos += int64(len(line))
		if err != nil {
			return pos, nil
		}
	}
	var fields prefix.Fields
	for range 1 << 16 {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer is no message start.
			for err == bufio.ErrBufferFull {
				pos += int64(len(line))
				line, err = br.ReadSlice('\n')
			}
			pos += int64(len(line))
			continue
		}
		if err != nil {
			return pos + int64(len(line)), nil
		}
		ok := false
		switch format {
		case FormatStderr:
			if rest, m := p.Match(bytes.TrimRight(line, "\r\n"), &fields); m {
				sev, _, _ := prefix.SplitSeverity(rest)
				ok = prefix.SeverityClass(sev) == prefix.Primary
			}
		case FormatCSV:
			_, rest, m := prefix.TakeTimestamp(bytes.TrimPrefix(line, []byte{'"'}))
			ok = m && len(rest) > 0 && (rest[0] == ',' || rest[0] == '"')
		default:
			ok = true
		}
		if ok {
			return pos, nil
		}
		pos += int64(len(line))
	}
	return pos, nil
}

// A boundary joins two neighbouring parts of a split log. The reader of
// the left part leaves there the statements still waiting for their
// duration when its part ends; the reader of the right part, the
// durations it found before any statement of their session. Whichever
// finishes second pairs them and emits the statements.
type boundary struct {
	mu        sync.Mutex
	leftDone  bool
	rightDone bool
	pending   map[string]*event.Event // session -> statement without duration
	durations map[string]int64        // session -> first duration in the right part
	errors    map[string]*event.Event // session -> first failed statement in the right part
}

// join pairs the statements with the durations once both sides are in,
// and returns the events to emit, with how many duration lines turned out
// to belong to a statement.
func (b *boundary) join() ([]*event.Event, int64) {
	var out []*event.Event
	var paired int64
	for sess, ev := range b.pending {
		if d, ok := b.durations[sess]; ok {
			ev.Duration = d
			paired++
		} else if fe, ok := b.errors[sess]; ok && fe.Query == ev.Query {
			// The announced statement is the one that failed.
			ev.Failed, ev.SQLState = true, fe.SQLState
			ev.SetError(fe.ErrorSeverity(), fe.ErrorMessage())
			delete(b.errors, sess)
		}
		out = append(out, ev)
	}
	// The maps' order would change from run to run: the left part's
	// statements in its log order, then the right part's errors in its.
	slices.SortFunc(out, byLine)
	n := len(out)
	for _, fe := range b.errors {
		out = append(out, fe)
	}
	slices.SortFunc(out[n:], byLine)
	b.pending, b.durations, b.errors = nil, nil, nil
	return out, paired
}
