package findings

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// planningHeavy flags queries whose planning time is a large share of
// their total, from pg_stat_statements with track_planning; with it off,
// it warns that planning time is invisible. Postgres.FM: total time is
// planning plus execution, and track_planning is off by default (and on
// most managed services), so investigations miss the planning half.
func (e *eval) planningHeavy() {
	c := e.in.Catalog
	switch {
	case c == nil:
		e.lacking(IDPlanningHeavy, LackServer, "pg_stat_statements cannot be read")
		return
	case c.PGSS == nil:
		e.skip(IDPlanningHeavy, c.PGSSReason)
		return
	case !c.PGSS.HasPlanColumns:
		e.skip(IDPlanningHeavy, "pg_stat_statements before 1.8 (PostgreSQL 13) has no planning figures")
		return
	}
	if !c.PGSS.TrackPlanning {
		e.add(Finding{
			ID: IDPlanningHeavy, Severity: Warning, Subject: "pg_stat_statements.track_planning",
			Title:   "Planning time is invisible: pg_stat_statements.track_planning is off",
			Summary: "pg_stat_statements counts execution time only; the time spent planning each statement is nowhere to be seen",
			Recommendation: "Turn pg_stat_statements.track_planning on (ALTER SYSTEM SET pg_stat_statements.track_planning = on; " +
				"SELECT pg_reload_conf()) for an investigation, then compare total_plan_time with total_exec_time. It is off by " +
				"default because it takes pg_stat_statements' per-entry spinlock a second time per call: on a query id called " +
				"hundreds of thousands of times per second that contention can halve peak throughput (see hot-queryid), so " +
				"turn it off again on such servers.",
			Untried: "it changes what the server reports, not what the workload costs: a replay on a copy has no saving to " +
				"measure, and its overhead shows only as the contention of hot-queryid",
			Evidence: Evidence{Figures: []Figure{fig("pgss_entries", float64(len(c.PGSS.Rows)), "")}},
		})
		return
	}
	rows := slices.Clone(c.PGSS.Rows)
	slices.SortFunc(rows, func(a, b catalog.PGSSRow) int { return cmp.Compare(b.PlanMS, a.PlanMS) })
	for _, r := range rows {
		if r.Calls < e.th.PlanMinCalls || r.Plans == 0 {
			continue
		}
		share := r.PlanMS / (r.PlanMS + r.ExecMS)
		mean := r.PlanMS / float64(r.Plans)
		if share < e.th.PlanMinShare || mean < e.th.PlanMinMeanMS {
			continue
		}
		ref := QueryRef{Query: r.Query, Calls: r.Calls, TotalMS: round(r.PlanMS+r.ExecMS, 3)}
		if items := fingerprint.Compute(r.Query); len(items) == 1 {
			ref.Fingerprint = items[0].Fingerprint
		}
		seen := "not seen in the workload"
		q := e.w().Query(ref.Fingerprint)
		if q != nil {
			seen = "seen in the workload"
			ref.CallsPerS = round(e.w().Rate(q.Calls), 1)
		} else if r.Database != c.Database {
			// pg_stat_statements covers every database: another
			// database's query is not this workload's.
			continue
		}
		subject := ref.Fingerprint
		if subject == "" {
			subject = fmt.Sprintf("queryid %d", r.QueryID)
		}
		f := Finding{
			ID: IDPlanningHeavy, Severity: Warning, Subject: subject,
			Title: "Planning takes most of a query's time",
			Summary: fmt.Sprintf("planning is %.0f%% of this query's time: %s ms per plan against %s ms per execution (%s)",
				100*share, fnum(round(mean, 3)), fnum(round(r.ExecMS/float64(r.Calls), 3)), seen),
			Recommendation: "Plan once, execute many times: use a prepared statement (or the driver's statement cache), so " +
				"that after five executions the server may keep a generic plan. Reduce what the planner has to consider: fewer " +
				"joined tables or partitions (pruning by a constant happens at plan time), lower join_collapse_limit / " +
				"from_collapse_limit for queries joining many tables, and check for lock manager contention on the many " +
				"relations a plan touches.",
			Evidence: Evidence{
				Figures: []Figure{
					fig("plan_share_pct", 100*share, "%"), fig("mean_plan_ms", mean, "ms"),
					fig("mean_exec_ms", r.ExecMS/float64(r.Calls), "ms"), fig("calls", float64(r.Calls), ""),
					fig("plans", float64(r.Plans), ""), fig("total_plan_ms", r.PlanMS, "ms"), fig("total_exec_ms", r.ExecMS, "ms"),
				},
				Queries: []QueryRef{ref},
				Notes:   []string{fmt.Sprintf("pg_stat_statements queryid %d in database %s", r.QueryID, r.Database)},
			},
		}
		if share >= 0.7 {
			f.Severity = Critical
		}
		e.add(f)
	}
}
