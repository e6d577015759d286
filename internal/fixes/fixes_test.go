package fixes

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/fixes/fixestest"
)

// TestPlan: a regression whose cause is an index missing on the
// candidate, with the control's definition, gets the control's CREATE
// INDEX, once however many queries it is for, in each of their
// databases; other causes, and a cause without the definition, get none;
// the largest time added goes first and max bounds them.
func TestPlan(t *testing.T) {
	rep := fixestest.Report(
		fixestest.Query("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 900, 5, 9),
		fixestest.Query("b", "SELECT count(*) FROM orders WHERE customer_id = $1", compare.StatusRegressed, 500, 2, 3),
		fixestest.Query("c", "SELECT name FROM customers WHERE email = $1", compare.StatusRegressed, 100, 2, 3),
		fixestest.Query("d", "SELECT 1", compare.StatusRegressed, 50, 2, 3),
		fixestest.Query("e", "SELECT * FROM t", compare.StatusUnchanged, 0, 0.9, 1.1),
	)
	missing := explain.Cause{Kind: explain.CauseIndexMissing, Side: explain.Candidate, Relation: "customers", Index: "customers_email_idx", Control: fixestest.IndexDef}
	plans := &explain.Report{Outcomes: []explain.Outcome{
		{Fingerprint: "a", Database: "shop", Causes: []explain.Cause{missing}},
		{Fingerprint: "b", Database: "shop", Causes: []explain.Cause{{Kind: explain.CauseIndexMissing, Side: explain.Candidate, Relation: "orders", Index: "orders_customer_idx",
			Control: "CREATE INDEX orders_customer_idx ON public.orders USING btree (customer_id)"}}},
		{Fingerprint: "c", Database: "crm", Causes: []explain.Cause{missing}},
		{Fingerprint: "d", Database: "shop", Causes: []explain.Cause{{Kind: explain.CauseSetting, Setting: "random_page_cost", Control: "4", Candidate: "800"},
			{Kind: explain.CauseIndexMissing, Side: explain.Candidate, Relation: "t", Index: "t_idx"}}},
		{Fingerprint: "e", Database: "shop", Causes: []explain.Cause{{Kind: explain.CauseIndexMissing, Side: explain.Candidate, Relation: "t", Index: "t_x", Control: "CREATE INDEX t_x ON t (x)"}}},
	}}
	got := Plan(rep, plans, 0)
	if len(got) != 2 {
		t.Fatalf("Plan = %+v, want the two indexes", got)
	}
	f := got[0]
	if f.Name != "index-customers_email_idx" || f.Kind != CreateIndex || f.SQL != fixestest.IndexDef || f.Relation != "customers" ||
		!slices.Equal(f.Databases, []string{"shop", "crm"}) || !slices.Equal(f.Fingerprints, []string{"a", "c"}) || f.AddedMS != 1000 {
		t.Errorf("the email index's fix: %+v", f)
	}
	if got[1].Name != "index-orders_customer_idx" {
		t.Errorf("second fix %+v", got[1])
	}
	if one := Plan(rep, plans, 1); len(one) != 1 || one[0].Name != f.Name {
		t.Errorf("Plan with max 1 = %+v, want the one adding the most time", one)
	}
	// A/A: no regression, no fix.
	if none := Plan(fixestest.Report(fixestest.Query("e", "SELECT * FROM t", compare.StatusUnchanged, 0, 0.9, 1.1)), plans, 0); len(none) != 0 {
		t.Errorf("Plan without regressions = %+v", none)
	}
}

// TestPlanSettingAndAnalyze: a planner setting a session may change,
// verified by the plans, gets the control's value for the database, run in
// each copy by its name; one a reload applies, tied to a work regression,
// gets ALTER SYSTEM; one that needs a restart is named with its SQL
// and not tried; one the server does not know and one merely different
// get none; a table never analyzed on
// the candidate gets ANALYZE, one never analyzed on the control none.
func TestPlanSettingAndAnalyze(t *testing.T) {
	rep := fixestest.Report(
		fixestest.Query("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 900, 5, 9),
		fixestest.Query("b", "SELECT * FROM orders", compare.StatusRegressed, 500, 2, 3),
		compare.QueryDiff{Fingerprint: "c", Query: "UPDATE orders SET total = $1 WHERE id = $2", Status: compare.StatusMoreWork, ImpactMS: 2},
	)
	rep.MoreWork = []string{"c"}
	snap := &explain.Snapshot{Settings: map[string]explain.Setting{
		"random_page_cost": {Value: "4", Context: "user"},
		"shared_buffers":   {Value: "128MB", Context: "postmaster"},
		"jit_above_cost":   {Value: "100000", Context: "user"},
		"full_page_writes": {Value: "on", Context: "sighup"},
	}}
	plans := &explain.Report{Candidate: map[string]*explain.Snapshot{"shop": snap}, Outcomes: []explain.Outcome{
		{Fingerprint: "a", Database: "shop", Causes: []explain.Cause{
			{Kind: explain.CauseSetting, Setting: "random_page_cost", Control: "4", Candidate: "800", Verified: true},
			{Kind: explain.CauseSetting, Setting: "shared_buffers", Control: "1GB", Candidate: "128MB", Evidence: "reads"},
			{Kind: explain.CauseSetting, Setting: "unknown_setting", Control: "1", Candidate: "2", Verified: true},
			{Kind: explain.CauseSetting, Setting: "jit_above_cost", Control: "100000", Candidate: "10"},
		}},
		{Fingerprint: "c", Database: "shop", Causes: []explain.Cause{
			{Kind: explain.CauseSetting, Setting: "full_page_writes", Control: "off", Candidate: "on", Evidence: explain.EvidenceWAL},
		}},
		{Fingerprint: "b", Database: "shop", Causes: []explain.Cause{
			{Kind: explain.CauseNeverAnalyzed, Side: explain.Candidate, Relation: "orders"},
			{Kind: explain.CauseNeverAnalyzed, Side: explain.Control, Relation: "items"},
		}},
	}}
	got := Plan(rep, plans, 0)
	if len(got) != 4 {
		t.Fatalf("Plan = %+v, want random_page_cost, ANALYZE orders, full_page_writes, and shared_buffers named", got)
	}
	set, an, server, named := got[0], got[1], got[2], got[3]
	// A setting a reload applies is tried, for the server, for the
	// work regression it is tied to.
	if server.Name != "setting-full_page_writes" || server.Kind != SetServer || server.Untried != "" ||
		server.SQL != `ALTER SYSTEM SET "full_page_writes" = 'off'` || server.SQLIn("x") != server.SQL || !slices.Equal(server.Fingerprints, []string{"c"}) {
		t.Errorf("the setting a reload applies: %+v", server)
	}
	if named.Name != "setting-shared_buffers" || named.Kind != SetServer || named.Untried != "it needs a restart of the server" ||
		named.SQL != `ALTER SYSTEM SET "shared_buffers" = '1GB'` {
		t.Errorf("the setting that needs a restart: %+v", named)
	}
	// max bounds the fixes tried; the one named costs no round.
	if one := Plan(rep, plans, 1); len(one) != 2 || one[0].Name != set.Name || one[1].Name != named.Name {
		t.Errorf("Plan with max 1 = %+v", one)
	}
	if set.Name != "setting-random_page_cost" || set.Kind != SetDatabase || set.SQL != `ALTER DATABASE "shop" SET "random_page_cost" = '4'` ||
		set.SQLIn("pgrehearse_x_r3_shop") != `ALTER DATABASE "pgrehearse_x_r3_shop" SET "random_page_cost" = '4'` {
		t.Errorf("the setting's fix: %+v", set)
	}
	if an.Name != "analyze-orders" || an.Kind != Analyze || an.SQLIn("x") != `ANALYZE "orders"` || an.Relation != "orders" {
		t.Errorf("the ANALYZE fix: %+v", an)
	}
}

// TestParseTry: --try's NAME:SQL, the SQL kept as given (colons and
// all); a spec without the colon, a name or SQL, or with a name that
// cannot name a file, is refused.
func TestParseTry(t *testing.T) {
	for _, tc := range []struct {
		spec, name, sql, err string
	}{
		{"n_idx:CREATE INDEX ON items (n)", "try-n_idx", "CREATE INDEX ON items (n)", ""},
		{" cast : SELECT 1::int ", "try-cast", "SELECT 1::int", ""},
		{"CREATE INDEX ON items (n)", "", "", "want NAME:SQL"},
		{":CREATE INDEX ON items (n)", "", "", "the name before ':' is empty"},
		{"n_idx:  ", "", "", "the SQL after ':' is empty"},
		{"my index:CREATE INDEX ON items (n)", "", "", "letters, digits"},
		{"../x:SELECT 1", "", "", "letters, digits"},
		{strings.Repeat("a", 61) + ":SELECT 1", "", "", "longer than 60"},
	} {
		f, err := ParseTry(tc.spec)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseTry(%q) = %+v, %v; want an error with %q", tc.spec, f, err, tc.err)
		case tc.err == "" && (err != nil || f.Name != tc.name || f.SQL != tc.sql || f.Kind != Statement || f.Origin != OriginTry):
			t.Errorf("ParseTry(%q) = %+v, %v; want %s: %s", tc.spec, f, err, tc.name, tc.sql)
		}
	}
}

// FuzzParseTry: whatever the spec, a fix read has a name that names a
// file, and SQL.
func FuzzParseTry(f *testing.F) {
	for _, s := range []string{"n_idx:CREATE INDEX ON items (n)", "a:b:c", ":", "x:", "é:SELECT 1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fix, err := ParseTry(spec)
		if err != nil {
			return
		}
		if !strings.HasPrefix(fix.Name, TryPrefix) || fileSafe(fix.Name) != fix.Name || len(fix.Name) > len(TryPrefix)+maxTryName || fix.SQL == "" {
			t.Errorf("ParseTry(%q) = %+v", spec, fix)
		}
	})
}

// TestPlanHOT: an index on the candidate only that stops HOT updates is
// dropped from the copy, schema-qualified as its table, for the work
// regression it causes; one that the control has under another
// definition is not (its verdict: judge's TestFixVerdictHOT).
func TestPlanHOT(t *testing.T) {
	rep, plans := fixestest.HOT()
	got := Plan(rep, plans, 0)
	if len(got) != 1 {
		t.Fatalf("Plan = %+v, want the index to drop", got)
	}
	f := got[0]
	if f.Name != "drop-index-pgbench_accounts_abalance" || f.Kind != DropIndex || !f.Reverts() || f.SQL != `DROP INDEX "public"."pgbench_accounts_abalance"` ||
		f.Relation != "pgbench_accounts" || !slices.Equal(f.Fingerprints, []string{"u"}) || !slices.Equal(f.Databases, []string{"shop"}) {
		t.Errorf("the HOT index's fix: %+v", f)
	}
	if q := qualified("i", `CREATE INDEX i ON ONLY "my schema".t USING btree (a)`); q != "i" {
		t.Errorf("qualified with a quoted schema = %q, want the name as it is", q)
	}
}

// TestPlanStatistics: extended statistics the control has built and the
// candidate lacks are created with the control's definition, then the
// table analyzed; ones the candidate has unbuilt get the ANALYZE alone;
// ones the candidate has and the control lacks altogether are dropped,
// a fix that reverts the change; a column's statistics target that
// differs is set to the control's (-1 for its default) before ANALYZE.
// A cause without what its fix needs gets none.
func TestPlanStatistics(t *testing.T) {
	const def = "CREATE STATISTICS public.t_ab (dependencies) ON a, b FROM t"
	ctlStat := &explain.ExtStat{Schema: "public", Name: "t_ab", Kinds: []string{"f"}, Def: def, Built: true}
	candStat := &explain.ExtStat{Schema: "app", Name: "t_cd", Kinds: []string{"d"}, Def: "CREATE STATISTICS app.t_cd (ndistinct) ON c, d FROM t", Built: true}
	for _, tc := range []struct {
		name    string
		cause   explain.Cause
		want    Fix // Name, Kind, SQL, Relation; zero: no fix
		reverts bool
	}{
		{"control only", explain.Cause{Kind: explain.CauseExtendedStatistics, Side: explain.Candidate, Relation: "t", Setting: "t_ab", Control: def, Statistics: ctlStat},
			Fix{Name: "statistics-t_ab", Kind: CreateStatistics, SQL: def + `; ANALYZE "t"`, Relation: "t"}, false},
		{"unbuilt on the candidate", explain.Cause{Kind: explain.CauseExtendedStatistics, Side: explain.Candidate, Relation: "t", Setting: "t_ab", Control: def,
			Candidate: def, Statistics: ctlStat},
			Fix{Name: "analyze-t", Kind: Analyze, SQL: `ANALYZE "t"`, Relation: "t"}, false},
		{"candidate only", explain.Cause{Kind: explain.CauseExtendedStatistics, Side: explain.Control, Relation: "t", Setting: "t_cd", Candidate: candStat.Def, Statistics: candStat},
			Fix{Name: "drop-statistics-t_cd", Kind: DropStatistics, SQL: `DROP STATISTICS "app"."t_cd"`, Relation: "t"}, true},
		{"candidate only, unbuilt on the control", explain.Cause{Kind: explain.CauseExtendedStatistics, Side: explain.Control, Relation: "t", Setting: "t_cd",
			Control: "CREATE STATISTICS app.t_cd (ndistinct) ON c, e FROM t", Candidate: candStat.Def, Statistics: candStat}, Fix{}, false},
		{"no definition", explain.Cause{Kind: explain.CauseExtendedStatistics, Side: explain.Candidate, Relation: "t", Setting: "t_ab"}, Fix{}, false},
		{"target set on the control", explain.Cause{Kind: explain.CauseStatisticsTarget, Relation: "t", Columns: []string{"a"}, Control: "1000", Candidate: "default",
			Target: &explain.StatisticsTarget{Column: "a", Control: 1000, Candidate: explain.DefaultTarget}},
			Fix{Name: "statistics-target-t.a", Kind: StatisticsTarget, SQL: `ALTER TABLE "t" ALTER COLUMN "a" SET STATISTICS 1000; ANALYZE "t"`, Relation: "t"}, false},
		{"target set on the candidate", explain.Cause{Kind: explain.CauseStatisticsTarget, Relation: "t", Columns: []string{"Odd col"}, Control: "default", Candidate: "10",
			Target: &explain.StatisticsTarget{Column: "Odd col", Control: explain.DefaultTarget, Candidate: 10}},
			Fix{Name: "statistics-target-t.Odd_col", Kind: StatisticsTarget, SQL: `ALTER TABLE "t" ALTER COLUMN "Odd col" SET STATISTICS -1; ANALYZE "t"`, Relation: "t"}, false},
		{"target without its values", explain.Cause{Kind: explain.CauseStatisticsTarget, Relation: "t", Columns: []string{"a"}, Control: "1000", Candidate: "default"}, Fix{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := fixestest.Report(fixestest.Query("a", "SELECT v FROM t WHERE a = $1 AND b = $2 ORDER BY id LIMIT $3", compare.StatusRegressed, 900, 5, 9))
			plans := &explain.Report{Outcomes: []explain.Outcome{{Fingerprint: "a", Database: "app", Causes: []explain.Cause{tc.cause}}}}
			got := Plan(rep, plans, 0)
			if tc.want.Name == "" {
				if len(got) != 0 {
					t.Errorf("Plan = %+v, want no fix", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("Plan = %+v, want one fix", got)
			}
			f := got[0]
			if f.Name != tc.want.Name || f.Kind != tc.want.Kind || f.SQLIn("x") != tc.want.SQL || f.Relation != tc.want.Relation || f.Origin != OriginPlans ||
				!slices.Equal(f.Databases, []string{"app"}) || !slices.Equal(f.Fingerprints, []string{"a"}) || f.Reverts() != tc.reverts {
				t.Errorf("fix %+v (reverts %v), want %+v (reverts %v)", f, f.Reverts(), tc.want, tc.reverts)
			}
		})
	}
}
