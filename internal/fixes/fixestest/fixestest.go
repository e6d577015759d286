// Package fixestest builds the comparisons and findings, made up by hand,
// that the tests of fixes and of a fix's verdict (judge) share. It is for
// tests only; nothing in the binary imports it. It cannot import fixes,
// whose own tests use it.
package fixestest

import (
	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
)

// IndexDef is the control's definition of the index the candidate lacks.
const IndexDef = "CREATE INDEX customers_email_idx ON public.customers USING btree (email)"

// Query is a query of a comparison with its status, time added and the
// interval of its mean.
func Query(fp, text string, st compare.Status, added, low, high float64) compare.QueryDiff {
	e := compare.Effect{Estimate: compare.Estimate{Ratio: (low + high) / 2, Low: low, High: high, Change: compare.ChangeSlower}}
	if low <= 1 && high >= 1 {
		e.Change = compare.ChangeNone
	}
	d := compare.QueryDiff{Fingerprint: fp, Query: text, Status: st, ImpactMS: added, Effects: &compare.Effects{Mean: e}}
	if st.Regression() {
		d.Regressed = compare.MetricMean
	}
	return d
}

// Report is a comparison of the queries qs, its regressions in their
// order.
func Report(qs ...compare.QueryDiff) *compare.Report {
	r := &compare.Report{Queries: qs}
	for _, d := range qs {
		if d.Status.Regression() {
			r.RegressionsByAddedTime = append(r.RegressionsByAddedTime, d.Fingerprint)
		}
	}
	return r
}

// Findings are four findings of a workload and the comparison of its
// queries: an index for the jobs' poll, which regressed (700 ms added);
// an index on orders, whose query the comparison lacks; random keys,
// whose fix cannot be tried; errors, without a fix. poll is the poll's
// query.
func Findings() (poll findings.QueryRef, rep *findings.Report, cmp *compare.Report) {
	poll = findings.QueryRef{Fingerprint: "poll", Query: "SELECT id FROM jobs WHERE state = $1 ORDER BY id LIMIT $2"}
	rep = &findings.Report{Findings: []findings.Finding{
		{ID: findings.IDMissingIndex, Subject: "public.jobs (state)", Evidence: findings.Evidence{Queries: []findings.QueryRef{poll}},
			Fix: &findings.Fix{SQL: `CREATE INDEX ON public.jobs ("state")`, Relation: "public.jobs"}},
		{ID: findings.IDMissingIndex, Subject: "public.orders (customer_id)", Evidence: findings.Evidence{Queries: []findings.QueryRef{{Fingerprint: "o"}}},
			Fix: &findings.Fix{SQL: `CREATE INDEX ON public.orders (customer_id)`, Relation: "public.orders"}},
		{ID: findings.IDRandomKeys, Subject: "public.events.id", Fix: &findings.Fix{Untried: "the application's keys"}},
		{ID: findings.IDErrors, Subject: "23505"},
	}}
	cmp = Report(
		Query("poll", poll.Query, compare.StatusRegressed, 700, 3, 5),
		Query("x", "SELECT 1", compare.StatusRegressed, 900, 3, 5),
	)
	return poll, rep, cmp
}

// HOT is a comparison in which the update of pgbench_accounts writes
// more WAL per call (2.9x, a work regression), and plans that blame two
// indexes on the candidate only for stopping its HOT updates: one the
// control lacks, one the control has under another definition.
func HOT() (rep *compare.Report, plans *explain.Report) {
	upd := compare.QueryDiff{Fingerprint: "u", Query: "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", Status: compare.StatusMoreWork,
		Work: &compare.QueryWork{More: compare.MetricWALBytes, WALBytes: compare.WorkEffect{Estimate: compare.Estimate{Ratio: 2.9, Low: 2.7, High: 3.1, Change: compare.ChangeMore}, Delta: 150}}}
	rep = Report()
	rep.Queries, rep.MoreWork = []compare.QueryDiff{upd}, []string{"u"}
	def := "CREATE INDEX pgbench_accounts_abalance ON public.pgbench_accounts USING btree (abalance)"
	plans = &explain.Report{Outcomes: []explain.Outcome{{Fingerprint: "u", Database: "shop", Causes: []explain.Cause{
		{Kind: explain.CauseIndexStopsHOT, Side: explain.Candidate, Relation: "pgbench_accounts", Index: "pgbench_accounts_abalance", Candidate: def, Columns: []string{"abalance"}},
		{Kind: explain.CauseIndexStopsHOT, Side: explain.Candidate, Relation: "pgbench_accounts", Index: "accounts_x", Candidate: "CREATE INDEX accounts_x ON public.pgbench_accounts (abalance, bid)",
			Control: "CREATE INDEX accounts_x ON public.pgbench_accounts (bid)"},
	}}}}
	return rep, plans
}
