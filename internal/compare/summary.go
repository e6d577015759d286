package compare

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

func summarize(r *Run, hc histCache) RunSummary {
	s := RunSummary{
		Name: r.Name(), Files: []string{r.Name()}, Kind: r.Kind, LatencySource: r.LatencySource, Partial: r.Partial,
		Statements: r.Statements.Total, Failed: r.Statements.Failed, Queries: len(r.Queries),
		FirstTime: r.FirstTime.String(), LastTime: r.LastTime.String(), SpanS: r.SpanSeconds(),
		Errors: r.ErrorsBySQLState, Timeline: r.Timeline, Gaps: gaps(r.Timeline),
	}
	if s.Errors == nil {
		s.Errors = map[string]int64{}
	}
	if r.Replay != nil {
		s.Sync, s.SyncWait = r.Sync, r.SyncWait
	}
	for i := range r.Queries {
		q := &r.Queries[i]
		s.TimedCalls += q.TimedCalls
		s.TotalMS += q.TotalMS
	}
	if s.TimedCalls > 0 {
		s.MeanMS = s.TotalMS / float64(s.TimedCalls)
	}
	if r.HasHist() {
		s.P95MS = workloadP95(r, hc)
	}
	if s.SpanS > 0 {
		s.StatementsPerS = float64(s.Statements) / s.SpanS
	}
	if r.Replay != nil && r.Window != nil && r.Window.Seconds > 0 {
		w := r.Window
		// Past its window the replay's sessions ran out of work one
		// by one: the rate is the window's, as an application's
		// clients stopped all together measure theirs.
		s.WindowS = w.Seconds
		s.StatementsPerS = float64(w.Statements) / w.Seconds
	}
	return s
}

// summarizeSide describes a side: its one run, or the medians of its
// runs with each run's summary.
func summarizeSide(runs []*Run, hc histCache) RunSummary {
	if len(runs) == 1 {
		return summarize(runs[0], hc)
	}
	each := make([]RunSummary, len(runs))
	for i, r := range runs {
		each[i] = summarize(r, hc)
	}
	first := each[0]
	s := RunSummary{Kind: first.Kind, LatencySource: first.LatencySource, FirstTime: first.FirstTime, LastTime: first.LastTime,
		Sync: first.Sync, SyncWait: first.SyncWait, Runs: each, Errors: map[string]int64{}}
	var stmts, failed, queries, timed []int64
	var span, perS, total, mean, p95, window []float64
	codes := map[string]bool{}
	for _, e := range each {
		s.Files = append(s.Files, e.Name)
		s.Partial = s.Partial || e.Partial
		stmts, failed, queries, timed = append(stmts, e.Statements), append(failed, e.Failed), append(queries, int64(e.Queries)), append(timed, e.TimedCalls)
		span, perS, total, mean = append(span, e.SpanS), append(perS, e.StatementsPerS), append(total, e.TotalMS), append(mean, e.MeanMS)
		if e.P95MS > 0 {
			p95 = append(p95, e.P95MS)
		}
		if e.WindowS > 0 {
			window = append(window, e.WindowS)
		}
		for c := range e.Errors {
			codes[c] = true
		}
	}
	s.Name = strings.Join(s.Files, ", ")
	s.Statements, s.Failed, s.Queries, s.TimedCalls = medianInt(stmts), medianInt(failed), int(medianInt(queries)), medianInt(timed)
	s.SpanS, s.StatementsPerS, s.TotalMS, s.MeanMS = median0(span), median0(perS), median0(total), median0(mean)
	if len(p95) == len(each) {
		s.P95MS = median0(p95)
	}
	s.WindowS = median0(window)
	for c := range codes {
		var n []int64
		for _, e := range each {
			n = append(n, e.Errors[c])
		}
		if m := medianInt(n); m > 0 {
			s.Errors[c] = m
		}
	}
	s.Spread = &SummarySpread{MeanMS: spread0(mean), P95MS: spread0(p95), StatementsPerS: spread0(perS)}
	return s
}

// errorSamples are a replay's error samples; none for an analysis.
func errorSamples(r *Run) []results.ErrorSample {
	if r.Replay == nil {
		return nil
	}
	return r.Errors
}

// workloadP95 merges every query's histogram; 0 if one does not decode.
func workloadP95(r *Run, hc histCache) float64 {
	var all []Bucket
	var n int64
	for _, q := range r.Queries {
		if q.TimedCalls == 0 {
			continue
		}
		b, err := hc.buckets(q.Hist)
		if err != nil {
			return 0
		}
		all = append(all, b...)
		for _, x := range b {
			n += x.Count
		}
	}
	slices.SortFunc(all, func(a, b Bucket) int { return cmp.Compare(a.ValueUS, b.ValueUS) })
	want := int64(math.Ceil(0.95 * float64(n)))
	var cum int64
	for _, b := range all {
		if cum += b.Count; cum >= want {
			return float64(b.ValueUS) / 1000
		}
	}
	return 0
}
