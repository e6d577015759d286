package replayrun

import (
	"context"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/replay"
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
	srcs := set.Sources()
	timed := make([]event.Source, len(srcs))
	for i, s := range srcs {
		timed[i] = &spanSource{Source: s, first: &first, last: &last}
	}
	sc, err := r.Scan(ctx, timed, 0)
	if err != nil {
		return nil, err
	}
	out := &Scanned{Scan: sc, First: first}
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

// spanSource notes the first and last event times of what it passes on.
type spanSource struct {
	event.Source
	first, last *int64
}

func (s *spanSource) Next() (*event.Event, error) {
	ev, err := s.Source.Next()
	if ev != nil && ev.Time > 0 {
		if *s.first == 0 || ev.Time < *s.first {
			*s.first = ev.Time
		}
		*s.last = max(*s.last, ev.Time)
	}
	return ev, err
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
