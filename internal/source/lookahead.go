package source

import (
	"errors"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// ErrLookaheadFull ends a first look (Lookahead.First) when it holds as
// many events as it may: what comes after is seen only by the second.
var ErrLookaheadFull = errors.New("the first look at the logs reached its memory bound")

// Lookahead reads sources once for two readers, one after the other: a
// first look at their beginning (a replay's pre-flight: the logins and
// destructive statements of the log), then the whole (the replay itself),
// which gets the events the first look read again, then reads on. The
// logs are read once; the first look keeps at most Limit bytes of events.
type Lookahead struct {
	srcs  []event.Source
	kept  [][]*event.Event
	errs  []error // the error that ended a source during the first look
	used  int64
	limit int64
}

// NewLookahead returns a Lookahead over srcs keeping at most limit bytes
// (an estimate of the events' memory) for the second reader.
func NewLookahead(srcs []event.Source, limit int64) *Lookahead {
	return &Lookahead{srcs: srcs, kept: make([][]*event.Event, len(srcs)), errs: make([]error, len(srcs)), limit: limit}
}

// First are the sources of the first look. One ends with
// ErrLookaheadFull when the bound is reached; the others then end at once.
func (l *Lookahead) First() []event.Source {
	out := make([]event.Source, len(l.srcs))
	for i := range l.srcs {
		out[i] = &firstLook{l: l, i: i}
	}
	return out
}

// Sources are the sources of the second reader: each yields what the
// first look read of it, then reads on.
func (l *Lookahead) Sources() []event.Source {
	out := make([]event.Source, len(l.srcs))
	for i := range l.srcs {
		out[i] = &again{base: base{src: l.srcs[i]}, kept: l.kept[i], err: l.errs[i]}
	}
	l.kept, l.errs = nil, nil
	return out
}

// Kept is how many events the first look kept, in all.
func (l *Lookahead) Kept() (events int, bytes int64) {
	for _, k := range l.kept {
		events += len(k)
	}
	return events, l.used
}

// eventSize estimates the memory an event holds.
func eventSize(ev *event.Event) int64 { return ev.Size() }

type firstLook struct {
	l *Lookahead
	i int
}

func (f *firstLook) Next() (*event.Event, error) {
	l := f.l
	if l.errs[f.i] != nil {
		return nil, l.errs[f.i]
	}
	if l.used >= l.limit {
		return nil, ErrLookaheadFull
	}
	ev, err := l.srcs[f.i].Next()
	if err != nil {
		l.errs[f.i] = err
		return nil, err
	}
	l.kept[f.i] = append(l.kept[f.i], ev)
	l.used += eventSize(ev)
	return ev, nil
}

func (f *firstLook) Name() string {
	if n, ok := f.l.srcs[f.i].(event.Named); ok {
		return n.Name()
	}
	return ""
}

// again yields the events kept, then reads on.
type again struct {
	base
	kept []*event.Event
	err  error
}

func (a *again) Next() (*event.Event, error) {
	if len(a.kept) > 0 {
		ev := a.kept[0]
		a.kept[0] = nil
		a.kept = a.kept[1:]
		return ev, nil
	}
	if a.err != nil {
		return nil, a.err
	}
	return a.src.Next()
}

// SourceCounts are the wrapped source's.
func (a *again) SourceCounts() results.SourceCounts {
	if c, ok := a.src.(results.SourceCounter); ok {
		return c.SourceCounts()
	}
	return results.SourceCounts{}
}
