package judge

import (
	"cmp"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
)

// The verdict of a fix tried in rounds of its own (Fix) is made here by
// the comparison's own rules: what the fix is for, what it costs other
// queries, what it changed, each claim at the family's level where the
// comparison reaches it (FamilyLevel).

// fixRegressed reports whether q is a regression of any kind the verdict
// counts: slower, in its tail, or writing more.
func fixRegressed(q *compare.QueryDiff) bool {
	return q != nil && (q.Status.Regression() || q.Status == compare.StatusMoreWork)
}

// fixVerdict is fix's verdict from the comparisons of the control with the
// candidate without it (before) and with it (with), and of the candidate
// without it with the candidate with it (delta).
func fixVerdict(fix fixes.Fix, before, with, delta *compare.Report) fixes.Outcome {
	o := fixes.Outcome{Fix: fix, Queries: []fixes.Query{}, Costs: []fixes.Cost{}, Writes: []fixes.Write{}}
	var sumBefore, sumWith float64
	counts := map[fixes.Status]int{}
	for _, fp := range fix.Fingerprints {
		b, w := before.Query(fp), with.Query(fp)
		if b == nil {
			continue
		}
		fq := fixes.Query{Fingerprint: fp, Query: b.Query, Metric: cmp.Or(b.Regressed, compare.MetricMean), AddedMSBefore: b.ImpactMS}
		if b.Effects != nil {
			fq.Before = b.Effects.Of(fq.Metric)
		}
		if w != nil {
			fq.WithStatus = w.Status
			fq.AddedMSWith = max(0, w.ImpactMS)
			if w.Effects != nil {
				fq.With = w.Effects.Of(fq.Metric)
			}
		}
		if b.Status == compare.StatusMoreWork && b.Work != nil && b.Work.More != "" {
			fq.WorkMetric, fq.WorkBefore = b.Work.More, b.Work.Of(b.Work.More)
			if w != nil && w.Work != nil {
				fq.WorkWith = w.Work.Of(fq.WorkMetric)
			}
		}
		if d := delta.Query(fp); d != nil && d.Effects != nil {
			fq.Delta = d.Effects.Of(fq.Metric)
		}
		if fq.AddedMSBefore > 0 {
			fq.RecoveredPct = 100 * (fq.AddedMSBefore - fq.AddedMSWith) / fq.AddedMSBefore
		}
		switch {
		case w == nil:
			fq.Status = fixes.NoEffect
		case !fixRegressed(w):
			fq.Status, fq.RecoveredPct, fq.AddedMSWith = fixes.Verified, 100, 0
		case fq.WorkMetric != "":
			// Less work than without, beyond noise, but still more
			// than the control's.
			if fq.WorkBefore != nil && fq.WorkWith != nil && fq.WorkWith.High < fq.WorkBefore.Low {
				fq.Status = fixes.Partial
				if fq.WorkBefore.Delta > 0 {
					// The share of the work added per call taken back.
					fq.RecoveredPct = max(0, 100*(fq.WorkBefore.Delta-fq.WorkWith.Delta)/fq.WorkBefore.Delta)
				}
			} else {
				fq.Status = fixes.NoEffect
			}
		default:
			fq.Status = fixLatencyStatus(&fq, w)
		}
		counts[fq.Status]++
		sumBefore += fq.AddedMSBefore
		sumWith += fq.AddedMSWith
		o.Queries = append(o.Queries, fq)
	}
	switch {
	case len(o.Queries) == 0 && fix.JudgedByChanges():
		o.Status = fixes.Tried
	case len(o.Queries) == 0:
		o.Status = fixes.NoEffect
	case counts[fixes.Verified] == len(o.Queries):
		o.Status = fixes.Verified
	case counts[fixes.NoEffect] == len(o.Queries):
		o.Status = fixes.NoEffect
	default:
		o.Status = fixes.Partial
	}
	if sumBefore > 0 {
		o.RecoveredPct = max(0, 100*(sumBefore-sumWith)/sumBefore)
	} else if len(o.Queries) > 0 {
		// Work regressions that added no time: their shares of work
		// taken back, averaged.
		for _, fq := range o.Queries {
			o.RecoveredPct += fq.RecoveredPct / float64(len(o.Queries))
		}
	}
	o.Costs, o.WithinNoise = fixCosts(fix, before, with)
	if fix.JudgedByChanges() {
		o.Changes = fixChanges(fix, delta, with)
	}
	if fix.Relation != "" {
		for _, d := range delta.Queries {
			if !fix.WritesRelation(d.Query) {
				continue
			}
			fw := fixes.Write{Fingerprint: d.Fingerprint, Query: d.Query, Status: d.Status, Beyond: fixRegressed(&d)}
			if d.Effects != nil {
				e := d.Effects.Mean
				fw.Mean = &e
			}
			o.Writes = append(o.Writes, fw)
		}
	}
	return o
}

// fixCosts are the other queries that regressed against the control with
// fix (with) and not without it (before): a cost of the fix, or, for a
// query the fix does not touch that with cannot call regressed at the
// family's level (FamilyLevel), within noise.
func fixCosts(fix fixes.Fix, before, with *compare.Report) (out, withinNoise []fixes.Cost) {
	out = []fixes.Cost{}
	for _, w := range with.Queries {
		if !fixRegressed(&w) || slices.Contains(fix.Fingerprints, w.Fingerprint) || fixRegressed(before.Query(w.Fingerprint)) {
			continue
		}
		c := fixes.Cost{Fingerprint: w.Fingerprint, Query: w.Query, Status: w.Status, Metric: w.Regressed, Factor: w.Factor, AddedMS: w.ImpactMS,
			Elsewhere: fix.Elsewhere(w.Query)}
		if w.Effects != nil {
			c.Effect = w.Effects.Of(w.Regressed)
		}
		if c.Elsewhere && !FamilyLevel(with) {
			// The fix cannot have changed its plan, and the comparison
			// cannot tell its slowdown from the machine's between
			// rounds: context, not a cost.
			withinNoise = append(withinNoise, c)
			continue
		}
		out = append(out, c)
	}
	return out, withinNoise
}

// FamilyLevel reports whether comparison rep calls a regression only
// beyond the rounds' noise at the family's level, as the rehearsal's own
// comparison of three rounds a side does: runs enough a side for the
// rank interval (compare.Noise.Measured) and the calls' histograms, with
// which compare.Runs holds every slower claim to the rounds' noise
// pooled over its queries at one-sided stats.FamilyAlpha (the chance of
// any false regression among them at Alpha/2). Without them (one or two
// fix rounds, a result without histograms) a regression rests on the
// default noise floors, which a busy machine exceeds.
func FamilyLevel(rep *compare.Report) bool {
	if rep == nil || !rep.Noise.Measured {
		return false
	}
	return !slices.ContainsFunc(rep.Warnings, func(w compare.Warning) bool { return w.Kind == compare.WarnNoHistograms })
}

// fixLatencyStatus is the verdict on a query whose time regressed and that
// the comparison with the control still finds regressed (w) with the
// fix, in one figure or another. The direct comparison of the candidate
// without the fix against with it (fq.Delta) is the evidence of what the
// fix did to the figure that regressed: the two sides of the comparison
// with the control ran apart, and their intervals (fq.Before, fq.With)
// may both be wide.
//
//   - Verified: the figure that regressed (fq.Metric, the mean) is back
//     within the control's noise: the comparison flags the tail only
//     (the p95 of a handful of slow calls), and this one is not slower, as a
//     query it no longer flags at all is verified. The other figure
//     stays in fq.Remains, said beside the verdict, with the time it
//     still adds (fq.AddedMSWith).
//   - Partial: some of the time came back (fq.RecoveredPct > 0), and the
//     fix made the figure faster beyond noise than without it, or its
//     interval against the control lies below the one without the fix.
//   - NoEffect: neither; never next to a share recovered above 0 that a
//     faster-beyond-noise delta carries.
func fixLatencyStatus(fq *fixes.Query, w *compare.QueryDiff) fixes.Status {
	faster := fq.Delta != nil && fq.Delta.Change == compare.ChangeFaster && fq.Delta.Beyond
	if w.Status == compare.StatusTailRegressed && w.Regressed != fq.Metric && fq.With != nil && fq.With.Change != compare.ChangeSlower {
		fq.Remains = w.Regressed
		if w.Effects != nil {
			fq.RemainsWith = w.Effects.Of(w.Regressed)
		}
		return fixes.Verified
	}
	below := fq.Before != nil && fq.With != nil && fq.With.High < fq.Before.Low
	if fq.RecoveredPct > 0 && (faster || below) {
		return fixes.Partial
	}
	return fixes.NoEffect
}

// fixChanges are the queries of delta (the candidate without a fix against
// with it) faster or slower beyond noise, the slower first, each by its
// time added or taken per run, largest first; with is the fix's
// comparison with the control.
func fixChanges(fix fixes.Fix, delta, with *compare.Report) []fixes.Change {
	out := []fixes.Change{}
	for _, d := range delta.Queries {
		c := fixes.Change{Fingerprint: d.Fingerprint, Query: d.Query, Status: d.Status, Metric: compare.MetricMean}
		switch {
		case d.Status == compare.StatusMoreWork && d.Work != nil && d.Work.More != "":
			c.Direction, c.Metric, c.Work = fixes.Slower, d.Work.More, d.Work.Of(d.Work.More)
		case fixRegressed(&d):
			c.Direction, c.Metric = fixes.Slower, cmp.Or(d.Regressed, compare.MetricMean)
		case d.Status == compare.StatusImproved && (!FamilyLevel(delta) || d.Effects != nil && d.Effects.Mean.FasterCarried()):
			// Faster at the family's level, as a slower query is
			// (compare.Effect.Faster), where the comparison reaches it.
			c.Direction = fixes.Faster
		default:
			continue
		}
		if c.Direction == fixes.Slower && fix.Elsewhere(d.Query) && !FamilyLevel(delta) {
			// As a cost (costs): a query the fix does not touch,
			// slower by a comparison that cannot tell that from the
			// machine's noise between rounds, is not its change.
			continue
		}
		if d.Effects != nil && c.Work == nil {
			c.Effect = d.Effects.Of(c.Metric)
		}
		if w := with.Query(d.Fingerprint); w != nil {
			c.ControlStatus = w.Status
			if w.Effects != nil {
				e := w.Effects.Mean
				c.Control = &e
			}
		}
		out = append(out, c)
	}
	impact := func(fp string) float64 {
		if q := delta.Query(fp); q != nil {
			return q.ImpactMS
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b fixes.Change) int {
		if a.Direction != b.Direction {
			if a.Direction == fixes.Slower {
				return -1
			}
			return 1
		}
		return cmp.Compare(fixAbs(impact(b.Fingerprint)), fixAbs(impact(a.Fingerprint)))
	})
	return out
}

func fixAbs(x float64) float64 { return max(x, -x) }
