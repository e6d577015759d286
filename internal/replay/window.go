package replay

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// window is a paced replay's schedule window (results.Window), which
// ends at the due time of the input's last event, known from
// Options.WindowLast or read by the dispatcher: the round trips issued
// after it are recorded a second time, apart, so that the window's
// figures are the whole replay's less those. Nearly nothing is recorded twice when the target
// keeps up, which is when nothing is issued after the window.
type window struct {
	last int64 // the input's last event, log time; 0 until known
	// read: last came from the dispatcher's reading, not the options.
	read bool
	// endUS is the window's end, wall µs since the epoch, once the
	// clock started; 0 before.
	endUS atomic.Int64
	end   chan time.Time // receives the end once (WindowEnd)
	// afterStatements counts the statements issued after the end.
	afterStatements atomic.Int64
	// lateUS is, when the dispatcher read the last event only after the
	// window's end, by how much (µs): there is no window then, and the
	// result says why (windowResult).
	lateUS atomic.Int64
}

// newWindow is the window of a replay of opts; nil when there is none:
// unpaced, or a dry run. Its last event is Options.WindowLast, or else
// the dispatcher's last once it has read the whole input (read).
func newWindow(opts Options) *window {
	if !opts.Schedule().Paced() || opts.DryRun {
		return nil
	}
	return &window{last: max(opts.WindowLast, 0), end: make(chan time.Time, 1)}
}

// started notes the window's end once the clock c has started and the
// last event is known. On the dispatcher, as read.
func (w *window) started(c *clock) {
	if w == nil || w.last == 0 || !c.paced() || !c.started() || w.endUS.Load() != 0 {
		return
	}
	end := c.due(w.last)
	if now := time.Now(); w.read && !end.After(now) {
		// Known only after its end (the reader waited at the budget
		// behind sessions that fell behind): the round trips issued
		// between the end and now were not set apart, so there is no
		// window to measure.
		w.lateUS.Store(max(now.Sub(end).Microseconds(), 1))
		return
	}
	w.endUS.Store(end.UnixMicro())
	w.end <- end
}

// readLast notes the input's last event, read by the dispatcher, when
// Options.WindowLast did not give it.
func (w *window) readLast(last int64, c *clock) {
	if w == nil || w.last != 0 || last <= 0 {
		return
	}
	w.last, w.read = last, true
	if c != nil {
		w.started(c)
	}
}

// after reports whether a statement issued at wall µs at was issued
// after the window's end.
func (w *window) after(at int64) bool {
	if w == nil {
		return false
	}
	e := w.endUS.Load()
	return e > 0 && at > e
}

// WindowEnd returns a channel that receives, once, the wall time at
// which the replay's schedule window ends, as soon as the clock has
// started and the input's last event is known; nothing comes when the
// dispatcher read it only after that time, and the channel is nil at
// speed 0 and in a dry run.
func (r *Replayer) WindowEnd() <-chan time.Time {
	if r.win == nil {
		return nil
	}
	return r.win.end
}

// recordAfter records a round trip issued after the window on its
// shard's set apart; with the shard's lock held.
func (s *shard) recordAfter(fp, query string, at, us int64, failed bool) {
	if s.after == nil {
		s.after = querystats.NewSet()
	}
	s.after.Slot(fp, query).Record(query, at, us, failed)
}

// windowResult sets res.Window when the replay, which ended at ended,
// issued statements after its window: res.Queries (the round trips)
// less those issued after the window, by query.
func (r *Replayer) windowResult(res *results.Result, ended time.Time) error {
	w := r.win
	c := r.clk.Load()
	if w == nil || c == nil || res.Partial {
		return nil
	}
	end := w.endUS.Load()
	if late := w.lateUS.Load(); end == 0 && late > 0 {
		res.Warnings = append(res.Warnings, lateWindowWarning(time.Duration(late)*time.Microsecond))
		return nil
	}
	if end == 0 || ended.UnixMicro() <= end || w.afterStatements.Load() == 0 {
		// Within it, or only finishing its last statements after
		// it: the window is the whole replay.
		return nil
	}
	set := querystats.NewSet()
	for _, sh := range r.shards {
		sh.mu.Lock()
		if sh.after != nil {
			set.Merge(sh.after)
		}
		sh.mu.Unlock()
	}
	rows, err := set.Rows(querystats.RowOptions{})
	if err != nil {
		return err
	}
	late := make(map[string]querystats.Row, len(rows))
	for _, q := range rows {
		late[q.Fingerprint] = q
	}
	after := w.afterStatements.Load()
	win := &results.Window{Seconds: c.offset(w.last).Seconds(), AfterSeconds: float64(ended.UnixMicro()-end) / 1e6,
		End: results.Time(end), Statements: max(res.Statements.Total-after, 0), AfterStatements: after,
		Queries: []results.WindowQuery{}}
	for _, q := range res.Queries {
		t := late[q.Fingerprint]
		wq := results.WindowQuery{Fingerprint: q.Fingerprint, Calls: q.Calls - t.Calls, TimedCalls: q.TimedCalls - t.TimedCalls,
			TotalMS: max(q.TotalMS-t.TotalMS, 0)}
		win.Calls += wq.Calls
		win.AfterCalls += t.Calls
		if wq.Calls == 0 {
			continue
		}
		if wq.TimedCalls > 0 {
			wq.MeanMS = wq.TotalMS / float64(wq.TimedCalls)
		}
		win.Queries = append(win.Queries, wq)
	}
	slices.SortFunc(win.Queries, func(a, b results.WindowQuery) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	res.Window = win
	return nil
}

// lateWindowWarning says why a replay that fell behind its schedule has
// no window: it read the input's last event late after the window's end.
// Its means and its rate are then the whole run's, sessions finishing
// one by one after the schedule included, which a comparison cannot
// tell apart.
func lateWindowWarning(late time.Duration) string {
	return fmt.Sprintf("no schedule window: the replay fell behind and read the input's last event %s after the schedule's end, "+
		"so its times per call and its rate are the whole run's, including the sessions that finished one by one after the schedule "+
		"with fewer neighbours; rehearse reads its log's end first and measures within the schedule", late.Round(100*time.Millisecond))
}
