package compare

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Server work per call: what pg_stat_statements counted of each query in
// each run (the run's server-side evidence), divided by its calls there.
// The counters are nearly deterministic (the same statements write the
// same WAL and dirty the same blocks), so a change that latency hides
// under its floors (an update that is no longer HOT: +0.1 ms a call,
// but every index written) shows in them.

// Work metrics, per call.
const (
	// MetricWALBytes is WAL bytes per call.
	MetricWALBytes Metric = "wal_bytes"
	// MetricWALFPI is WAL full-page images per call: shown, never
	// judged (how many a call writes depends on when the last
	// checkpoint was).
	MetricWALFPI Metric = "wal_fpi"
	// MetricDirtied is shared blocks dirtied per call.
	MetricDirtied Metric = "shared_blks_dirtied"
)

// WorkMetrics are the work metrics, in the order reports show them.
var WorkMetrics = []Metric{MetricWALBytes, MetricWALFPI, MetricDirtied}

// Defaults of the work floors (docs/noise.md has the data). Measured on
// pgbench's accounts update (fillfactor 90, 100 tps, rounds of 1,548
// calls on fresh copies checkpointed by the template reset): A/A rounds
// within 0.2% of each other per call; losing HOT (an index on abalance)
// took it from 6.85 to 11.47 kB WAL and from 0.92 to 1.53 blocks dirtied
// a call: 1.67x, +4.6 kB, +0.61 blocks.
const (
	// DefaultWorkMinEffect: a query writes more only when its WAL
	// bytes (or blocks dirtied) per call grew by half at least: below
	// the HOT loss measured, above what a checkpoint inside a round
	// adds to the full-page images of a run (modeled as +30%).
	DefaultWorkMinEffect = 0.5
	// DefaultMinWALBytes is the least growth of WAL bytes per call
	// that is a work regression: 1 kB, an eighth of a page; the
	// one-row updates of pgbench's tellers and branches write 76
	// bytes a call in all.
	DefaultMinWALBytes = 1024
	// DefaultMinDirtied is the least growth of shared blocks dirtied
	// per call that is a work regression (the HOT loss: +0.61).
	DefaultMinDirtied = 0.5
	// DefaultMinWorkShare: a change under the per-call floors is a
	// work regression still when what it adds (its growth per call
	// times the candidate's calls) is this share of the run's WAL (or
	// blocks dirtied) at least, as the baseline's runs wrote it in all
	// (pg_stat_statements' totals): the one-row update of pgbench's
	// tellers that loses HOT goes from 78 to 219 B a call, +141 B, far
	// under 1 kB, but 2% of a TPC-B-like run's WAL. Work is judged by
	// what it adds to the run, as latency by the time it adds.
	DefaultMinWorkShare = 0.01
	// MinListedWorkEffect: a work change under a floor is listed (as
	// latency's small changes are) when its ratio is beyond the
	// noise floor and this far from 1 at least: two servers differ by
	// a few per cent of WAL per call with certainty, which means
	// nothing.
	MinListedWorkEffect = 1.10
)

// workResolution are the smallest per-call figures told from 0, so that
// ratios stay finite.
var workResolution = map[Metric]float64{MetricWALBytes: 1, MetricWALFPI: 0.001, MetricDirtied: 0.001}

// Change of a work figure.
const (
	ChangeMore Change = "more" // the whole interval is above 1
	ChangeLess Change = "less" // the whole interval is below 1
)

// StatusMoreWork: latency did not regress, but the query writes more
// WAL (or dirties more blocks) per call beyond noise and the work floors:
// WAL is capacity (replication, archiving, checkpoints). It counts in
// the verdict as a regression kind.
const StatusMoreWork Status = "more_work"

// ReasonMeanFasterWritesMore: a work regression whose mean got faster
// beyond the floors.
const ReasonMeanFasterWritesMore Reason = "mean_faster_writes_more"

// Reasons a work change beyond noise is listed under the floors rather
// than called a work regression (QueryWork.BelowWhy).
const (
	// ReasonUnderWorkEffectFloor: more, but under the relative work
	// floor (WorkMinEffect) or the noise floor.
	ReasonUnderWorkEffectFloor Reason = "under_work_effect_floor"
	// ReasonUnderWorkSizeFloors: more beyond the relative floor, but
	// by less than the per-call floor and less than the share of the
	// run's WAL (or blocks dirtied) that makes a work regression.
	ReasonUnderWorkSizeFloors Reason = "under_work_size_floors"
	// ReasonLessWork: less work per call beyond noise: not a
	// regression.
	ReasonLessWork Reason = "less_work"
)

// WarnWorkNotCompared: Count runs, Run the first of them, had no
// pg_stat_statements figures (PGSS and Text say why), so server work was
// not compared.
const WarnWorkNotCompared WarningKind = "work_not_compared"

// WorkEffect is a work figure's change: the candidate's median per call
// over its runs divided by the baseline's, and its interval, as Effect.
type WorkEffect struct {
	Estimate
	// Baseline and Candidate are the medians per call; Delta the
	// candidate's less the baseline's.
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	Delta     float64 `json:"delta"`
	P         float64 `json:"p"`
	// AddedShare is what the change adds per run (Delta times the
	// candidate's calls) over the baseline's whole WAL (or blocks
	// dirtied) per run, the median of its runs' pg_stat_statements
	// totals; ShareLow and ShareHigh the same at the interval's ends.
	// 0 for full-page images, and without totals.
	AddedShare float64 `json:"added_share"`
	ShareLow   float64 `json:"added_share_low"`
	ShareHigh  float64 `json:"added_share_high"`
	// Material: the change is large enough to matter, by the per-call
	// floor or by its share reaching the share floor
	// (ServerWork.MinShare) over the whole interval (ShareLow for more
	// work).
	Material bool `json:"material"`
	// FromNone: the baseline's median per call is under what the
	// counter tells from 0 (FromNone) and the candidate's is not: a
	// change from nothing, which no ratio measures. Ratio, Low and
	// High are then over that resolution, what the judgement works
	// with; reports say "none -> 105 B a call", and the JSON writes
	// them 0 (MarshalJSON).
	FromNone bool `json:"from_none,omitempty"`
}

// FromNone reports whether baseline, a median per call of work metric
// m, is under what its counter tells from 0: 1 byte of WAL, a thousandth
// of a block or full-page image.
func FromNone(m Metric, baseline float64) bool {
	res, ok := workResolution[m]
	return ok && baseline < res
}

// MarshalJSON writes e with its ratio and interval 0 when it is a change
// from nothing (FromNone), as a latency ratio is 0 when its baseline is:
// a ratio over the counter's resolution (21 B over 1 B, "21x") would
// read as a measured factor.
func (e WorkEffect) MarshalJSON() ([]byte, error) {
	type plain WorkEffect
	p := plain(e)
	if p.FromNone {
		p.Ratio, p.Low, p.High = 0, 0, 0
	}
	return json.Marshal(p)
}

// WorkRun is one run's pg_stat_statements figures of a query.
type WorkRun struct {
	Calls    int64 `json:"calls"`
	WALBytes int64 `json:"wal_bytes"`
	WALFPI   int64 `json:"wal_fpi"`
	Dirtied  int64 `json:"shared_blks_dirtied"`
}

// QueryWork is a query's server work per call on both sides.
type QueryWork struct {
	// BaselineCalls and CandidateCalls are the medians of
	// pg_stat_statements' calls over the runs.
	BaselineCalls  int64      `json:"baseline_calls"`
	CandidateCalls int64      `json:"candidate_calls"`
	BaselineRuns   []WorkRun  `json:"baseline_runs"`
	CandidateRuns  []WorkRun  `json:"candidate_runs"`
	WALBytes       WorkEffect `json:"wal_bytes"`
	WALFPI         WorkEffect `json:"wal_fpi"`
	Dirtied        WorkEffect `json:"shared_blks_dirtied"`
	// Judged: every run has the query with MinCalls calls at least,
	// and the noise is measured.
	Judged bool `json:"judged"`
	// More is the metric that makes the query a work regression
	// (StatusMoreWork), or that a latency regression also writes more
	// of; empty otherwise.
	More Metric `json:"more,omitempty"`
	// AddedWALBytes is what the change of WAL bytes per call adds per
	// run at the candidate's calls.
	AddedWALBytes float64 `json:"added_wal_bytes"`
	// Below is the metric that changed beyond noise but under a floor
	// (the query is then in ServerWork.BelowFloors), BelowWhy which
	// floor; empty otherwise.
	Below    Metric `json:"below_floors,omitempty"`
	BelowWhy Reason `json:"below_floors_reason,omitempty"`
}

// Of returns the effect on work metric m; nil for another metric.
func (w *QueryWork) Of(m Metric) *WorkEffect {
	switch m {
	case MetricWALBytes:
		return &w.WALBytes
	case MetricWALFPI:
		return &w.WALFPI
	case MetricDirtied:
		return &w.Dirtied
	}
	return nil
}

// ServerWork says how server work was compared.
type ServerWork struct {
	// Compared: every run had pg_stat_statements figures.
	Compared bool `json:"compared"`
	// Missing are the runs without them, and why.
	Missing []WorkMissing `json:"missing,omitempty"`
	// The floors a work regression must reach.
	MinEffect   float64 `json:"min_effect"`
	MinWALBytes float64 `json:"min_wal_bytes_per_call"`
	MinDirtied  float64 `json:"min_dirtied_per_call"`
	// MinShare is the share of the run's WAL (or blocks dirtied) a
	// change under the per-call floors must add to be a work
	// regression (DefaultMinWorkShare).
	MinShare float64 `json:"min_share_of_run"`
	// BaselineWALPerRun and BaselineDirtiedPerRun are the medians over
	// the baseline's runs of all the WAL bytes and blocks dirtied
	// pg_stat_statements counted in a run: what shares are of.
	BaselineWALPerRun     float64 `json:"baseline_wal_bytes_per_run"`
	BaselineDirtiedPerRun float64 `json:"baseline_dirtied_per_run"`
	// BelowFloors are the queries whose WAL or blocks dirtied per call
	// changed beyond noise (and by MinListedWorkEffect) but under a
	// floor, or got less: not work regressions, by the share of the
	// run they add or save, most first.
	BelowFloors []string `json:"below_floors"`
	// HOT compares, per updated table, the share of its updates that
	// were HOT on each side (hot.go).
	HOT []TableHOT `json:"hot_updates,omitempty"`
}

// WorkMissing is a run without pg_stat_statements figures: PGSS is the
// extension's state the observer found (observe.Capabilities.PGSS), or
// empty when the run has no server-side evidence at all (Reason then
// says why).
type WorkMissing struct {
	Run    string                  `json:"run"`
	PGSS   observe.ExtensionStatus `json:"pg_stat_statements,omitempty"`
	Reason string                  `json:"reason"`
}

// workRows are, per run, its pg_stat_statements figures by fingerprint;
// nil for a run without them, with why.
type workRows struct {
	runs []map[string]*observe.Query
	// windows are, per run, its figures within the replay's schedule
	// window by fingerprint (observe.Statements.Window); nil for a run
	// without one.
	windows []map[string]*observe.WindowQuery
	// totals are each run's pg_stat_statements totals, tables its
	// updated tables (nil when not read); by run, as runs.
	totals  []observe.QueryStats
	tables  [][]observe.TableUpdates
	missing []WorkMissing
	any     bool // some run carried evidence
}

func workOf(runs []*Run) workRows {
	var w workRows
	for _, r := range runs {
		ev, err := observe.Decode(r.Evidence)
		var m map[string]*observe.Query
		var win map[string]*observe.WindowQuery
		var tot observe.QueryStats
		var tables []observe.TableUpdates
		if err == nil && ev != nil {
			tables = ev.Tables
		}
		switch {
		case err != nil:
			w.any = true
			w.missing = append(w.missing, WorkMissing{Run: r.Name(), Reason: err.Error()})
		case ev == nil:
			w.missing = append(w.missing, WorkMissing{Run: r.Name()})
		case ev.Statements == nil:
			w.any = true
			w.missing = append(w.missing, WorkMissing{Run: r.Name(), PGSS: ev.Capabilities.PGSS.Status, Reason: ev.Capabilities.PGSS.Err})
		default:
			w.any = true
			m = map[string]*observe.Query{}
			for i := range ev.Statements.Queries {
				q := &ev.Statements.Queries[i]
				m[q.Fingerprint] = q
			}
			tot = ev.Statements.Totals
			win = windowOf(r, ev.Statements.Window)
		}
		w.runs = append(w.runs, m)
		w.windows = append(w.windows, win)
		w.totals = append(w.totals, tot)
		w.tables = append(w.tables, tables)
	}
	return w
}

// windowOf is a run's pg_stat_statements figures within its schedule
// window, by fingerprint: only where the replay measured its window too
// (results.Window: it ran past it), so that both levels measure the
// same part of the round; nil otherwise.
func windowOf(r *Run, sw *observe.StatementsWindow) map[string]*observe.WindowQuery {
	if sw == nil || r.Replay == nil || r.Window == nil {
		return nil
	}
	m := make(map[string]*observe.WindowQuery, len(sw.Queries))
	for i := range sw.Queries {
		m[sw.Queries[i].Fingerprint] = &sw.Queries[i]
	}
	return m
}

// serverWork decides whether work is compared; nil when no run carried
// evidence and none was expected (output stays as without the feature).
func (r *Report) serverWork(base, cand []*Run, o Options) (b, c workRows, ok bool) {
	b, c = workOf(base), workOf(cand)
	if !b.any && !c.any && !o.ExpectWork {
		return b, c, false
	}
	sw := &ServerWork{MinEffect: o.WorkMinEffect, MinWALBytes: o.MinWALBytes, MinDirtied: o.MinDirtied, MinShare: DefaultMinWorkShare}
	sw.Missing = append(slices.Clone(b.missing), c.missing...)
	sw.Compared = len(sw.Missing) == 0
	sw.BaselineWALPerRun, sw.BaselineDirtiedPerRun = b.perRun(MetricWALBytes), b.perRun(MetricDirtied)
	r.ServerWork = sw
	// One warning per reason: Run the first run with it, Count how many.
	var ws []Warning
	for _, m := range sw.Missing {
		i := slices.IndexFunc(ws, func(w Warning) bool { return w.PGSS == m.PGSS && w.Text == m.Reason })
		if i < 0 {
			ws = append(ws, Warning{Kind: WarnWorkNotCompared, Run: m.Run, Text: m.Reason, PGSS: m.PGSS})
			i = len(ws) - 1
		}
		ws[i].Count++
	}
	r.Warnings = append(r.Warnings, ws...)
	if sw.Compared {
		r.compareHOT(b, c, r.Noise.Measured)
	}
	return b, c, sw.Compared
}

// workValues are the runs' per-call values of m, and the runs' figures.
func workValues(rows []map[string]*observe.Query, fp string) (runs []WorkRun, all bool) {
	all = true
	for _, m := range rows {
		q := m[fp]
		if q == nil || q.Calls == 0 {
			all = false
			runs = append(runs, WorkRun{})
			continue
		}
		runs = append(runs, WorkRun{Calls: q.Calls, WALBytes: q.WALBytes, WALFPI: q.WALFPI, Dirtied: q.SharedBlksDirtied})
	}
	return runs, all
}

func perCall(runs []WorkRun, m Metric) []float64 {
	var out []float64
	for _, r := range runs {
		if r.Calls == 0 {
			continue
		}
		v := map[Metric]int64{MetricWALBytes: r.WALBytes, MetricWALFPI: r.WALFPI, MetricDirtied: r.Dirtied}[m]
		out = append(out, float64(v)/float64(r.Calls))
	}
	return out
}

// perRun is the median over the runs of all of metric m that
// pg_stat_statements counted in a run (its totals); 0 without.
func (w workRows) perRun(m Metric) float64 {
	var xs []float64
	for i, t := range w.totals {
		if w.runs[i] == nil {
			continue
		}
		switch m {
		case MetricWALBytes:
			xs = append(xs, float64(t.WALBytes))
		case MetricDirtied:
			xs = append(xs, float64(t.SharedBlksDirtied))
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// timePerRun is the median over the runs of the time (execution and
// planning) pg_stat_statements counted in a run (its totals); 0 without.
func (w workRows) timePerRun() float64 {
	var xs []float64
	for i, t := range w.totals {
		if w.runs[i] != nil && t.TotalExecMS+t.TotalPlanMS > 0 {
			xs = append(xs, t.TotalExecMS+t.TotalPlanMS)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// runTimeMS is the median over runs of the time their queries took in
// all (their durations' totals); 0 without.
func runTimeMS(runs []*Run) float64 {
	var xs []float64
	for _, r := range runs {
		total := 0.0
		for i := range r.Queries {
			total += r.Queries[i].TotalMS
		}
		if total > 0 {
			xs = append(xs, total)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// work fills d.Work from both sides' pg_stat_statements figures and
// judges it: the same statistic, level and noise floor as latency's
// (stats.Effect over the runs, the control's runs giving the floor).
// A change beyond noise and the relative floor is a work regression
// when it is material: by the per-call floor, or by what it adds to the
// run as a share of the baseline's whole WAL (or blocks dirtied) per
// run. A change beyond noise that is not one is listed below the
// floors (Below).
func (c *comparer) work(d *QueryDiff, b, k workRows, measured bool) {
	bRuns, bAll := workValues(b.runs, d.Fingerprint)
	kRuns, kAll := workValues(k.runs, d.Fingerprint)
	if len(perCall(bRuns, MetricWALBytes)) == 0 || len(perCall(kRuns, MetricWALBytes)) == 0 {
		return
	}
	w := &QueryWork{BaselineRuns: bRuns, CandidateRuns: kRuns}
	calls := func(rs []WorkRun) (med int64, least int64) {
		xs := make([]int64, len(rs))
		least = math.MaxInt64
		for i, r := range rs {
			xs[i] = r.Calls
			least = min(least, r.Calls)
		}
		return medianInt(xs), least
	}
	var bMin, kMin int64
	w.BaselineCalls, bMin = calls(bRuns)
	w.CandidateCalls, kMin = calls(kRuns)
	perCallFloor := map[Metric]float64{MetricWALBytes: c.o.MinWALBytes, MetricDirtied: c.o.MinDirtied}
	for _, m := range WorkMetrics {
		bv, kv := perCall(bRuns, m), perCall(kRuns, m)
		r := stats.Effect(bv, kv, stats.Options{Alpha: c.o.Alpha, MinEffect: c.o.WorkMinEffect, Min: workResolution[m]})
		e := WorkEffect{Estimate: estimateOf(r, ChangeMore, ChangeLess), P: r.P, Baseline: stats.Median(bv), Candidate: stats.Median(kv)}
		e.Delta = e.Candidate - e.Baseline
		e.FromNone = FromNone(m, e.Baseline) && !FromNone(m, e.Candidate)
		if m != MetricWALFPI {
			if total := b.perRun(m); total > 0 {
				n := float64(w.CandidateCalls) / total
				base := math.Max(e.Baseline, workResolution[m])
				e.AddedShare = e.Delta * n
				e.ShareLow = base * (e.Low - 1) * n
				e.ShareHigh = base * (math.Min(e.High, 1e6) - 1) * n
				if e.ShareLow > e.AddedShare {
					e.ShareLow = e.AddedShare
				}
				if e.ShareHigh < e.AddedShare {
					e.ShareHigh = e.AddedShare
				}
			}
			// By share, at the end of the interval nearer to 1: a
			// change whose interval reaches under the share floor is
			// not told to matter.
			nearer := math.Min(math.Abs(e.ShareLow), math.Abs(e.ShareHigh))
			if e.ShareLow < 0 && e.ShareHigh > 0 {
				nearer = 0
			}
			e.Material = math.Abs(e.Delta) >= perCallFloor[m] || nearer >= DefaultMinWorkShare
		}
		*w.Of(m) = e
	}
	w.AddedWALBytes = w.WALBytes.Delta * float64(w.CandidateCalls)
	w.Judged = measured && bAll && kAll && min(bMin, kMin) >= c.o.MinCalls
	d.Work = w
	if !w.Judged {
		return
	}
	switch {
	case moreWork(&w.WALBytes, c.o.MinWALBytes):
		w.More = MetricWALBytes
	case moreWork(&w.Dirtied, c.o.MinDirtied):
		w.More = MetricDirtied
	default:
		w.Below, w.BelowWhy = belowFloors(w)
		return
	}
	switch d.Status {
	case StatusImproved:
		d.Reasons = append(d.Reasons, ReasonMeanFasterWritesMore)
		fallthrough
	case StatusUnchanged, StatusSmallChange:
		d.Status = StatusMoreWork
	}
}

// moreWork says whether e is more work beyond noise and the relative
// work floor, and material: by floor, the least growth per call, or by
// its share of the run (Material).
func moreWork(e *WorkEffect, floor float64) bool {
	return e.Change == ChangeMore && e.Beyond && e.Ratio > 1 && e.Delta > 0 && (e.Delta >= floor || e.Material)
}

// listed says whether a work change is told from noise well enough to
// be listed under the floors: its interval excludes 1, and its ratio is
// beyond the noise floor and MinListedWorkEffect.
func listed(e *WorkEffect) bool {
	f := math.Max(e.NoiseFloor, MinListedWorkEffect)
	switch e.Change {
	case ChangeMore:
		return e.Ratio >= f && e.Delta > 0
	case ChangeLess:
		return e.Ratio <= 1/f && e.Delta < 0
	}
	return false
}

// belowFloors is the metric of a judged query that is no work
// regression which changed beyond noise (listed), and which floor kept
// it from being one: WAL first, then blocks dirtied.
func belowFloors(w *QueryWork) (Metric, Reason) {
	for _, m := range []Metric{MetricWALBytes, MetricDirtied} {
		e := w.Of(m)
		if !listed(e) {
			continue
		}
		switch {
		case e.Change == ChangeLess:
			return m, ReasonLessWork
		case !e.Beyond:
			return m, ReasonUnderWorkEffectFloor
		default:
			return m, ReasonUnderWorkSizeFloors
		}
	}
	return "", ""
}

// ByWorkAdded orders queries that write more (Work.More set) by what they
// add per run: the share of the run's WAL or blocks dirtied that the
// figure they write more of adds (WorkEffect.AddedShare: the change per
// call times the candidate's calls, over the baseline's run), then the
// WAL bytes added per run; never by a ratio, which from a near-zero
// baseline (0.00 -> 0.83 blocks dirtied a call, 238x, +216 B of WAL per
// run) ranks a few bytes above the query the change is about (issue
// 57).
func ByWorkAdded(a, b *QueryDiff) int {
	share := func(q *QueryDiff) float64 {
		if q.Work == nil {
			return 0
		}
		if e := q.Work.Of(q.Work.More); e != nil {
			return e.AddedShare
		}
		return 0
	}
	wal := func(q *QueryDiff) float64 {
		if q.Work == nil {
			return 0
		}
		return q.Work.AddedWALBytes
	}
	return cmp.Or(cmp.Compare(share(b), share(a)), cmp.Compare(wal(b), wal(a)), cmp.Compare(a.Fingerprint, b.Fingerprint))
}

// rankWork fills MoreWork: the work regressions by what they add per
// run (ByWorkAdded); and the server work's BelowFloors, by the share
// of the run they add or save.
func (r *Report) rankWork() {
	var qs, below []*QueryDiff
	for i := range r.Queries {
		q := &r.Queries[i]
		if q.Status == StatusMoreWork {
			qs = append(qs, q)
		} else if q.Work != nil && q.Work.Below != "" {
			below = append(below, q)
		}
	}
	slices.SortStableFunc(qs, ByWorkAdded)
	r.MoreWork = []string{}
	for _, q := range qs {
		r.MoreWork = append(r.MoreWork, q.Fingerprint)
	}
	slices.SortStableFunc(below, func(a, b *QueryDiff) int {
		ea, eb := a.Work.Of(a.Work.Below), b.Work.Of(b.Work.Below)
		return cmp.Or(cmp.Compare(math.Abs(eb.AddedShare), math.Abs(ea.AddedShare)),
			cmp.Compare(math.Abs(math.Log(eb.Ratio)), math.Abs(math.Log(ea.Ratio))), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	if r.ServerWork != nil {
		r.ServerWork.BelowFloors = []string{}
		for _, q := range below {
			r.ServerWork.BelowFloors = append(r.ServerWork.BelowFloors, q.Fingerprint)
		}
	}
}
