package findings

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// hotQueryID compares the call rate of the hottest query ids with a model
// of pg_stat_statements' per-entry spinlock. Postgres.FM's experiments: pgss_store
// takes the entry's spinlock once per execution, and once more per
// planning with track_planning on; with one query id called hundreds of
// thousands of times per second, s_lock became the bottleneck and peak
// throughput halved (192 vCPUs: peak at 30-40 clients with track_planning,
// 70-80 without; reproducible on 8 cores).
func (e *eval) hotQueryID() {
	w := e.w()
	if w.SpanS <= 0 || len(w.Queries) == 0 {
		e.skip(IDHotQueryID, "the workload's time span is unknown, so no call rate")
		return
	}
	tracking, tpNote := "assumed loaded", "track_planning unknown, assumed off"
	trackPlanning := false
	if c := e.in.Catalog; c != nil {
		switch {
		case !strings.Contains(c.SharedPreload, "pg_stat_statements"):
			e.skip(IDHotQueryID, "pg_stat_statements is not in shared_preload_libraries: no per-entry spinlock to contend on")
			return
		case c.PGSS != nil:
			trackPlanning = c.PGSS.TrackPlanning
		}
		tracking = "loaded (shared_preload_libraries)"
		tpNote = "track_planning off"
		if trackPlanning {
			tpNote = "track_planning on: two spinlock acquisitions per call"
		}
	}
	hot := slices.Clone(w.Queries)
	slices.SortFunc(hot, func(a, b Query) int { return cmp.Compare(b.Calls, a.Calls) })
	hot = hot[:min(5, len(hot))]
	avgAll := w.Rate(w.Statements)
	// The timeline is of all statements; the hottest id's share of them
	// at the busiest second is assumed to be its share overall.
	peakFactor := 1.0
	if avgAll > 0 && w.PeakCallsPerS > avgAll {
		peakFactor = w.PeakCallsPerS / avgAll
	}
	q := &hot[0]
	avg := w.Rate(q.Calls)
	peak := avg * peakFactor
	if e.in.ServerCPUs <= 0 {
		e.lacking(IDHotQueryID, LackServerCPUs, fmt.Sprintf("the hottest query id runs %s calls/s on average, %s at the busiest second (estimated)",
			fnum(round(avg, 1)), fnum(round(peak, 1))))
		return
	}
	cores := float64(e.in.ServerCPUs)
	perCall := 1.0
	if trackPlanning {
		perCall = 2
	}
	limit := e.th.HotCallsPerCore * cores / perCall
	ratio := peak / limit
	if ratio < e.th.HotWarnFraction {
		return
	}
	sev := Warning
	if ratio >= 1 {
		sev = Critical
	}
	f := Finding{
		ID: IDHotQueryID, Severity: sev, Subject: q.Fingerprint,
		Title: "One query id is called fast enough to contend on pg_stat_statements' spinlock",
		Summary: fmt.Sprintf("%s calls/s at the busiest second (%s on average) of one query id: %.0f%% of the estimated limit of %s calls/s on %d CPUs",
			fnum(round(peak, 1)), fnum(round(avg, 1)), 100*ratio, fnum(round(limit, 0)), e.in.ServerCPUs),
		Recommendation: "Call this statement less often: cache its result in the application, batch lookups (WHERE id = ANY($1)), " +
			"or use prepared statements, which skip planning and with it the second spinlock acquisition. Keep " +
			"pg_stat_statements.track_planning off on this server (it doubles the spinlock traffic). Confirm with a " +
			"client sweep (pgrehearse sweep) or a flame graph showing s_lock under pgss_store.",
		Model: &Model{
			Rule: fmt.Sprintf("risk when the calls/s of one query id > K x CPU cores / A, with K = %s calls/s per core and A = %d spinlock acquisitions per call",
				fnum(e.th.HotCallsPerCore), int(perCall)),
			Inputs: []Figure{
				fig("peak_calls_per_s", peak, "/s"), fig("avg_calls_per_s", avg, "/s"),
				fig("cpu_cores", cores, ""), {Name: "cpu_source", Text: e.in.CPUSource},
				fig("k_calls_per_core", e.th.HotCallsPerCore, "/s"), fig("acquisitions_per_call", perCall, ""),
				fig("limit_calls_per_s", limit, "/s"), fig("ratio_to_limit", ratio, ""),
				{Name: "pg_stat_statements", Text: tracking}, {Name: "track_planning", Text: tpNote},
			},
			Source: "K is an estimate, not a measurement of this server: experiments discussed on Postgres.FM saw the cliff at hundreds of " +
				"thousands of calls/s of one id on 192 vCPUs and reproduced it on 8 cores, i.e. from roughly 10,000 calls/s " +
				"per core. The peak is the average rate times the ratio of the busiest second to the average of all " +
				"statements (the same query mix assumed). pg_stat_statements keeps one entry per user, database and query id, " +
				"so one fingerprint across several users or databases spreads over several spinlocks.",
		},
	}
	for i := range hot {
		f.Evidence.Queries = append(f.Evidence.Queries, e.ref(&hot[i]))
	}
	e.add(f)
}
