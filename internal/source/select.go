package source

import (
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Selection says which events of the logs are the workload. The zero
// Selection keeps every event except pgrehearse's own sessions', which
// are never the workload (event.OwnApplicationPrefix).
//
// Selections apply in one order, each seeing only what the ones before
// kept: the shard first (other shards' sessions are counted apart, in
// results.OtherShards, never as filtered), then the time window, then
// pgrehearse's own sessions, then the session filters. What each leaves
// out is counted in results.Filtered.
type Selection struct {
	// Start and End bound the events by their time, in µs since the
	// epoch: Start <= Time < End. Zero means unbounded.
	Start, End int64
	// StopAfter ends reading once an event is more than StopAfter µs
	// past End: events are in completion order, so one that started
	// before End may still come a little later, but nothing of the
	// window comes after that. Zero reads every event, counting those
	// past End as filtered (an analysis's account of every line).
	StopAfter int64

	// Databases, Users and Applications, when not empty, list the values
	// a session must have, each. A session is decided on its first event
	// in the window and kept or left out whole.
	Databases    []string
	Users        []string
	Applications []string
	// Sessions, when not nil, keeps only the sessions it returns true
	// for, by their id (a sweep's lanes of sessions); it is a filter as
	// the three above, and applies with them.
	Sessions func(session string) bool

	// Shard, when it splits (Of > 1), keeps the sessions of one shard.
	Shard Shard

	// KeepOwn keeps pgrehearse's own sessions (its replays' and
	// observers' connections, by their application_name), which every
	// other selection leaves out of a workload: for a command that shows
	// what the reader found, not a workload.
	KeepOwn bool
}

// sessionFilters reports whether the selection filters sessions.
func (s *Selection) sessionFilters() bool {
	return len(s.Databases)+len(s.Users)+len(s.Applications) > 0 || s.Sessions != nil
}

// Select wraps src with the decorators sel asks for, counting what they
// leave out in c. The decorators of the sources of one workload share st,
// which holds what is decided per session (a session may span files, or
// the parts of a split file read at once); it is safe for concurrent
// use. A decorator passes on Name, Recycle and SourceCounts of the source
// it wraps; events it leaves out go back to a source that recycles.
func Select(src event.Source, sel *Selection, st *State, c *Counts) event.Source {
	// Each decorator reads the one it wraps: the first to apply is the
	// innermost.
	if sel.Shard.Splits() {
		src = &shardFilter{base: base{src: src, c: c}, shard: sel.Shard, st: st}
	}
	if sel.Start != 0 || sel.End != 0 {
		src = &window{base: base{src: src, c: c}, sel: sel, st: st}
	}
	if !sel.KeepOwn {
		src = &ownFilter{base: base{src: src, c: c}, st: st}
	}
	if sel.sessionFilters() {
		src = &sessionFilter{base: base{src: src, c: c}, sel: sel, st: st}
	}
	return src
}

// Counts is what the selection of one source left out. It is written by
// the goroutine that reads the source, and read once it is done.
type Counts struct {
	Filtered results.Filtered
	// Dropped tells, of Filtered's statements, which selection left
	// each out.
	Dropped Dropped
	// Other counts the other shards' events, and what the shard
	// selector read (all shards').
	Other results.OtherShards
}

// State is what the selections of one workload decide per session,
// shared by the decorators of all its sources.
type State struct {
	mu sync.Mutex
	// own holds pgrehearse's own sessions seen, until they end; nown is
	// its size, read without the lock to skip the lookup when empty
	// (every event of an analysis asks).
	own  map[string]bool
	nown atomic.Int64
	// kept holds the sessions decided by the session filters, until
	// they end: whether each is kept.
	kept map[string]bool
	// shard holds the sessions the shard selector has seen, until they
	// end, to count sessions once each.
	shard map[string]bool
	// pos numbers the events the shard selector read (event.Event.Pos).
	pos atomic.Int64
	// over is set once the window is over: every source ends.
	over atomic.Bool
}

// NewState returns the state of one workload's selection.
func NewState() *State {
	return &State{own: map[string]bool{}, kept: map[string]bool{}, shard: map[string]bool{}}
}

// base passes on what a decorator does not change.
type base struct {
	src event.Source
	c   *Counts
}

func (b *base) Name() string {
	if n, ok := b.src.(event.Named); ok {
		return n.Name()
	}
	return ""
}

func (b *base) Recycle(evs ...*event.Event) {
	if r, ok := b.src.(event.Recycler); ok {
		r.Recycle(evs...)
	}
}

// SourceCounts are the wrapped source's, with what this selection left
// out: every decorator of a chain counts into the same Counts, so the
// outermost's are the chain's.
func (b *base) SourceCounts() results.SourceCounts {
	var sc results.SourceCounts
	if c, ok := b.src.(results.SourceCounter); ok {
		sc = c.SourceCounts()
	}
	sc.Filtered = b.c.Filtered
	if b.c.Other.ReadEvents > 0 {
		o := b.c.Other
		sc.OtherShards = &o
	}
	return sc
}

// drop counts ev as filtered by the selection to, own marking a
// statement of pgrehearse's own sessions, and gives it back.
func (b *base) drop(ev *event.Event, own bool, to *int64) {
	b.c.Filtered.Events++
	if ev.IsExecution() {
		b.c.Filtered.Statements++
		*to++
		if own {
			b.c.Filtered.OwnStatements++
		}
		if ev.Time <= 0 {
			b.c.Dropped.Timeless++
		}
	}
	b.Recycle(ev)
}

// window keeps the events of [Start, End).
type window struct {
	base
	sel *Selection
	st  *State
}

func (w *window) Next() (*event.Event, error) {
	for {
		if w.st.over.Load() {
			return nil, io.EOF
		}
		ev, err := w.src.Next()
		if err != nil {
			return ev, err
		}
		s := w.sel
		switch {
		case s.Start != 0 && ev.Time < s.Start:
			w.drop(ev, ev.IsOwn() || w.st.isOwn(ev.Session), &w.c.Dropped.Window)
		case s.End != 0 && ev.Time >= s.End:
			past := s.StopAfter > 0 && ev.Time > s.End+s.StopAfter
			w.drop(ev, ev.IsOwn() || w.st.isOwn(ev.Session), &w.c.Dropped.Window)
			if past {
				w.st.over.Store(true)
				return nil, io.EOF
			}
		default:
			return ev, nil
		}
	}
}

// ownFilter leaves out pgrehearse's own sessions: an event of its own
// application, and every later event of a session that had one.
type ownFilter struct {
	base
	st *State
}

func (o *ownFilter) Next() (*event.Event, error) {
	for {
		ev, err := o.src.Next()
		if err != nil {
			return ev, err
		}
		if !ev.IsOwn() && !o.st.isOwn(ev.Session) {
			return ev, nil
		}
		if ev.Session != "" {
			if o.st.markOwn(ev.Session, ev.Kind == event.Disconnect) {
				o.c.Filtered.Sessions++
			}
		}
		o.drop(ev, true, &o.c.Dropped.Own)
	}
}

// isOwn reports whether session is one of pgrehearse's own, open.
func (st *State) isOwn(session string) bool {
	if st.nown.Load() == 0 {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.own[session]
}

// markOwn notes session as pgrehearse's own, and forgets it when it
// ended. It reports whether the session was new.
func (st *State) markOwn(session string, ended bool) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	known := st.own[session]
	if ended {
		delete(st.own, session)
	} else {
		st.own[session] = true
	}
	st.nown.Store(int64(len(st.own)))
	return !known
}

// sessionFilter keeps the sessions whose database, user and application
// are listed, decided on each session's first event.
type sessionFilter struct {
	base
	sel *Selection
	st  *State
}

func (f *sessionFilter) Next() (*event.Event, error) {
	for {
		ev, err := f.src.Next()
		if err != nil {
			return ev, err
		}
		if ev.Session == "" {
			// No session to decide on: the consumer's (a replay cannot
			// place it, an analysis counts it).
			return ev, nil
		}
		keep, counted := f.st.decide(ev, f.sel)
		if counted {
			f.c.Filtered.Sessions++
		}
		if keep {
			return ev, nil
		}
		f.drop(ev, false, &f.c.Dropped.Filters)
	}
}

// decide returns whether the session of ev is kept, deciding it on its
// first event, and whether it was just decided to be left out.
func (st *State) decide(ev *event.Event, sel *Selection) (keep, leftOut bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	keep, known := st.kept[ev.Session]
	if !known {
		keep = match(sel.Databases, ev.Database) && match(sel.Users, ev.User) && match(sel.Applications, ev.Application) &&
			(sel.Sessions == nil || sel.Sessions(ev.Session))
		leftOut = !keep
	}
	if ev.Kind == event.Disconnect {
		delete(st.kept, ev.Session)
	} else if !known {
		st.kept[ev.Session] = keep
	}
	return keep, leftOut
}

func match(list []string, v string) bool {
	return len(list) == 0 || slices.Contains(list, v)
}

// shardFilter keeps the sessions of one shard, and counts the others'
// apart.
type shardFilter struct {
	base
	shard Shard
	st    *State
}

func (f *shardFilter) Next() (*event.Event, error) {
	for {
		ev, err := f.src.Next()
		if err != nil {
			return ev, err
		}
		mine := f.shard.Has(ev.Session)
		pos := f.st.pos.Add(1)
		if first := f.shard.First; first != nil && ev.Time > 0 && first.Load() == 0 {
			first.Store(ev.Time)
		}
		o := &f.c.Other
		o.ReadEvents++
		if ev.IsExecution() {
			o.ReadStatements++
		}
		if ev.Session != "" && f.st.seeShard(ev.Session, ev.Kind == event.Disconnect) {
			o.ReadSessions++
			if !mine {
				o.Sessions++
			}
		}
		if mine {
			ev.Pos = pos
			return ev, nil
		}
		if f.shard.Foreign != nil {
			f.shard.Foreign(ev, pos)
		}
		o.Events++
		if ev.IsExecution() {
			o.Statements++
		}
		f.Recycle(ev)
	}
}

// seeShard notes a session seen by the shard selector, forgetting it when
// it ended, and reports whether it was new.
func (st *State) seeShard(session string, ended bool) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	known := st.shard[session]
	if ended {
		delete(st.shard, session)
	} else {
		st.shard[session] = true
	}
	return !known
}

// Tap shows every event of src to see on its way, as it passes on (the
// findings' sampling of parameter values during an analysis). see must
// not keep the event: a consumer may recycle it.
func Tap(src event.Source, see func(*event.Event)) event.Source {
	return &tap{base: base{src: src}, see: see}
}

type tap struct {
	base
	see func(*event.Event)
}

func (t *tap) Next() (*event.Event, error) {
	ev, err := t.src.Next()
	if err == nil {
		t.see(ev)
	}
	return ev, err
}

// SourceCounts are the wrapped source's.
func (t *tap) SourceCounts() results.SourceCounts {
	if c, ok := t.src.(results.SourceCounter); ok {
		return c.SourceCounts()
	}
	return results.SourceCounts{}
}
