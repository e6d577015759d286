package report

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/findings"
)

// syntheticFindings is an error-rate finding, as findings writes it for
// a target that failed a CHECK constraint, and two findings that lacked
// an input.
func syntheticFindings() *findings.Report {
	return &findings.Report{Kind: "findings", Workload: "target.json",
		Findings: []findings.Finding{{ID: findings.IDErrors, Severity: findings.Critical, Subject: "error rate", Title: "Errors",
			Summary: "50 of 200 statements failed (25.00%)",
			Evidence: findings.Evidence{
				Figures: []findings.Figure{{Name: "failed_statements", Value: 50, Text: "50"}},
				Queries: []findings.QueryRef{{Fingerprint: "aaaa", Query: "INSERT INTO orders (id, qty) VALUES ($1, $2)", Calls: 1200, TotalMS: 12.34}},
				Tables: []findings.Table{{Title: "Errors by SQLSTATE", Head: []string{"sqlstate", "name", "errors", "% of statements"},
					Rows: [][]string{{"23514", "check_violation", "50", "25.00"}}}}},
			Recommendation: "fix the constraint or the data"}},
		NotEvaluated: []findings.Skip{
			{ID: findings.IDMissingIndex, Lacks: findings.LackServer, Reason: "no connection to the server: plans cannot be explained"},
			{ID: findings.IDHotQueryID, Lacks: findings.LackServerCPUs, Reason: "server CPU count unknown: the hottest query id runs 5 calls/s"},
			{ID: findings.IDBatchInserts, Reason: "the workload's time span is unknown, so no rate"},
		}}
}

// TestWriteFindings: the text names the SQLSTATE of the errors, and says
// what a skipped finding lacked in the caller's words, after what is
// missing; without a hint it says only what is missing.
func TestWriteFindings(t *testing.T) {
	hints := Hints{Server: "--dsn", ServerCPUs: "give --server-cpus"}
	var b strings.Builder
	if err := WriteFindings(&b, syntheticFindings(), hints); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	wantIn(t, "text", out,
		"Findings: 1 (1 critical, 0 warning, 0 info)",
		"check_violation",
		"query aaaa  1,200 calls  12.3 ms  INSERT INTO orders",
		"missing-index: no connection to the server (--dsn): plans cannot be explained\n",
		"hot-queryid: server CPU count unknown (give --server-cpus): the hottest query id runs 5 calls/s\n",
		"batch-inserts: the workload's time span is unknown, so no rate\n",
	)
	b.Reset()
	if err := WriteFindings(&b, syntheticFindings(), Hints{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "missing-index: no connection to the server: plans cannot be explained\n") || strings.Contains(b.String(), "--") {
		t.Errorf("text without hints:\n%s", b.String())
	}
	s := FindingsSection(syntheticFindings(), hints)
	if len(s.Tables) != 1 || len(s.Tables[0].Rows) != 1 || s.Tables[0].Rows[0].Class != "bad" ||
		!strings.Contains(strings.Join(s.Tables[0].Rows[0].Detail.Notes, " "), "check_violation") ||
		!strings.Contains(strings.Join(s.Notes, " "), "Not evaluated, missing-index: no connection to the server (--dsn): plans cannot be explained") {
		t.Errorf("section %+v", s)
	}
}

// TestWriteFindingsFix: a finding's fix is said with the SQL rehearse's
// fix rounds try, or why they cannot, in the text and on the page.
func TestWriteFindingsFix(t *testing.T) {
	r := &findings.Report{Findings: []findings.Finding{
		{ID: findings.IDMissingIndex, Severity: findings.Warning, Subject: "public.jobs (state)", Title: "scan",
			Fix: &findings.Fix{SQL: "CREATE INDEX ON public.jobs (state)", Relation: "public.jobs"}},
		{ID: findings.IDRandomKeys, Severity: findings.Warning, Subject: "public.events.id", Title: "keys",
			Fix: &findings.Fix{Untried: "the application's keys"}},
	}}
	var b strings.Builder
	if err := WriteFindings(&b, r, Hints{}); err != nil {
		t.Fatal(err)
	}
	wantIn(t, "text", b.String(),
		"  fix round: rehearse tries CREATE INDEX ON public.jobs (state) on the candidate's copy\n",
		"  fix round: cannot be tried on a copy: the application's keys\n",
	)
	s := FindingsSection(r, Hints{})
	if len(s.Tables) != 1 || len(s.Tables[0].Rows) != 2 || !strings.Contains(strings.Join(s.Tables[0].Rows[1].Detail.Notes, " "), "Fix round: cannot be tried on a copy") {
		t.Errorf("section %+v", s)
	}
}
