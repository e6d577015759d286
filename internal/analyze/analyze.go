package analyze

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// Source yields events, then io.EOF. A *logread.Reader is one.
type Source interface {
	Next() (*event.Event, error)
}

// Named is a Source that knows its file name, listed in Result.Files.
type Named interface {
	Name() string
}

// LineCounter is a Source that accounts for the lines it read. Analyze
// asks once the Source is exhausted (or the analysis stopped), from the
// goroutine that called Next.
type LineCounter interface {
	LineCounts() LineCounts
}

// LineCounts account for every physical line of the logs: each was parsed
// or skipped for a reason, so Total = Parsed + the sum of Skipped.
type LineCounts struct {
	Total   int64            `json:"total"`
	Parsed  int64            `json:"parsed"`
	Skipped map[string]int64 `json:"skipped"`
}

// SkippedTotal is the sum of Skipped.
func (c LineCounts) SkippedTotal() int64 {
	var n int64
	for _, v := range c.Skipped {
		n += v
	}
	return n
}

func (c *LineCounts) add(o LineCounts) {
	c.Total += o.Total
	c.Parsed += o.Parsed
	for k, v := range o.Skipped {
		// The parts of a split log may move a count from one part to
		// another; a reason that sums to nothing is not listed.
		if c.Skipped[k] += v; c.Skipped[k] == 0 {
			delete(c.Skipped, k)
		}
	}
}

// Options configure Analyze.
type Options struct {
	// Jobs is the number of workers that fingerprint and aggregate;
	// less than 1 means 1. Reading is always one goroutine.
	Jobs int
	// Cache is the fingerprint cache, shared by the workers; nil means a
	// new one of the default size. Passing one lets a caller reuse it.
	Cache *fingerprint.Cache
	// Hist includes each query's latency histogram in Result.Queries,
	// for merging results later.
	Hist bool
	// BatchSize is the number of events handed to a worker at a time;
	// 0 means 1000, which makes channel costs negligible.
	BatchSize int
}

// StatementCounts count executions, after splitting strings that hold
// several statements: Total is the sum of the calls of every query.
type StatementCounts struct {
	Total  int64 `json:"total"`
	Failed int64 `json:"failed"`
	// Unparsed statements did not parse (they are among Failed unless the
	// log missed the error) and have a fallback fingerprint.
	Unparsed int64 `json:"unparsed"`
	// Empty counts query strings with no statement at all (only
	// comments or whitespace); they are not calls.
	Empty int64 `json:"empty"`
}

// Result is the analysis of a workload. Its JSON form is the contract of
// `pgrehearse analyze --json`.
type Result struct {
	Kind string `json:"kind"` // always "analysis"
	// LatencySource says where durations come from: always "server_log"
	// here, the server's own timing, which a report compares only with
	// other server-side figures.
	LatencySource string `json:"latency_source"`
	// Partial marks a result of an analysis that stopped early
	// (interrupted, or a read error): it covers only what was read.
	Partial bool `json:"partial,omitempty"`

	Lines      LineCounts      `json:"lines"`
	Statements StatementCounts `json:"statements"`
	// Events counts events by kind ("connect", "execute", ...), including
	// those that are not calls.
	Events           map[string]int64 `json:"events"`
	Sessions         int64            `json:"sessions"`
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate"`
	Files            []string         `json:"files"`
	FirstTime        string           `json:"first_time,omitempty"`
	LastTime         string           `json:"last_time,omitempty"`
	Queries          []querystats.Row `json:"queries"`
	// Timeline is the activity over time: statements, errors and p95
	// per bucket.
	Timeline *timeline.JSON `json:"timeline,omitempty"`

	// Set holds the per-query figures behind Queries, for callers that
	// merge or compare them.
	Set *querystats.Set `json:"-"`
	// FirstUS and LastUS are FirstTime and LastTime in µs since the
	// epoch; both 0 without any event.
	FirstUS, LastUS int64 `json:"-"`
}

// UnknownSQLState is the ErrorsBySQLState key of errors logged without a
// SQLSTATE (a stderr log whose prefix lacks %e).
const UnknownSQLState = "unknown"

// Analyze reads every event of src, in order, and summarizes them.
//
// When ctx is cancelled, Analyze stops reading and returns what it has
// so far, with Partial set and a nil error: an interrupted analysis is
// still worth printing. A read error also stops it; Analyze then returns
// the partial result and the error, naming the source.
func Analyze(ctx context.Context, src []Source, opts Options) (*Result, error) {
	jobs := max(opts.Jobs, 1)
	batchSize := opts.BatchSize
	if batchSize <= 0 {
		batchSize = 1000
	}
	cache := opts.Cache
	if cache == nil {
		cache = fingerprint.NewCache(0)
	}

	batches := make(chan []*event.Event, jobs)
	// Batches come back for reuse so that steady reading allocates none.
	free := make(chan []*event.Event, 2*jobs+1)
	parts := make([]*partial, jobs)
	var wg sync.WaitGroup
	for i := range parts {
		p := newPartial(cache)
		parts[i] = p
		wg.Go(func() {
			for b := range batches {
				for _, ev := range b {
					p.add(ev)
				}
				clear(b) // the batch is reused: let its events go
				select {
				case free <- b[:0]:
				default:
				}
			}
		})
	}

	res := &Result{
		Kind:             "analysis",
		LatencySource:    "server_log",
		Lines:            LineCounts{Skipped: map[string]int64{}},
		Events:           map[string]int64{},
		ErrorsBySQLState: map[string]int64{},
		Files:            []string{},
	}
	readErr := read(ctx, src, jobs, batchSize, batches, free, res)
	close(batches)
	wg.Wait()

	if readErr != nil || ctx.Err() != nil {
		res.Partial = true
	}
	total := parts[0]
	for _, p := range parts[1:] {
		total.merge(p)
	}
	if err := total.fill(res, opts.Hist); err != nil {
		return nil, err
	}
	return res, readErr
}

// read deals the events of every source out in batches, reading up to
// jobs sources at once (the parts of a split log are meant for that), and
// collects the sources' names and line counts.
func read(ctx context.Context, src []Source, jobs, batchSize int, batches chan<- []*event.Event, free chan []*event.Event, res *Result) error {
	newBatch := func() []*event.Event {
		select {
		case b := <-free:
			return b
		default:
			return make([]*event.Event, 0, batchSize)
		}
	}
	// Sending never waits on ctx: the workers drain batches until they
	// are closed, and a batch already read belongs in a partial result.
	send := func(b []*event.Event) { batches <- b }

	names := make([]string, len(src))
	errs := make([]error, len(src))
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range min(jobs, len(src)) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(src) || ctx.Err() != nil {
					return
				}
				s := src[i]
				name := fmt.Sprintf("source %d", i+1)
				if n, ok := s.(Named); ok {
					name = n.Name()
				}
				names[i] = name
				err := readOne(ctx, s, newBatch, send)
				if lc, ok := s.(LineCounter); ok {
					mu.Lock()
					res.Lines.add(lc.LineCounts())
					mu.Unlock()
				}
				if err != nil && !strings.HasPrefix(err.Error(), name) {
					// Readers that name their file in errors need no
					// second name.
					err = fmt.Errorf("%s: %w", name, err)
				}
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for i, name := range names {
		// The parts of one split file share its name.
		if name != "" && (len(res.Files) == 0 || res.Files[len(res.Files)-1] != name) {
			res.Files = append(res.Files, name)
		}
		if errs[i] != nil {
			return errs[i]
		}
	}
	return nil
}

func readOne(ctx context.Context, s Source, newBatch func() []*event.Event, send func([]*event.Event)) error {
	b := newBatch()
	for {
		ev, err := s.Next()
		if err != nil {
			if len(b) > 0 {
				send(b)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		b = append(b, ev)
		if len(b) == cap(b) {
			send(b)
			if ctx.Err() != nil {
				return nil
			}
			b = newBatch()
		}
	}
}
