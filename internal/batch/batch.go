// Package batch merges a session's consecutive single-row INSERTs into one
// table into multi-row INSERTs, as the event stream of a replay goes by,
// so that a replay can measure what batching the application's inserts
// would save (pgrehearse replay --batch-inserts N).
//
// A session's single-row INSERT ... VALUES (constants, bind parameters,
// DEFAULT; no RETURNING, ON CONFLICT or WITH) are merged while they have
// the same table and column list and no other statement of that session
// comes between them: a batch never crosses a BEGIN, a COMMIT, a SAVEPOINT
// or a query, so it stays within one transaction or one run of
// autocommit statements. What fingerprint.ParseInsertRow cannot merge is
// left as it was and counted by reason. The events keep their order: the
// events of other sessions read while a batch is open wait behind it, so
// a batch is due when its first row was.
package batch

import (
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Why an INSERT that could be merged by its text was not (beyond
// fingerprint.NotBatchable's reasons).
const (
	NotBatchedFailed     fingerprint.NotBatchable = "failed in the original"
	NotBatchedParams     fingerprint.NotBatchable = "parameters not logged in full"
	NotBatchedCapture    fingerprint.NotBatchable = "extended protocol from a capture"
	NotBatchedParamLimit fingerprint.NotBatchable = "too many parameters for one statement"
)

// MaxQueued bounds the events held behind an open batch: past it, the
// batch is sent with the rows it has, so that a session that inserts a
// few rows and goes idle does not hold the replay's input back.
const MaxQueued = 10_000

// maxParams is the protocol's limit on a statement's parameters.
const maxParams = 65535

// Source is an event.Source whose single-row INSERTs are merged in batches
// of up to Max rows. It passes on its source's name and counts.
type Source struct {
	src event.Source
	max int

	queue []slot
	head  int
	open  map[string]*pending
	done  error

	rows   map[string]parsed
	counts results.BatchInserts
}

type slot struct {
	ev *event.Event
	b  *pending
}

// pending is a batch: the rows and their events, in order.
type pending struct {
	rows   []*fingerprint.InsertRow
	events []*event.Event
	params int
	closed bool
}

type parsed struct {
	row *fingerprint.InsertRow
	not fingerprint.NotBatchable
}

// New wraps src; rows is the most rows in one INSERT (1: the INSERTs
// are counted, not merged).
func New(src event.Source, rows int) *Source {
	rows = max(rows, 1)
	return &Source{src: src, max: rows, open: map[string]*pending{}, rows: map[string]parsed{},
		counts: results.BatchInserts{Max: rows}}
}

// Counts are what the source merged so far.
func (s *Source) Counts() results.BatchInserts { return s.counts }

// Name is the wrapped source's name.
func (s *Source) Name() string {
	if n, ok := s.src.(event.Named); ok {
		return n.Name()
	}
	return ""
}

// SourceCounts are the wrapped source's.
func (s *Source) SourceCounts() results.SourceCounts {
	if c, ok := s.src.(results.SourceCounter); ok {
		return c.SourceCounts()
	}
	return results.SourceCounts{}
}

// Next is the next event, a merged INSERT for a batch.
func (s *Source) Next() (*event.Event, error) {
	for {
		if s.head < len(s.queue) {
			sl := s.queue[s.head]
			if sl.b == nil || sl.b.closed {
				s.queue[s.head] = slot{}
				s.head++
				if s.head == len(s.queue) {
					s.queue, s.head = s.queue[:0], 0
				}
				if sl.b != nil {
					return s.merged(sl.b), nil
				}
				return sl.ev, nil
			}
			if len(s.queue)-s.head > MaxQueued {
				s.close(sl.b, sl.b.events[0].Session)
				continue
			}
		}
		if s.done != nil {
			if s.head == len(s.queue) {
				return nil, s.done
			}
			for session, p := range s.open {
				s.close(p, session)
			}
			continue
		}
		ev, err := s.src.Next()
		if err != nil {
			s.done = err
			continue
		}
		s.take(ev)
	}
}

// take queues ev: into the session's open batch, as a new batch, or as
// itself.
func (s *Source) take(ev *event.Event) {
	p := s.open[ev.Session]
	if ev.Kind == event.Prepare {
		// A Parse is no execution: the replay prepares at the first
		// execution, and a batch goes on past it.
		s.queue = append(s.queue, slot{ev: ev})
		return
	}
	row := s.row(ev)
	if row == nil {
		if p != nil {
			s.close(p, ev.Session)
		}
		s.queue = append(s.queue, slot{ev: ev})
		return
	}
	s.counts.Statements++
	n := len(ev.Params)
	if p != nil && p.rows[0].Key == row.Key && ev.Kind == p.events[0].Kind && p.params+n <= maxParams {
		p.rows, p.events, p.params = append(p.rows, row), append(p.events, ev), p.params+n
		if len(p.rows) >= s.max {
			s.close(p, ev.Session)
		}
		return
	}
	if p != nil {
		s.close(p, ev.Session)
	}
	p = &pending{rows: []*fingerprint.InsertRow{row}, events: []*event.Event{ev}, params: n}
	s.queue = append(s.queue, slot{b: p})
	if s.max > 1 {
		s.open[ev.Session] = p
	} else {
		p.closed = true
	}
}

func (s *Source) close(p *pending, session string) {
	p.closed = true
	if s.open[session] == p {
		delete(s.open, session)
	}
}

// row is ev's INSERT row when it may be merged; nil for another
// statement, or an INSERT that cannot be (counted).
func (s *Source) row(ev *event.Event) *fingerprint.InsertRow {
	if ev.Kind != event.Statement && ev.Kind != event.Execute || !looksLikeInsert(ev.Query) {
		return nil
	}
	p, ok := s.rows[ev.Query]
	if !ok {
		p.row, p.not = fingerprint.ParseInsertRow(ev.Query)
		if len(s.rows) >= 4096 {
			clear(s.rows)
		}
		s.rows[ev.Query] = p
	}
	not := p.not
	switch {
	case p.row == nil:
	case ev.Failed:
		not = NotBatchedFailed
	case ev.Kind == event.Execute && ev.Wire() != nil:
		not = NotBatchedCapture
	case ev.Kind == event.Execute && (ev.ParamState != event.ParamsComplete || int(p.row.MaxParam) > len(ev.Params)):
		not = NotBatchedParams
	case len(ev.Params) > maxParams:
		not = NotBatchedParamLimit
	case ev.Kind == event.Statement && len(ev.Params) > 0:
		not = NotBatchedParams
	default:
		return p.row
	}
	if not != "" {
		if s.counts.NotBatched == nil {
			s.counts.NotBatched = map[string]int64{}
		}
		s.counts.NotBatched[string(not)]++
	}
	return nil
}

// merged is the event that sends p's rows: the first row's event with
// the merged text, the rows' parameters one after the other and their
// original durations added.
func (s *Source) merged(p *pending) *event.Event {
	s.counts.Batches++
	s.counts.Rows += int64(len(p.rows))
	if s.counts.Tables == nil {
		s.counts.Tables = map[string]int64{}
	}
	s.counts.Tables[p.rows[0].Table] += int64(len(p.rows))
	if len(p.rows) == 1 {
		return p.events[0]
	}
	counts := make([]int, len(p.events))
	for i, ev := range p.events {
		counts[i] = len(ev.Params)
	}
	text, err := fingerprint.MergeInserts(p.rows, counts)
	if err != nil {
		// take only batches rows of one Key with their parameters:
		// a failure here is a bug of this package.
		panic("batch: merging rows that ParseInsertRow accepted: " + err.Error())
	}
	m := *p.events[0]
	m.Query, m.Name = text, ""
	if p.params > 0 {
		m.Params = make([]event.Param, 0, p.params)
	}
	for i, ev := range p.events {
		m.Params = append(m.Params, ev.Params...)
		if i > 0 {
			switch {
			case m.Duration == event.NoDuration || ev.Duration == event.NoDuration:
				m.Duration = event.NoDuration
			default:
				m.Duration += ev.Duration
			}
		}
	}
	return &m
}

// looksLikeInsert reports whether text may be an INSERT, before it is
// parsed: the other statements are most of a workload.
func looksLikeInsert(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n(")
	if strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "--") || strings.HasPrefix(t, "WITH") || strings.HasPrefix(t, "with") {
		// Comments and WITH: the parser says.
		return true
	}
	return len(t) >= 6 && strings.EqualFold(t[:6], "insert")
}

// Sum adds the counts of srcs.
func Sum(srcs []*Source) *results.BatchInserts {
	if len(srcs) == 0 {
		return nil
	}
	total := &results.BatchInserts{Max: srcs[0].max}
	for _, s := range srcs {
		c := s.Counts()
		total.Statements += c.Statements
		total.Batches += c.Batches
		total.Rows += c.Rows
		for k, v := range c.NotBatched {
			if total.NotBatched == nil {
				total.NotBatched = map[string]int64{}
			}
			total.NotBatched[k] += v
		}
		for k, v := range c.Tables {
			if total.Tables == nil {
				total.Tables = map[string]int64{}
			}
			total.Tables[k] += v
		}
	}
	return total
}
