package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// workModel is a query's server work per call in one run: a part that
// every call writes alike (records, index entries) and full-page images,
// whose number per call depends on when the last checkpoint was.
type workModel struct {
	calls      int64
	recBytes   float64 // WAL bytes per call besides full-page images
	fpi        float64 // full-page images per call
	dirtied    float64 // blocks dirtied per call
	sigmaFPI   float64 // run-to-run noise of fpi and dirtied, log scale
	checkpoint float64 // chance that a checkpoint in the run adds 30% FPIs
	sigmaRec   float64 // run-to-run noise of recBytes, log scale
	// otherWAL and otherDirtied are what the run's other queries write
	// and dirty, per call of this one (3% noise): what shares are of.
	// 0: the pgbench-like run of hotUpdate, 7 kB and 0.92 blocks.
	otherWAL, otherDirtied float64
	// firstDirtied is added to the blocks dirtied per call of a side's
	// first run (hint bits set by the first reads after a load);
	// firstBoth: on both sides, else on the baseline's only.
	firstDirtied float64
	firstBoth    bool
}

// fpiBytes is what a full-page image of an 8 kB page costs in WAL, about
// (the hole in the page is left out).
const fpiBytes = 7000

func (m workModel) run(r *rand.Rand, scale float64) observe.Query {
	q, _ := m.runAt(r, scale, false)
	return q
}

// runAt is a run of the query and the run's totals; first: the side's
// first run.
func (m workModel) runAt(r *rand.Rand, scale float64, first bool) (observe.Query, observe.QueryStats) {
	f := m.fpi * math.Exp(m.sigmaFPI*r.NormFloat64())
	d := m.dirtied * math.Exp(m.sigmaFPI*r.NormFloat64())
	rec := m.recBytes * math.Exp(m.sigmaRec*r.NormFloat64())
	if r.Float64() < m.checkpoint {
		f *= 1.3
	}
	if first {
		d += m.firstDirtied
	}
	n := float64(m.calls)
	q := observe.Query{Fingerprint: "w", QueryStats: observe.QueryStats{Calls: m.calls,
		WALBytes: int64(n * scale * (rec + f*fpiBytes)), WALFPI: int64(n * scale * f), SharedBlksDirtied: int64(n * scale * d)}}
	ow, od := m.otherWAL, m.otherDirtied
	if ow == 0 && od == 0 {
		ow, od = 7000, 0.92
	}
	noise := math.Exp(0.03 * r.NormFloat64())
	tot := observe.QueryStats{WALBytes: q.WALBytes + int64(n*ow*noise), SharedBlksDirtied: q.SharedBlksDirtied + int64(n*od*noise)}
	return q, tot
}

// withEvidence adds server-side evidence holding qs to a run.
func withEvidence(t testing.TB, r *Run, qs ...observe.Query) *Run {
	t.Helper()
	var tot observe.QueryStats
	for _, q := range qs {
		tot.Calls += q.Calls
		tot.WALBytes += q.WALBytes
		tot.SharedBlksDirtied += q.SharedBlksDirtied
		tot.TotalExecMS += q.TotalExecMS
		tot.TotalPlanMS += q.TotalPlanMS
	}
	ev := observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: qs, Totals: tot}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	r.Evidence = b
	return r
}

// The measured HOT update of pgbench_accounts (fillfactor 90, 100 tps,
// fresh copies checkpointed before each round, as the template reset
// does): 6.9 kB WAL and 0.92 FPI a call, as many blocks dirtied, the
// rounds within 0.2% of each other. The model's noise is ten times that,
// and one run in ten has a checkpoint of its own.
var hotUpdate = workModel{calls: 1500, recBytes: 300, fpi: 0.92, dirtied: 0.92, sigmaFPI: 0.03, checkpoint: 0.1}

// noisyFPI is a stress model: resets without a checkpoint, so that the
// full-page images per call vary by 25% run to run, and half the runs
// have a checkpoint in them.
var noisyFPI = workModel{calls: 300, recBytes: 200, fpi: 0.5, dirtied: 0.6, sigmaFPI: 0.25, checkpoint: 0.5}

// workTrial judges one query over runs a side whose work is scaled by
// shift in the candidate; latency is alike on both sides.
func workTrial(r *rand.Rand, m workModel, runs int, shift float64) QueryDiff {
	c := comparer{o: Options{}.withDefaults()}
	side := func(scale float64, hints bool) workRows {
		var w workRows
		for i := range runs {
			q, tot := m.runAt(r, scale, hints && i == 0)
			w.runs = append(w.runs, map[string]*observe.Query{"w": &q})
			w.totals = append(w.totals, tot)
		}
		return w
	}
	d := QueryDiff{Fingerprint: "w", Status: StatusUnchanged}
	c.work(&d, side(1, true), side(shift, m.firstBoth), runs >= 3)
	return d
}

// checkWorkLabel: a label never contradicts its figures.
func checkWorkLabel(t *testing.T, d *QueryDiff, o Options) {
	t.Helper()
	w := d.Work
	if w != nil && w.Below != "" {
		e := w.Of(w.Below)
		bad := d.Status == StatusMoreWork || w.More != "" || !w.Judged || !listed(e)
		switch w.BelowWhy {
		case ReasonLessWork:
			bad = bad || e.Change != ChangeLess || e.Ratio >= 1 || e.Delta >= 0 || e.High >= 1
		case ReasonUnderWorkEffectFloor, ReasonUnderWorkSizeFloors:
			bad = bad || e.Change != ChangeMore || e.Ratio <= 1 || e.Delta <= 0 || e.Low <= 1 || moreWork(e, map[Metric]float64{MetricWALBytes: o.MinWALBytes, MetricDirtied: o.MinDirtied}[w.Below])
		default:
			bad = true
		}
		if bad {
			t.Errorf("listed below the floors (%s, %s) with %s, %+v", w.Below, w.BelowWhy, d.Status, e)
		}
	}
	if d.Status != StatusMoreWork {
		return
	}
	e := w.Of(w.More)
	floor := map[Metric]float64{MetricWALBytes: o.MinWALBytes, MetricDirtied: o.MinDirtied}[w.More]
	if e == nil || !w.Judged || e.Ratio <= 1 || e.Low <= 1 || e.Change != ChangeMore || !e.Beyond || e.Ratio < e.Floor || e.Ratio < 1+o.WorkMinEffect ||
		e.Delta <= 0 || e.Delta < floor && e.ShareLow < DefaultMinWorkShare || e.ShareLow > e.AddedShare || e.ShareHigh < e.AddedShare {
		t.Errorf("more work on %q with %+v", w.More, e)
	}
	if w.More == MetricWALBytes && w.AddedWALBytes <= 0 {
		t.Errorf("more WAL, but %.0f bytes added", w.AddedWALBytes)
	}
}

// The one-row update of pgbench's tellers, HOT (issue 35): 78 B of WAL a
// call, rounds within 0.2% of each other, in a TPC-B-like run whose
// other statements write 7 kB a call; the index on tbalance took it to
// 219 B (2.8x), +141 B a call: 2% of the run's WAL.
var tellersUpdate = workModel{calls: 1500, recBytes: 78, fpi: 0.0005, dirtied: 0.005, sigmaFPI: 0.05, sigmaRec: 0.002, checkpoint: 0.1}

// tellersNoisy: the same with 5% run-to-run noise in its records and
// 30% in its rare full-page images and blocks dirtied.
var tellersNoisy = workModel{calls: 1500, recBytes: 78, fpi: 0.0005, dirtied: 0.005, sigmaFPI: 0.3, sigmaRec: 0.05, checkpoint: 0.5}

// hintBits: a read-only SELECT (no WAL) that dirties a block in ten
// calls setting hint bits, and, in the first run after a load, most of
// what it reads (firstDirtied) on the baseline only (rounds without a
// reset: only the very first round sees the fresh load) or on both.
var hintBits = workModel{calls: 3000, recBytes: 0, dirtied: 0.1, sigmaFPI: 0.2, firstDirtied: 2, otherWAL: 7000, otherDirtied: 1}

// A/A: the same work on both sides gives no work regression in 1000
// trials of three runs a side; a real change is found. The shares
// (go test -v -run TestWorkFalsePositivesAndPower ./internal/compare)
// are in docs/noise.md: work regressions ("more") and changes listed
// below the floors ("listed").
func TestWorkFalsePositivesAndPower(t *testing.T) {
	o := Options{}.withDefaults()
	r := rand.New(rand.NewPCG(20, 1))
	const trials = 1000
	for _, tc := range []struct {
		name     string
		m        workModel
		shift    float64
		minShare float64 // of trials that must be work regressions
		maxShare float64
		maxList  float64 // of trials listed below the floors, at most
		minList  float64 // at least (a real change under a floor)
	}{
		{"A/A", hotUpdate, 1, 0, 0, 0.02, 0},
		// At most the interval's one-sided level (alpha/2 = 5%).
		{"A/A noisy FPI", noisyFPI, 1, 0, 0.05, 0.10, 0},
		{"A/A small", workModel{calls: 1500, recBytes: 80, fpi: 0.001, dirtied: 0.01, sigmaFPI: 0.5, checkpoint: 0.2}, 1, 0, 0.01, 0.10, 0},
		{"A/A tellers", tellersUpdate, 1, 0, 0, 0.01, 0},
		{"A/A tellers noisy", tellersNoisy, 1, 0, 0.05, 0.10, 0},
		{"A/A hint bits, baseline's first run", hintBits, 1, 0, 0, 0.05, 0},
		{"A/A hint bits, both first runs", workModel{calls: 3000, dirtied: 0.1, sigmaFPI: 0.2, firstDirtied: 2, firstBoth: true, otherWAL: 7000, otherDirtied: 1},
			1, 0, 0, 0.05, 0},
		// 1.03x with hint bits: neither a work regression nor listed.
		{"1.03x hint bits", workModel{calls: 3000, dirtied: 0.1, sigmaFPI: 0.2, firstDirtied: 2, firstBoth: true, otherWAL: 7000, otherDirtied: 1},
			1.03, 0, 0, 0, 0},
		// Its blocks dirtied (0.005 a call, 5% noise) may read 1.1x: listed,
		// with its interval, in 1.3% of trials; never a regression.
		{"1.03x tellers", tellersUpdate, 1.03, 0, 0, 0.02, 0},
		{"2x", hotUpdate, 2, 0.99, 1, 0.01, 0},
		{"2x noisy FPI", noisyFPI, 2, 0.75, 1, 0.25, 0},
		// The case: 2.8x of a hot query's 78 B a call.
		{"2.8x tellers", tellersUpdate, 2.8, 0.99, 1, 0.01, 0},
		{"2.8x tellers noisy", tellersNoisy, 2.8, 0.90, 1, 0.10, 0},
		// The same change on a query that is a small share of its
		// run: below the floors, listed with its ratio.
		{"2.8x tellers, 0.1% of the run", workModel{calls: 1500, recBytes: 78, fpi: 0.0005, dirtied: 0.005, sigmaFPI: 0.05, sigmaRec: 0.002,
			otherWAL: 140_000, otherDirtied: 20}, 2.8, 0, 0, 1, 0.99},
		// A real change under the relative floor: called one only
		// when a checkpoint in the candidate's runs pushes its
		// measured ratio past 1.5.
		{"1.2x", hotUpdate, 1.2, 0, 0.02, 1, 0},
		// Under the stress model its blocks dirtied (+0.12 a call, but
		// 20% of the run's) read past 1.5x in 14.3% of trials.
		{"1.2x noisy FPI", noisyFPI, 1.2, 0, 0.16, 1, 0},
		{"1.2x tellers", tellersUpdate, 1.2, 0, 0, 1, 0.99},
		// 2x of a query that writes little, in a run that writes much
		// more: under the floors, listed.
		{"2x small", workModel{calls: 1500, recBytes: 80, fpi: 0.001, dirtied: 0.01, sigmaFPI: 0.05, otherWAL: 100_000, otherDirtied: 10}, 2, 0, 0, 1, 0.99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			more, list := 0, 0
			for range trials {
				d := workTrial(r, tc.m, 3, tc.shift)
				checkWorkLabel(t, &d, o)
				if d.Status == StatusMoreWork {
					more++
				}
				if d.Work.Below != "" {
					list++
				}
			}
			share, lshare := float64(more)/trials, float64(list)/trials
			t.Logf("%s: %d of %d trials (%.1f%%) are work regressions, %d (%.1f%%) listed below the floors", tc.name, more, trials, 100*share, list, 100*lshare)
			if share < tc.minShare || share > tc.maxShare {
				t.Errorf("%.3f of trials are work regressions, want %.2f-%.2f", share, tc.minShare, tc.maxShare)
			}
			if lshare > tc.maxList || lshare < tc.minList {
				t.Errorf("%.3f of trials listed below the floors, want %.2f-%.2f", lshare, tc.minList, tc.maxList)
			}
		})
	}
}

// With one run a side the work is shown, never judged: no noise is
// measured.
func TestWorkOneRunNotJudged(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	d := workTrial(r, hotUpdate, 1, 3)
	if d.Work == nil || d.Work.Judged || d.Status != StatusUnchanged || d.Work.WALBytes.Ratio < 2 {
		t.Errorf("one run a side: %s, work %+v", d.Status, d.Work)
	}
}

// Through Runs: an update that writes 2.5x the WAL while its latency
// stays is a work regression, ranked, counted in the verdict and named
// worst; the other queries are not; a latency regression that also
// writes more keeps its status, with its work as evidence.
func TestRunsMoreWork(t *testing.T) {
	means := map[string]float64{"upd": 300, "sel": 200, "slow": 1000}
	base := sideRuns(t, "A", 1, 3, 0.03, means, nil, nil)
	cand := sideRuns(t, "B", 2, 3, 0.03, means, map[string]float64{"slow": 2}, nil)
	r := rand.New(rand.NewPCG(9, 9))
	sel := workModel{calls: 2000, recBytes: 0, sigmaFPI: 0.05}
	for i, run := range append(base, cand...) {
		scale := 1.0
		if i >= len(base) {
			scale = 2.5
		}
		u, s, sl := hotUpdate.run(r, scale), sel.run(r, 1), hotUpdate.run(r, scale)
		u.Fingerprint, s.Fingerprint, sl.Fingerprint = "upd", "sel", "slow"
		withEvidence(t, run, u, s, sl)
	}
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{}.withDefaults()
	for i := range rep.Queries {
		q := &rep.Queries[i]
		checkLabel(t, q.Fingerprint, q)
		checkWorkLabel(t, q, o)
	}
	if sw := rep.ServerWork; sw == nil || !sw.Compared || sw.MinEffect != DefaultWorkMinEffect {
		t.Errorf("server work %+v", sw)
	}
	upd := rep.Query("upd")
	if upd.Status != StatusMoreWork || upd.Work.More != MetricWALBytes || upd.Work.WALBytes.Low <= 1 || upd.Work.WALBytes.Interval != IntervalRuns {
		t.Errorf("upd: %s %+v", upd.Status, upd.Work)
	}
	if s := rep.Query("sel"); s.Status == StatusMoreWork || s.Work == nil {
		t.Errorf("sel: %s %+v", s.Status, s.Work)
	}
	slow := rep.Query("slow")
	if slow.Status != StatusRegressed || slow.Work == nil || slow.Work.More != MetricWALBytes {
		t.Errorf("slow: %s %+v", slow.Status, slow.Work)
	}
	if fmt.Sprint(rep.MoreWork) != "[upd]" || rep.Verdict.MoreWork != 1 || rep.Verdict.Regressions != 1 || rep.Verdict.Status != VerdictRegressions {
		t.Errorf("more work %v, verdict %+v", rep.MoreWork, rep.Verdict)
	}
	if rep.Queries[0].Fingerprint != "slow" || rep.Queries[1].Fingerprint != "upd" {
		t.Errorf("order: %s, %s", rep.Queries[0].Fingerprint, rep.Queries[1].Fingerprint)
	}
}

// Runs without pg_stat_statements figures: work is not compared, and
// the report says why; without any evidence, nothing changes unless
// the caller expected it.
func TestRunsWorkNotCompared(t *testing.T) {
	means := map[string]float64{"a": 300}
	base := sideRuns(t, "A", 1, 3, 0.03, means, nil, nil)
	cand := sideRuns(t, "B", 2, 3, 0.03, means, nil, nil)
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ServerWork != nil || hasWarning(rep, WarnWorkNotCompared) || rep.MoreWork != nil || rep.Query("a").Work != nil {
		t.Errorf("no evidence: server work %+v", rep.ServerWork)
	}
	rep, err = Runs(base, cand, Options{ExpectWork: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ServerWork == nil || rep.ServerWork.Compared || len(rep.ServerWork.Missing) != 6 || !hasWarning(rep, WarnWorkNotCompared) {
		t.Errorf("expected, no evidence: server work %+v", rep.ServerWork)
	}
	// One candidate run's target has no pg_stat_statements.
	r := rand.New(rand.NewPCG(1, 1))
	for _, run := range append(base, cand[:2]...) {
		q := hotUpdate.run(r, 1)
		q.Fingerprint = "a"
		withEvidence(t, run, q)
	}
	ev := observe.Evidence{Version: observe.Version, Capabilities: observe.Capabilities{PGSS: observe.ExtensionState{Status: observe.ExtUnavailable}}}
	cand[2].Evidence, _ = json.Marshal(ev)
	rep, err = Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sw := rep.ServerWork; sw == nil || sw.Compared || len(sw.Missing) != 1 || sw.Missing[0].Run != cand[2].Name() || rep.Query("a").Work != nil {
		t.Errorf("one run without pg_stat_statements: %+v", sw)
	}
	if !hasWarning(rep, WarnWorkNotCompared) {
		t.Errorf("no warning: %+v", rep.Warnings)
	}
}
