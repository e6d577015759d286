package replayrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// Load is a load level of the workload, the load axis of a command that
// replays it at several (headroom's steps): K times the workload's own
// load, made By speed (the same sessions at K times their pace) or by
// fold (K consecutive slices of the log, each 1/K of it, overlaid on one
// window, each at the log's pace), at Speed times the log's pace at
// K = 1, each replay split by session into Shards replays at once (0 or
// 1: none).
type Load struct {
	By     results.LoadBy
	K      float64
	Speed  float64
	Shards int
}

// Part is the load level a result's part records: nil at the
// workload's own (K = 1).
func (l Load) Part() *results.Load {
	if l.K == 1 {
		return nil
	}
	return &results.Load{By: l.By, K: l.K}
}

// Folds reports whether the level is made of slices of the log: by fold
// above 1x.
func (l Load) Folds() bool { return l.By == results.LoadByFold && l.K > 1 }

// Slices is the number of slices of a fold: K, whole.
func (l Load) Slices() int { return int(math.Round(l.K)) }

// Duration is how long a log that lasts span (in log time) takes to
// replay at the level: span over Speed × K (a log folded k times runs
// in 1/k of its span at its pace).
func (l Load) Duration(span time.Duration) time.Duration {
	return time.Duration(float64(span) / (l.Speed * l.K))
}

// Fold is a round's input folded (source.Fold): K slices of Width µs
// from First, overlaid.
type Fold struct {
	K     int
	First int64
	Width int64
}

// Rounds are the replays that make the level out of round r, of a log
// whose first event is at first (µs since the epoch) and which lasts
// span in log time: by speed, r at Speed × K; by fold above 1x, r of
// the folded log (Round.Fold) at Speed or, split in shards, one replay
// per slice (its Window) at once, each at Speed, whose results the
// caller merges (MergeSlices): a shard's process replays the log as
// given, so each slice is a sharded replay of its own window. Each
// round's part is r's with the level's load.
func (l Load) Rounds(r Round, first int64, span time.Duration) []Round {
	if r.Part != nil {
		p := *r.Part
		p.Load = l.Part()
		r.Part = &p
	}
	if !l.Folds() {
		r.Speed = l.Speed * l.K
		return []Round{r}
	}
	k := l.Slices()
	width := int64(span/time.Microsecond)/int64(k) + 1
	r.Speed = l.Speed
	if l.Shards <= 1 {
		r.Fold = &Fold{K: k, First: first, Width: width}
		return []Round{r}
	}
	out := make([]Round, k)
	for i := range k {
		s := r
		s.Window = source.Selection{Start: first + int64(i)*width, End: first + int64(i+1)*width}
		out[i] = s
	}
	return out
}

// MergeSlices merges the results of a fold's slices replayed apart
// (Rounds split in shards) into the level's, with part. Each slice's
// result names the same input whole; merged, they are one replay's.
// Their client CPU is the one process's, measured once per slice over
// the same window: the merged result's is the largest.
func (l Load) MergeSlices(parts []*results.Result, part *results.Part) (*results.Result, error) {
	var cpu float64
	for _, p := range parts {
		p.Input, p.Part = nil, nil
		if p.Replay != nil {
			cpu = max(cpu, p.Replay.ClientCPUSeconds)
		}
	}
	m, err := results.MergeAll(parts...)
	if err != nil {
		return nil, fmt.Errorf("fold %d slices: %w", l.Slices(), err)
	}
	m.Part = part
	if m.Replay != nil {
		m.Replay.ClientCPUSeconds = cpu
		m.Replay.Speed = l.Speed
	}
	return m, nil
}

// ReplaySlices replays the rounds of a fold split in shards (Rounds
// gives them, one per slice), all at once, each with replay, and merges
// their results into the level's (MergeSlices), with the first round's
// part. Any slice's error is the level's.
func (l Load) ReplaySlices(ctx context.Context, rs []Round, replay func(context.Context, Round) (*results.Result, error)) (*results.Result, error) {
	type done struct {
		res *results.Result
		err error
	}
	ch := make(chan done, len(rs))
	for _, r := range rs {
		go func() {
			res, err := replay(ctx, r)
			ch <- done{res, err}
		}()
	}
	var parts []*results.Result
	var errs []error
	for range rs {
		d := <-ch
		if d.err != nil {
			errs = append(errs, d.err)
		}
		if d.res != nil {
			parts = append(parts, d.res)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	part := *rs[0].Part
	return l.MergeSlices(parts, &part)
}
