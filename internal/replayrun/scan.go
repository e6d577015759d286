package replayrun

import (
	"context"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Scanned is what Scan found.
type Scanned struct {
	*replay.Scan
	// Span is the log time from the first event selected to the last:
	// a replay at speed s takes about Span/s.
	Span time.Duration
	// First is the log time of the first event selected, in µs since
	// the epoch (0 without events): where a caller cuts the log in
	// windows of time.
	First int64
	// Think is the time the sessions spent between their statements
	// inside explicit transaction blocks.
	Think results.ThinkTime
}

// Scan reads the logs of cfg whole, as Run would select and map them,
// without connecting, and returns what the replay would need of the
// target: the logins of its sessions (the maps applied; databases the log
// creates itself left out), its destructive statements and its span. A
// rehearsal reads it to know which databases to copy before each round,
// and how long a round will take.
func Scan(ctx context.Context, cfg Config) (*Scanned, error) {
	if err := cfg.Replay.Validate(); err != nil {
		return nil, &OptionsError{Err: err}
	}
	if cfg.Replay.Cache == nil {
		cfg.Replay.Cache = fingerprint.NewCache(0)
	}
	set, err := openInput(&cfg)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	r, err := replay.New(cfg.Replay)
	if err != nil {
		return nil, &OptionsError{Err: err}
	}
	var first, last int64
	think := &thinkTimer{cache: cfg.Replay.Cache, open: map[string]*openBlock{}}
	srcs := set.Sources()
	timed := make([]event.Source, len(srcs))
	for i, s := range srcs {
		timed[i] = &spanSource{Source: s, first: &first, last: &last, think: think}
	}
	sc, err := r.Scan(ctx, timed, 0)
	if err != nil {
		return nil, err
	}
	out := &Scanned{Scan: sc, First: first, Think: think.t}
	if last > first {
		out.Span = time.Duration(last-first) * time.Microsecond
	}
	return out, nil
}

// Last is the log time of the last event selected, in µs since the
// epoch; 0 without events or without s: a replay's schedule window
// (replay.Options.WindowLast), known before it starts.
func (s *Scanned) Last() int64 {
	if s == nil || s.First == 0 {
		return 0
	}
	return s.First + s.Span.Microseconds()
}

// spanSource notes the first and last event times of what it passes on,
// and its transactions' think time.
type spanSource struct {
	event.Source
	first, last *int64
	think       *thinkTimer
}

func (s *spanSource) Next() (*event.Event, error) {
	ev, err := s.Source.Next()
	if ev != nil && ev.Time > 0 {
		if *s.first == 0 || ev.Time < *s.first {
			*s.first = ev.Time
		}
		*s.last = max(*s.last, ev.Time)
		s.think.add(ev)
	}
	return ev, err
}

// thinkTimer adds up the explicit transaction blocks of the events it
// is given, session by session (results.ThinkTime). A session's sources
// are read one at a time (Scan's sources are never read at once).
type thinkTimer struct {
	cache *fingerprint.Cache
	open  map[string]*openBlock
	t     results.ThinkTime
}

// openBlock is a session's transaction block under way: open since
// start, its gaps so far, and the end of its last statement (µs); a
// session without one has lastEnd only.
type openBlock struct {
	open                bool
	start, gap, lastEnd int64
}

func (tt *thinkTimer) add(ev *event.Event) {
	switch ev.Kind {
	case event.Disconnect:
		delete(tt.open, ev.Session)
		return
	case event.Statement, event.Execute:
	default:
		return
	}
	b := tt.open[ev.Session]
	if b == nil {
		b = &openBlock{}
		tt.open[ev.Session] = b
	}
	end := ev.Time + max(ev.Duration, 0)
	if b.open && b.lastEnd > 0 && ev.Time > b.lastEnd {
		b.gap += ev.Time - b.lastEnd
	}
	b.lastEnd = end
	for _, it := range tt.cache.Get(ev.Query) {
		switch it.Class(ev.Query).Block() {
		case fingerprint.BlockOpens:
			if b.open {
				// COMMIT AND CHAIN: one block ends, the next opens.
				tt.close(b, end)
			}
			b.open, b.start, b.gap = true, ev.Time, 0
		case fingerprint.BlockEnds:
			if b.open {
				tt.close(b, end)
			}
		}
	}
}

// close ends b's block at end.
func (tt *thinkTimer) close(b *openBlock, end int64) {
	if end > b.start {
		tt.t.Blocks++
		tt.t.BlockSeconds += float64(end-b.start) / 1e6
		tt.t.GapSeconds += float64(b.gap) / 1e6
	}
	b.open, b.gap = false, 0
}

// Databases are the databases the logins of the scan use, sorted, once
// each.
func (s *Scanned) Databases() []string {
	var dbs []string
	for _, l := range s.Logins {
		if !slices.Contains(dbs, l.Database) {
			dbs = append(dbs, l.Database)
		}
	}
	slices.Sort(dbs)
	return dbs
}
