package findings

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// sqlStateNames name the SQLSTATEs a workload commonly meets.
var sqlStateNames = map[string]string{
	"23502": "not_null_violation", "23503": "foreign_key_violation", "23505": "unique_violation",
	"23514": "check_violation", "22012": "division_by_zero", "22P02": "invalid_text_representation",
	"25P02": "in_failed_sql_transaction", "40001": "serialization_failure", "40P01": "deadlock_detected",
	"42601": "syntax_error", "42501": "insufficient_privilege", "42P01": "undefined_table",
	"42703": "undefined_column", "42883": "undefined_function", "55P03": "lock_not_available",
	"57014": "query_canceled", "57P01": "admin_shutdown", "3D000": "invalid_catalog_name",
	"28P01": "invalid_password", "28000": "invalid_authorization_specification", "53300": "too_many_connections",
	"08006": "connection_failure", "XX000": "internal_error",
}

// errors reports the error rate by SQLSTATE and, with a baseline, the
// statements that failed only in the workload.
func (e *eval) errors() {
	w := e.w()
	var total int64
	for _, n := range w.ErrorsBySQLState {
		total += n
	}
	// A replay's errors of ordering that the original did not have are
	// the replay's doing, said apart: the application has nothing to fix.
	ordering := e.replayOrder()
	if total > 0 && ordering == total {
		return
	}
	if total > 0 || w.Failed > 0 {
		rate := pct(float64(w.Failed), float64(w.Statements))
		f := Finding{
			ID: IDErrors, Severity: Info, Subject: "error rate",
			Title:   "Errors",
			Summary: fmt.Sprintf("%s of %s statements failed (%.2f%%); %s errors by SQLSTATE", fnum(float64(w.Failed)), fnum(float64(w.Statements)), rate, fnum(float64(total))),
			Recommendation: "Fix the failing statements, most frequent SQLSTATE first: each error costs a round trip, " +
				"aborts its transaction (25P02 follows until ROLLBACK) and is often retried. Constraint violations (23xxx) " +
				"used as control flow are cheaper as INSERT ... ON CONFLICT.",
			Evidence: Evidence{Figures: []Figure{fig("error_rate_pct", rate, "%"), fig("failed_statements", float64(w.Failed), ""),
				fig("statements", float64(w.Statements), "")}},
		}
		switch {
		case rate >= e.th.ErrorCriticalPct:
			f.Severity = Critical
		case rate >= e.th.ErrorWarnPct:
			f.Severity = Warning
		}
		tab := Table{Title: "Errors by SQLSTATE", Head: []string{"sqlstate", "name", "errors", "% of statements"}}
		codes := slices.Sorted(maps.Keys(w.ErrorsBySQLState))
		slices.SortStableFunc(codes, func(a, b string) int { return cmp.Compare(w.ErrorsBySQLState[b], w.ErrorsBySQLState[a]) })
		for _, code := range codes {
			n := w.ErrorsBySQLState[code]
			tab.Rows = append(tab.Rows, []string{code, sqlStateNames[code], fnum(float64(n)), fmt.Sprintf("%.2f", pct(float64(n), float64(w.Statements)))})
		}
		f.Evidence.Tables = append(f.Evidence.Tables, tab)
		failing := failingQueries(w)
		for _, q := range failing[:min(10, len(failing))] {
			f.Evidence.Queries = append(f.Evidence.Queries, e.ref(q))
		}
		e.add(f)
	}
	if e.in.Baseline != nil {
		e.targetOnly()
	}
}

func failingQueries(w *Workload) []*Query {
	var out []*Query
	for i := range w.Queries {
		if w.Queries[i].Errors > 0 {
			out = append(out, &w.Queries[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *Query) int { return cmp.Compare(b.Errors, a.Errors) })
	return out
}

// targetOnly lists the statements that failed in the workload and never in
// the baseline, and SQLSTATEs new to the workload.
func (e *eval) targetOnly() {
	w, base := e.w(), e.in.Baseline
	tab := Table{Title: "Statements that failed only on the target", Head: []string{"fingerprint", "errors", "calls", "baseline calls", "query"}}
	var refs []QueryRef
	var n int64
	for _, q := range failingQueries(w) {
		b := base.Query(q.Fingerprint)
		if b != nil && b.Errors > 0 {
			continue
		}
		if w.Replay != nil && onlyOrderingCaused(q, w.Replay) {
			continue // the replay-order finding's
		}
		bc := "not run"
		if b != nil {
			bc = fnum(float64(b.Calls))
		}
		n += q.Errors
		tab.Rows = append(tab.Rows, []string{q.Fingerprint, fnum(float64(q.Errors)), fnum(float64(q.Calls)), bc, q.Query})
		refs = append(refs, e.ref(q))
	}
	var newCodes []string
	for code := range w.ErrorsBySQLState {
		if base.ErrorsBySQLState[code] == 0 && !(w.Replay != nil && slices.Contains(results.OrderingSQLStates, code)) {
			newCodes = append(newCodes, code)
		}
	}
	slices.Sort(newCodes)
	if len(refs) == 0 && len(newCodes) == 0 {
		return
	}
	rate := pct(float64(n), float64(w.Statements))
	f := Finding{
		ID: IDErrors, Severity: Warning, Subject: "failed only on target",
		Title: "Statements that failed only on the target",
		Summary: fmt.Sprintf("%d statements failed %s times on the target (%s) and never in the baseline (%s)",
			len(refs), fnum(float64(n)), w.Name, base.Name),
		Recommendation: "These failures are the target's: compare its schema, settings, extensions and roles with the " +
			"baseline's (a missing index or constraint, a changed default, a permission) before trusting its timings.",
		Evidence: Evidence{Figures: []Figure{fig("target_only_errors", float64(n), ""), fig("target_only_error_rate_pct", rate, "%")},
			Queries: refs},
	}
	if len(tab.Rows) > 0 {
		f.Evidence.Tables = append(f.Evidence.Tables, tab)
	}
	for _, code := range newCodes {
		f.Evidence.Notes = append(f.Evidence.Notes, fmt.Sprintf("SQLSTATE %s %s: %s errors on the target, none in the baseline",
			code, sqlStateNames[code], fnum(float64(w.ErrorsBySQLState[code]))))
	}
	if rate >= e.th.ErrorWarnPct {
		f.Severity = Critical
	}
	e.add(f)
}

// orderingCaused reports whether q has errors of the replay's order: by
// their cause where the replay counted it, else by code (onlyOrdering).
func orderingCaused(q *Query, r *ReplayFacts) bool {
	if r == nil || r.OnlyOnTargetBySQLState == nil {
		return onlyOrdering(q)
	}
	for _, code := range results.OrderingSQLStates {
		if q.OnlyOnTargetBySQLState[code] > 0 {
			return true
		}
	}
	return false
}

// onlyOrderingCaused reports whether every error of q that failed only on
// the target was caused by one of ordering, where the replay counted
// them by cause (else onlyOrdering).
func onlyOrderingCaused(q *Query, r *ReplayFacts) bool {
	if r == nil || r.OnlyOnTargetBySQLState == nil {
		return onlyOrdering(q)
	}
	var n, all int64
	for code, c := range q.OnlyOnTargetBySQLState {
		all += c
		if slices.Contains(results.OrderingSQLStates, code) {
			n += c
		}
	}
	return all > 0 && n == all
}

// onlyOrdering reports whether every error of q is of an ordering code.
func onlyOrdering(q *Query) bool {
	if q.Errors == 0 || len(q.ErrorsBySQLState) == 0 {
		return false
	}
	var n int64
	for _, code := range results.OrderingSQLStates {
		n += q.ErrorsBySQLState[code]
	}
	return n == q.Errors
}

// replayOrder reports the errors a replay caused by running sessions that
// depended on each other's commits in another order than the original:
// statements that had succeeded in the original (the replay counts them)
// and failed on the target with ordering codes (a foreign key whose row
// is not there yet, a duplicate key, a serialization failure, a deadlock,
// and the aborted transactions after them). It returns how many errors it
// took, for the errors finding to leave out.
func (e *eval) replayOrder() int64 {
	w := e.w()
	if w.Replay == nil || w.Replay.FailedOnlyOnTarget == 0 {
		return 0
	}
	var n int64
	counts := map[string]int64{}
	// The errors caused by one of ordering, of statements that
	// succeeded in the original, where the replay counted them so:
	// errors that failed in the original too, the 25P02s after an
	// error of another kind and those after a server-assigned id of the
	// original are not the replay's order.
	byCause := w.ErrorsBySQLState
	if w.Replay.OnlyOnTargetBySQLState != nil {
		byCause = w.Replay.OnlyOnTargetBySQLState
	}
	for _, code := range results.OrderingSQLStates {
		if c := byCause[code]; c > 0 {
			counts[code] = c
			n += c
		}
	}
	if b := e.in.Baseline; b != nil {
		// Errors of these codes the original had too are not the
		// replay's doing; a baseline replay's own errors of its order
		// are counted apart from the original's where it did.
		subtract := b.ErrorsBySQLState
		switch {
		case w.Replay.OnlyOnTargetBySQLState == nil:
		case b.Replay != nil && b.Replay.OnlyOnTargetBySQLState != nil:
			subtract = b.Replay.OnlyOnTargetBySQLState
		default:
			subtract = nil // the original's failures are left out already
		}
		for code := range counts {
			c := max(counts[code]-subtract[code], 0)
			n -= counts[code] - c
			if counts[code] = c; c == 0 {
				delete(counts, code)
			}
		}
	}
	// Only as many as failed only on the target can be the replay's.
	n = min(n, w.Replay.FailedOnlyOnTarget)
	if n == 0 {
		return 0
	}
	parts := make([]string, 0, len(counts))
	for _, code := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %s x%s", code, sqlStateNames[code], fnum(float64(counts[code]))))
	}
	sync, advice := replayOrderAdvice(w.Replay)
	f := Finding{
		ID: IDReplayOrder, Severity: Warning, Subject: "replay order",
		Title: "Errors caused by the replay's order, not by the workload",
		Summary: fmt.Sprintf("%s statements that succeeded in the original failed on the target with errors of ordering (%s): "+
			"sessions that depended on each other's commits ran in another order; %s", fnum(float64(n)), strings.Join(parts, ", "), sync),
		Recommendation: "Nothing to fix in the application or on the target: these statements succeeded in the original run. " + advice +
			" With these errors the timings measure other work (see docs/sync.md).",
		Evidence: Evidence{Figures: []Figure{fig("ordering_errors", float64(n), ""), fig("failed_only_on_target", float64(w.Replay.FailedOnlyOnTarget), "")}},
	}
	for _, q := range failingQueries(w) {
		if orderingCaused(q, w.Replay) && len(f.Evidence.Queries) < 10 {
			f.Evidence.Queries = append(f.Evidence.Queries, e.ref(q))
		}
	}
	e.add(f)
	var total int64
	for _, v := range counts {
		total += v
	}
	return total
}

// replayOrderAdvice says how a replay's sessions were synchronized and
// what to do about errors of ordering, from the options the replay really
// ran with: synchronization is advised only to a replay that ran without
// it, and a synchronized one is pointed at what let statements run early.
func replayOrderAdvice(r *ReplayFacts) (sync, advice string) {
	switch r.Sync {
	case results.SyncOff:
		return "its sessions ran without synchronization",
			"Replay with synchronized sessions (sync mode answers, replay's default), so that a statement waits for the commits it depended on, and compare that replay."
	case results.SyncObject, results.SyncCommit, results.SyncLoad, results.SyncAnswers:
		sync = "its sessions were synchronized (" + string(r.Sync) + " mode), yet some ran out of order"
		var why []string
		if r.SyncTimeouts > 0 {
			why = append(why, fmt.Sprintf("%s sync waits gave up after %gs without progress", fnum(float64(r.SyncTimeouts)), r.SyncTimeoutSeconds))
		}
		if r.LostTransactions > 0 {
			why = append(why, fmt.Sprintf("%s transactions were lost to a fault", fnum(float64(r.LostTransactions))))
		}
		if r.Reconnects > 0 {
			why = append(why, fmt.Sprintf("%s sessions reconnected after their connection broke", fnum(float64(r.Reconnects))))
		}
		if len(why) == 0 {
			sync += " (a dependency the log does not show: values from sequences, time or chance, a function's or trigger's own statements)"
			if r.Sync == results.SyncLoad {
				return sync, "The sessions were synchronized for load (only writes waited); replay in sync mode object, which orders reads by the commits they saw too, to see whether the errors go."
			}
			if r.Sync == results.SyncAnswers {
				return sync, "The sessions were already synchronized for answers (by object, and each commit after the reads that ended before it); replay in sync mode commit, which waits for every earlier commit, to see whether the errors go."
			}
			if r.Sync == results.SyncObject {
				return sync, "The sessions were already synchronized by object; replay in sync mode commit, which waits for every earlier commit, to see whether the errors go."
			}
			return sync, "The sessions were already synchronized by commit: the dependency is one the log does not show (see what is not guaranteed in docs/sync.md)."
		}
		sync += " (" + strings.Join(why, "; ") + ")"
		if r.SyncTimeouts > 0 && len(why) == 1 {
			return sync, "The sessions were already synchronized; find why the waits gave up (the result's sync timeouts by cause) and, when the target is slower than the original, replay with a longer sync timeout."
		}
		return sync, "The sessions were already synchronized: the faults during the replay let statements run without what they depended on; replay again without the faults."
	}
	return "it did not say how its sessions were synchronized",
		"Replay with synchronized sessions (sync mode answers, replay's default), so that a statement waits for the commits it depended on, and compare that replay."
}
