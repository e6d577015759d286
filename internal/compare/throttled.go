package compare

// A candidate throttled by the replay itself (UnjudgeableThrottled): its
// sessions waited for each other where the application's did not, so it
// got less load than the application would have given it. A query that
// waited so runs with a shorter queue on the target: its latency there
// is lower than the application's would be. A busy run of bench/forecast's
// hotrow with a trigger that doubled the hot update read the hot row's
// lock at 0.06x (improved) where the application waited 3.24x longer:
// the queue behind the slower update was in the replay's waits (39.6 s a
// round against the control's 12.0 s), not in the lock's time. So under
// such a throttle no improvement is told: what would have been one is
// StatusNotJudgedThrottled; regressions stand (the slowdown is at least
// theirs), and the verdict is never a pass (Options.Unjudgeable).

// StatusNotJudgedThrottled: the query's latency improved beyond the
// floors, but the candidate's runs were throttled by the replay itself:
// a lower bound improved, which says nothing.
const StatusNotJudgedThrottled Status = "not_judged_throttled"

// ReasonCandidateThrottled goes with StatusNotJudgedThrottled.
const ReasonCandidateThrottled Reason = "candidate_throttled"

// throttled says whether the caller found the candidate's runs
// throttled by the replay itself.
func throttled(why []Unjudgeable) bool {
	for _, u := range why {
		if u.Kind == UnjudgeableThrottled {
			return true
		}
	}
	return false
}

// markThrottled relabels the improvements of a throttled candidate.
func (r *Report) markThrottled(o Options) {
	if !throttled(o.Unjudgeable) {
		return
	}
	for i := range r.Queries {
		q := &r.Queries[i]
		if q.Status == StatusImproved {
			q.Status, q.Reasons = StatusNotJudgedThrottled, append(q.Reasons, ReasonCandidateThrottled)
		}
	}
}
