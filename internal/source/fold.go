package source

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Fold is an Origin that makes K times a workload's load out of one
// input: its K consecutive time slices, each Width µs of log time from
// First on, overlaid on the first slice's window, as Oracle's consolidated
// replay scales up. Slice i's events (First+i*Width <= Time <
// First+(i+1)*Width) come with their times moved back by i*Width, so that
// the K slices run at once, each at its own pace: the extra load is real,
// different traffic (other keys, other sessions).
//
// Each slice is a part of the workload of its own: its sessions' ids get
// the slice's number after them ("abc" of slice 2 is "abc#2"; K = 1
// renames nothing), and its events are in their own lane (event.Event.Lane
// is the slice's index), so that a synchronized replay keeps the commit
// order within each slice and invents none across slices: a slice's
// traffic did not wait for another's in the log, and made to wait for it
// in shifted time it could stall on commits that run later than it
// thinks. A session cut by a slice's edge starts or ends in its middle,
// as in any time window.
//
// The slices are read at once, each by a reader of its own (the input is
// opened K times, so standard input cannot be folded), and their events
// merged by their shifted times into one source, in the order one log of
// the overlaid traffic would give them: the replayer reads its sources one
// after the other, so K sources would run the slices one after the
// other. Slice i's reader passes over the events before its slice (the
// earlier slices', read by their own readers), and stops once past its
// slice by the selection's StopAfter (never, without one).
//
// The selection applies to the folded events: its time window in the
// log's time (it narrows the fold's [First, First+K*Width)), the shard and
// the session filters to the sessions as renamed. Every event read is
// counted once, by the slice it falls in: those outside the fold's window
// (or the selection's) as filtered by the window, those of the slices
// kept as the slice's; the lines are those of the reader that read
// furthest, the last slice's, which read every line the others did. So
// the counts add up as an unfolded source's: events read = events
// yielded + filtered (+ other shards').
type Fold struct {
	Of    Origin
	K     int
	First int64
	Width int64
}

// MaxFold is the most slices a Fold may have: one lane each.
const MaxFold = math.MaxUint8 + 1

// Open opens the K slices of the input and merges them, selected as opts
// say.
func (f Fold) Open(opts Options) (*Set, error) {
	switch {
	case f.Of == nil:
		return nil, errors.New("fold: no input to fold")
	case f.K < 1 || f.K > MaxFold:
		return nil, fmt.Errorf("fold: %d slices; 1 to %d", f.K, MaxFold)
	case f.Width <= 0:
		return nil, fmt.Errorf("fold: slices of %d µs", f.Width)
	case f.K > 1 && f.Of.Stdin():
		return nil, errors.New("fold: standard input can be read only once, not once per slice")
	}
	var sel Selection
	if opts.Select != nil {
		sel = *opts.Select
	}
	inner := opts
	inner.Select, inner.Parts, inner.Progress = nil, 1, nil
	s := &Set{opts: opts, state: NewState(), progress: opts.Progress}
	for range f.K {
		sub, err := f.Of.Open(inner)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.subs = append(s.subs, sub)
	}
	last := s.subs[len(s.subs)-1]
	s.input = s.subs[0].Input()
	// The last slice's reader reads every line the others do, and
	// further: its lines, progress, warnings and cut are the input's.
	s.readers = last.Readers()
	last.OnProgress(opts.Progress)
	c := &Counts{}
	s.counts = []*Counts{c}
	lo, hi := f.First, f.First+int64(f.K)*f.Width
	if sel.Start != 0 {
		lo = max(lo, sel.Start)
	}
	if sel.End != 0 {
		hi = min(hi, sel.End)
	}
	m := &foldMerge{c: c, last: last}
	for i, sub := range s.subs {
		sl := &foldSlice{src: sub.Sources(), i: i, k: f.K, first: f.First, width: f.Width, lo: lo, hi: hi,
			stopAfter: sel.StopAfter, c: c}
		if f.K > 1 {
			sl.suffix = "#" + strconv.Itoa(i+1)
		}
		m.slices = append(m.slices, sl)
	}
	s.sources = []event.Source{m}
	if opts.Select != nil {
		// The window is the slices'; the rest of the selection applies
		// to the folded sessions.
		rest := sel
		rest.Start, rest.End, rest.StopAfter = 0, 0, 0
		s.sources[0] = Select(m, &rest, s.state, c)
	}
	return s, nil
}

// Stdin is the folded input's.
func (f Fold) Stdin() bool { return f.Of != nil && f.Of.Stdin() }

// foldSlice yields the events of one slice, shifted and renamed, read
// from its own reader's sources one after the other.
type foldSlice struct {
	src    []event.Source
	cur    int
	i, k   int
	first  int64
	width  int64
	lo, hi int64 // the fold's window, in log time
	// stopAfter ends reading once an event is that far past the slice
	// (0: read on to the end).
	stopAfter int64
	suffix    string
	c         *Counts
	done      bool
}

// slice is the slice an event of log time t falls in: those before the
// fold in the first, those after it in the last.
func (s *foldSlice) slice(t int64) int {
	if t < s.first {
		return 0
	}
	return int(min((t-s.first)/s.width, int64(s.k-1)))
}

func (s *foldSlice) Next() (*event.Event, error) {
	for !s.done {
		if s.cur >= len(s.src) {
			s.done = true
			break
		}
		src := s.src[s.cur]
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			s.cur++
			continue
		}
		if err != nil {
			return ev, err
		}
		end := min(s.first+int64(s.i+1)*s.width, s.hi)
		if s.i == s.k-1 {
			end = s.hi
		}
		if s.stopAfter > 0 && ev.Time > end+s.stopAfter {
			// Nothing of this slice comes after that (events are in
			// completion order): the later slices' readers read on.
			// The last counts the event that ended it, as the window
			// selection does.
			if s.slice(ev.Time) == s.i {
				s.drop(src, ev)
			} else {
				recycle(src, ev)
			}
			s.done = true
			break
		}
		if ev.Time <= 0 || s.slice(ev.Time) != s.i {
			if ev.Time <= 0 && s.i == 0 {
				// Without a time, it falls in no slice: left out
				// once, by the first.
				s.drop(src, ev)
				continue
			}
			// Another slice's, counted by its reader.
			recycle(src, ev)
			continue
		}
		if ev.Time < s.lo || ev.Time >= s.hi {
			s.drop(src, ev)
			continue
		}
		if s.k == 1 {
			return ev, nil
		}
		// A copy: the input's events may be shared (a Memory's), and
		// the original is not recycled, the copy sharing its memory.
		c := *ev
		c.Time -= int64(s.i) * s.width
		if c.Session != "" {
			c.Session += s.suffix
		}
		c.Lane = uint8(s.i)
		return &c, nil
	}
	return nil, io.EOF
}

// drop counts ev as left out by the window, as the window selection does.
func (s *foldSlice) drop(src event.Source, ev *event.Event) {
	c := s.c
	c.Filtered.Events++
	if ev.IsExecution() {
		c.Filtered.Statements++
		c.Dropped.Window++
		if ev.IsOwn() {
			c.Filtered.OwnStatements++
		}
		if ev.Time <= 0 {
			c.Dropped.Timeless++
		}
	}
	recycle(src, ev)
}

func recycle(src event.Source, ev *event.Event) {
	if r, ok := src.(event.Recycler); ok {
		r.Recycle(ev)
	}
}

// foldMerge merges the slices' events by their shifted times: of the
// slices' next events, the earliest first (the first slice's on a tie),
// each slice's in its own order.
type foldMerge struct {
	slices []*foldSlice
	heads  []*event.Event
	primed bool
	err    error
	c      *Counts
	last   *Set
}

func (m *foldMerge) Next() (*event.Event, error) {
	if m.err != nil {
		return nil, m.err
	}
	if !m.primed {
		m.primed = true
		m.heads = make([]*event.Event, len(m.slices))
		for i, s := range m.slices {
			ev, err := s.Next()
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			m.heads[i] = ev
		}
	}
	best := -1
	for i, ev := range m.heads {
		if ev != nil && (best < 0 || ev.Time < m.heads[best].Time) {
			best = i
		}
	}
	if best < 0 {
		return nil, io.EOF
	}
	ev := m.heads[best]
	next, err := m.slices[best].Next()
	if err != nil && !errors.Is(err, io.EOF) {
		// The read error ends the input, after the event read.
		m.err = err
		return ev, nil
	}
	m.heads[best] = next
	return ev, nil
}

// Name names the input, as its first slice's source does.
func (m *foldMerge) Name() string {
	if len(m.slices) > 0 && len(m.slices[0].src) > 0 {
		if n, ok := m.slices[0].src[0].(event.Named); ok {
			return n.Name()
		}
	}
	return ""
}

// Recycle keeps nothing: the folded events are copies, left to the
// collector, and an unfolded one (K = 1) may have come from any of the
// input's readers.
func (m *foldMerge) Recycle(...*event.Event) {}

// SourceCounts are the lines (or messages) of the reader that read
// furthest, the last slice's, with what the fold and the selection left
// out.
func (m *foldMerge) SourceCounts() results.SourceCounts {
	sc := m.last.Counts()
	sc.Filtered = m.c.Filtered
	if m.c.Other.ReadEvents > 0 {
		o := m.c.Other
		sc.OtherShards = &o
	}
	return sc
}
