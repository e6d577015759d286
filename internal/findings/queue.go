package findings

import "fmt"

// queue flags job-queue polls that make concurrent workers wait for each
// other. Channable's engineering blog: the poll that works is UPDATE ... FROM (SELECT
// ... LIMIT n FOR UPDATE SKIP LOCKED); without SKIP LOCKED, workers queue
// on the same rows, or (without FOR UPDATE) claim the same rows twice
// under READ COMMITTED.
func (e *eval) queue() {
	w := e.w()
	deadlocks := w.ErrorsBySQLState["40P01"]
	timeouts := w.ErrorsBySQLState["55P03"]
	waits := w.LockWaitLines > 0 || deadlocks > 0 || timeouts > 0
	for i := range w.Queries {
		q := &w.Queries[i]
		if q.Calls < e.th.QueueMinCalls {
			continue
		}
		pattern := queuePattern(q.Query)
		if pattern == "" {
			continue
		}
		f := Finding{
			ID: IDQueue, Severity: Info, Subject: q.Fingerprint,
			Title: "Queue poll without SKIP LOCKED",
			Recommendation: "Add SKIP LOCKED to the locking clause so that each worker takes rows nobody holds: " +
				"UPDATE jobs SET taken_at = now() FROM (SELECT id FROM jobs WHERE ... ORDER BY ... LIMIT n FOR UPDATE SKIP LOCKED) AS c " +
				"WHERE jobs.id = c.id RETURNING jobs.id. Keep an index that matches the poll's WHERE and ORDER BY, or the poll " +
				"scans the whole queue (Channable's engineering blog: a new filter column without an index took the poll to 23 s).",
			Evidence: Evidence{
				Figures: []Figure{fig("calls", float64(q.Calls), ""), fig("calls_per_s", w.Rate(q.Calls), "/s"),
					fig("mean_ms", q.MeanMS, "ms")},
				Queries: []QueryRef{e.ref(q)},
				Notes:   []string{"pattern: " + pattern},
			},
		}
		if w.LockWaitLines >= 0 {
			f.Evidence.Figures = append(f.Evidence.Figures, fig("lock_wait_lines", float64(w.LockWaitLines), ""))
		}
		f.Evidence.Figures = append(f.Evidence.Figures, fig("deadlocks", float64(deadlocks), ""), fig("lock_timeouts", float64(timeouts), ""))
		if waits {
			f.Severity = Warning
			f.Summary = fmt.Sprintf("%s polls (%s/s) lock rows without SKIP LOCKED, and the workload waited for locks "+
				"(%d lock-wait log lines, %d deadlocks, %d lock timeouts; lock waits are counted for the whole workload, not per query)",
				fnum(float64(q.Calls)), fnum(round(w.Rate(q.Calls), 1)), max(w.LockWaitLines, 0), deadlocks, timeouts)
		} else {
			f.Summary = fmt.Sprintf("%s polls (%s/s) lock rows without SKIP LOCKED; no lock waits were seen", fnum(float64(q.Calls)), fnum(round(w.Rate(q.Calls), 1)))
			if w.LockWaitLines < 0 {
				f.Summary = fmt.Sprintf("%s polls lock rows without SKIP LOCKED; lock waits unknown (a replay result does not count them)", fnum(float64(q.Calls)))
			} else {
				f.Evidence.Notes = append(f.Evidence.Notes, "lock waits appear in the log only with log_lock_waits = on (after deadlock_timeout)")
			}
		}
		if deadlocks > 0 {
			f.Severity = Critical
		}
		e.add(f)
	}
}
