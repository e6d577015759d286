package compare

import "cmp"

// AddedMS is the time per run that a change of deltaMS in a query's
// figure m adds over timedCalls calls: the one measure that names the
// culprit, by which rehearse ranks its regressions (QueryDiff.ImpactMS)
// and headroom names what a step added time on (judge.Culprits). A
// change of the mean or the median is paid by every call; of the p95 by
// the slowest 5% of calls, of the p99 by the slowest 1%.
func AddedMS(m Metric, deltaMS float64, timedCalls int64) float64 {
	switch m {
	case MetricP95:
		return deltaMS * 0.05 * float64(timedCalls)
	case MetricP99:
		return deltaMS * 0.01 * float64(timedCalls)
	}
	return deltaMS * float64(timedCalls)
}

// ByAddedTime orders two queries by the time they added (AddedMS), most
// first, and on a tie by fingerprint: the order of rehearse's
// regressions (Report.RegressionsByAddedTime) and of a step's culprits.
func ByAddedTime(aMS float64, aFingerprint string, bMS float64, bFingerprint string) int {
	return cmp.Or(cmp.Compare(bMS, aMS), cmp.Compare(aFingerprint, bFingerprint))
}
