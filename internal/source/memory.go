package source

import (
	"io"
	"sync/atomic"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Memory is an Origin of events held in memory, in the order a log would
// hold them: a workload made by a program (a folded log, a test) rather
// than read from a file. Its events are yielded as they are, never
// recycled, so the same Memory can be opened again.
type Memory struct {
	// Name names the input in results and messages.
	Name   string
	Events []*event.Event
}

// Open makes a Set of the events, selected as opts say.
func (m Memory) Open(opts Options) (*Set, error) {
	s := &Set{opts: opts, state: NewState(), progress: opts.Progress}
	f := &file{path: m.Name, info: results.InputFile{Name: m.Name, Size: -1}}
	f.readers = []Reader{&memReader{name: m.Name, events: m.Events}}
	f.peek()
	s.files = []*file{f}
	s.build()
	return s, nil
}

// Stdin is false: nothing is read from standard input.
func (Memory) Stdin() bool { return false }

// memReader yields a Memory's events. Its progress is in events, not
// bytes.
type memReader struct {
	name   string
	events []*event.Event
	next   int
	read   atomic.Int64
	timeSpan
}

// timeSpan is the first and last time of the events a reader gave, for
// its TimeRange.
type timeSpan struct{ first, last int64 }

// see takes an event's time into the span; 0 (no time) is passed over.
func (s *timeSpan) see(t int64) {
	if t > 0 {
		if s.first == 0 || t < s.first {
			s.first = t
		}
		s.last = max(s.last, t)
	}
}

// TimeRange is the span seen, ok false when no event had a time.
func (s *timeSpan) TimeRange() (first, last int64, ok bool) {
	return s.first, s.last, s.first > 0
}

func (r *memReader) Next() (*event.Event, error) {
	if r.next >= len(r.events) {
		return nil, io.EOF
	}
	ev := r.events[r.next]
	r.next++
	r.read.Add(1)
	r.see(ev.Time)
	return ev, nil
}

func (r *memReader) Name() string                       { return r.name }
func (r *memReader) Recycle(...*event.Event)            {}
func (r *memReader) Progress() (read, size int64)       { return r.read.Load(), int64(len(r.events)) }
func (r *memReader) Timing() logread.Timing             { return logread.TimingFraction }
func (r *memReader) Origin() logread.Origin             { return logread.Origin{} }
func (r *memReader) Partial() error                     { return nil }
func (r *memReader) Warnings() []string                 { return nil }
func (r *memReader) SourceCounts() results.SourceCounts { return results.SourceCounts{} }
func (r *memReader) Close() error                       { return nil }
