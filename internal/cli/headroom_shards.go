package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/coord"
	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// replayShards replays a step (or one slice of a fold) split by session
// into --shards shards at once, as "pgrehearse replay --shard K/N
// --coord-dsn" splits a replay across processes: each shard replays its
// sessions, they start together at the coordination database's
// rendezvous, and a statement waits there for the commits it depends on
// in other shards (with --sync). Their results are merged as
// "pgrehearse merge" merges shards, into the step's.
//
// The shards run in this process, each a replay of its own (its own
// dispatcher and sessions), so that no one dispatcher bounds the load;
// their CPU is this one process's.
func (h *headroomRun) replayShards(ctx context.Context, st headroom.StepRun, cfg replayrun.Config, start time.Time, sel source.Selection) (*results.Result, error) {
	n := h.f.shards
	run := fmt.Sprintf("%s-step%d-%s", h.runID, st.Seq, st.Side)
	if sel.Start != 0 {
		run += fmt.Sprintf("-slice%d", sel.Start)
	}
	type done struct {
		k   int
		res *results.Result
		err error
	}
	ch := make(chan done, n)
	for k := range n {
		c := cfg
		c.Selection.Shard = source.Shard{K: k, Of: n}
		c.Shards = &replayrun.Shards{Run: run, Coord: coord.Config{DSN: h.f.coordDSN}}
		if k > 0 {
			// One observer, one pre-flight and one progress line: the
			// first shard's.
			c.Observe = nil
			c.SkipPreflight = true
			c.OnPreflight, c.OnStart, c.OnEnd = nil, nil, nil
		}
		go func() {
			res, err := h.runReplay(ctx, st, c, start)
			ch <- done{k, res, err}
		}()
	}
	parts := make([]*results.Result, 0, n)
	var errs []error
	for range n {
		d := <-ch
		if d.err != nil {
			errs = append(errs, fmt.Errorf("shard %d of %d: %w", d.k, n, d.err))
		}
		if d.res != nil {
			parts = append(parts, d.res)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var cpu float64
	for _, p := range parts {
		// Each shard's CPU is the one process's, over the same window.
		if p.Replay != nil {
			cpu = max(cpu, p.Replay.ClientCPUSeconds)
		}
	}
	m, err := results.MergeAll(parts...)
	if err != nil {
		return nil, fmt.Errorf("merge %d shards: %w", n, err)
	}
	if m.Replay != nil {
		m.Replay.ClientCPUSeconds = cpu
	}
	return m, nil
}
