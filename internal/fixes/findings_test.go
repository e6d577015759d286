package fixes

import (
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/fixes/fixestest"
)

// TestFromFindings: a finding's SQL becomes a fix of origin finding in
// the workload's database, aimed at its queries that regressed (none:
// judged by what it changes); a finding whose fix cannot be tried, one
// without a fix, and an index on a table the plans' fix indexes already
// get none (judged: judge's TestFixVerdictFinding).
func TestFromFindings(t *testing.T) {
	_, rep, cmpRep := fixestest.Findings()
	planned := []Fix{{Name: "index-orders_customer_idx", Kind: CreateIndex, Relation: "orders"}}
	got := FromFindings(rep, cmpRep, "app", planned)
	if len(got) != 1 {
		t.Fatalf("FromFindings = %+v, want the jobs index alone", got)
	}
	f := got[0]
	if f.Name != "finding-missing-index-public.jobs_state" || f.Kind != CreateIndex || f.Origin != OriginFinding || f.SQL != `CREATE INDEX ON public.jobs ("state")` ||
		f.Relation != "public.jobs" || !slices.Equal(f.Databases, []string{"app"}) || !slices.Equal(f.Fingerprints, []string{"poll"}) || f.AddedMS != 700 {
		t.Errorf("the finding's fix: %+v", f)
	}
	if none := FromFindings(rep, fixestest.Report(fixestest.Query("x", "SELECT 1", compare.StatusRegressed, 900, 3, 5)), "app", planned); len(none) != 1 || len(none[0].Fingerprints) != 0 {
		t.Errorf("a finding whose queries did not regress: %+v", none)
	}
	if FromFindings(nil, cmpRep, "app", nil) != nil {
		t.Error("no findings, yet fixes")
	}
}

// TestBoundCountsFindings: --max-fixes bounds the plans' fixes and the
// findings' together (issue 48), largest time added first whatever found
// them: a finding's fix adding more time than a plan's takes the plan's
// place, one for no regression goes last, and a fix named and not tried
// is kept, taking no place.
func TestBoundCountsFindings(t *testing.T) {
	plan := Fix{Name: "index-a", Kind: CreateIndex, Origin: OriginPlans, AddedMS: 300}
	named := Fix{Name: "set-x", Kind: SetServer, Origin: OriginPlans, AddedMS: 900, Untried: UntriedRestart}
	finding := Fix{Name: "finding-missing-index-public.jobs_state", Kind: CreateIndex, Origin: OriginFinding, AddedMS: 700}
	idle := Fix{Name: "finding-missing-index-public.b_c", Kind: CreateIndex, Origin: OriginFinding}
	planned := []Fix{named, plan, finding, idle}
	names := func(fs []Fix) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	for _, tc := range []struct {
		max  int
		want []string
	}{
		{1, []string{finding.Name, named.Name}},
		{2, []string{finding.Name, plan.Name, named.Name}},
		{0, []string{finding.Name, plan.Name, idle.Name, named.Name}},
	} {
		if got := names(Bound(planned, tc.max)); !slices.Equal(got, tc.want) {
			t.Errorf("Bound(max %d) = %v, want %v", tc.max, got, tc.want)
		}
	}
	if planned[0].Name != named.Name {
		t.Error("Bound reordered its argument")
	}
}

// TestChooseCountsFindings: rehearse's choice (Choose) bounds the plans'
// fixes and the findings' together by --max-fixes (issue 48): the
// finding's index, for a regression adding more time than the plans'
// index's, is the one fix of max 1; with max 2 both, the finding's first.
func TestChooseCountsFindings(t *testing.T) {
	rep := fixestest.Report(
		fixestest.Query("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 300, 2, 3),
		fixestest.Query("poll", "SELECT id FROM jobs WHERE state = $1", compare.StatusRegressed, 700, 3, 5),
	)
	plans := &explain.Report{Outcomes: []explain.Outcome{{Fingerprint: "a", Database: "app", Causes: []explain.Cause{{Kind: explain.CauseIndexMissing,
		Side: explain.Candidate, Relation: "customers", Index: "customers_email_idx", Control: fixestest.IndexDef}}}}}
	fr := &findings.Report{Findings: []findings.Finding{{ID: findings.IDMissingIndex, Subject: "public.jobs (state)",
		Evidence: findings.Evidence{Queries: []findings.QueryRef{{Fingerprint: "poll"}}},
		Fix:      &findings.Fix{SQL: `CREATE INDEX ON public.jobs ("state")`, Relation: "public.jobs"}}}}
	names := func(fs []Fix) (out []string) {
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	const idx, fin = "index-customers_email_idx", "finding-missing-index-public.jobs_state"
	for _, tc := range []struct {
		c    Choice
		want []string
	}{
		{Choice{Plans: plans, Findings: fr, Database: "app", Max: 1}, []string{fin}},
		{Choice{Plans: plans, Findings: fr, Database: "app", Max: 2}, []string{fin, idx}},
		{Choice{Plans: plans, Database: "app", Max: 1}, []string{idx}},
		{Choice{Findings: fr, Database: "app"}, []string{fin}},
	} {
		if got := names(Choose(rep, tc.c)); !slices.Equal(got, tc.want) {
			t.Errorf("Choose(max %d, findings %v) = %v, want %v", tc.c.Max, tc.c.Findings != nil, got, tc.want)
		}
	}
}
