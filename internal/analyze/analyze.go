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
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Options configure Analyze.
type Options struct {
	// Jobs is the number of workers that fingerprint and aggregate;
	// less than 1 means 1. Reading is always one goroutine.
	Jobs int
	// Cache is the fingerprint cache, shared by the workers; nil means a
	// new one of the default size. Passing one lets a caller reuse it.
	Cache *fingerprint.Cache
	// BatchSize is the number of events handed to a worker at a time;
	// 0 means 1000, which makes channel costs negligible.
	BatchSize int
	// KeepSamples keeps, per fingerprint, its slowest and median
	// executions with their parameter values (Result.Samples), and the
	// values in the plans the log holds. Values are personal data:
	// without it the result holds none.
	KeepSamples bool
}

// Analyze reads every event of src, in order, and summarizes them. The
// events are the workload: what a time window, the filters or a shard
// leave out is the sources' to select (package source), and their counts
// (results.SourceCounter: lines, filtered, other shards) go into the
// result as they are.
//
// When ctx is cancelled, Analyze stops reading and returns what it has
// so far, with Partial set and a nil error: an interrupted analysis is
// still worth printing. A read error also stops it; Analyze then returns
// the partial result and the error, naming the source.
func Analyze(ctx context.Context, src []event.Source, opts Options) (*results.Result, error) {
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
		p := newPartial(cache, opts.KeepSamples)
		parts[i] = p
		wg.Go(func() {
			for b := range batches {
				for _, ev := range b {
					p.add(ev)
				}
				// Back to the readers with its events, which they recycle
				// (readOne); a batch that finds no room is dropped.
				select {
				case free <- b:
				default:
				}
			}
		})
	}

	res := results.New(results.KindAnalysis, results.LatencyServerLog)
	res.Lines = &results.LineCounts{Skipped: map[results.LineSkip]int64{}}
	res.Events = map[event.Kind]int64{}
	counts, readErr := read(ctx, src, jobs, batchSize, batches, free, res)
	close(batches)
	wg.Wait()

	if readErr != nil || ctx.Err() != nil {
		res.Partial = true
	}
	total := parts[0]
	for _, p := range parts[1:] {
		total.merge(p)
	}
	if err := total.fill(res); err != nil {
		return nil, err
	}
	counts.Fill(res)
	if counts.Lines == nil && counts.Messages != nil {
		// Only captures were read: no line to account for, and no log
		// line (a lock wait's) that a finding could count.
		res.Lines = nil
	}
	return res, readErr
}

// read deals the events of every source out in batches, reading up to
// jobs sources at once (the parts of a split log are meant for that), and
// collects the sources' names and counts.
func read(ctx context.Context, src []event.Source, jobs, batchSize int, batches chan<- []*event.Event, free chan []*event.Event, res *results.Result) (results.SourceCounts, error) {
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
	var counts results.SourceCounts
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
				if n, ok := s.(event.Named); ok {
					name = n.Name()
				}
				names[i] = name
				err := readOne(ctx, s, newBatch, send)
				if sc, ok := s.(results.SourceCounter); ok {
					mu.Lock()
					counts.Add(sc.SourceCounts())
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
			return counts, errs[i]
		}
	}
	return counts, nil
}

// readOne reads s to its end in batches. take returns an empty batch or
// one back from the workers, whose analyzed events are given to s to fill
// again (event.Recycler), or let go.
func readOne(ctx context.Context, s event.Source, take func() []*event.Event, send func([]*event.Event)) error {
	rc, _ := s.(event.Recycler)
	newBatch := func() []*event.Event {
		b := take()
		if len(b) > 0 {
			if rc != nil {
				rc.Recycle(b...)
			}
			clear(b)
		}
		return b[:0]
	}
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
