package fixes

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
)

const indexDef = "CREATE INDEX customers_email_idx ON public.customers USING btree (email)"

// q is a query of a comparison with its status, time added and the
// interval of its mean.
func q(fp, text string, st compare.Status, added, low, high float64) compare.QueryDiff {
	e := compare.Effect{Ratio: (low + high) / 2, Low: low, High: high, Change: compare.ChangeSlower}
	if low <= 1 && high >= 1 {
		e.Change = compare.ChangeNone
	}
	d := compare.QueryDiff{Fingerprint: fp, Query: text, Status: st, ImpactMS: added, Effects: &compare.Effects{Mean: e}}
	if st.Regression() {
		d.Regressed = compare.MetricMean
	}
	return d
}

func report(qs ...compare.QueryDiff) *compare.Report {
	r := &compare.Report{Queries: qs}
	for _, d := range qs {
		if d.Status.Regression() {
			r.RegressionsByAddedTime = append(r.RegressionsByAddedTime, d.Fingerprint)
		}
	}
	return r
}

// TestPlan: a regression whose cause is an index missing on the
// candidate, with the control's definition, gets the control's CREATE
// INDEX, once however many queries it is for, in each of their
// databases; other causes, and a cause without the definition, get none;
// the largest time added goes first and max bounds them.
func TestPlan(t *testing.T) {
	rep := report(
		q("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 900, 5, 9),
		q("b", "SELECT count(*) FROM orders WHERE customer_id = $1", compare.StatusRegressed, 500, 2, 3),
		q("c", "SELECT name FROM customers WHERE email = $1", compare.StatusRegressed, 100, 2, 3),
		q("d", "SELECT 1", compare.StatusRegressed, 50, 2, 3),
		q("e", "SELECT * FROM t", compare.StatusUnchanged, 0, 0.9, 1.1),
	)
	missing := explain.Cause{Kind: explain.CauseIndexMissing, Side: explain.Candidate, Relation: "customers", Index: "customers_email_idx", Control: indexDef}
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
	if f.Name != "index-customers_email_idx" || f.Kind != CreateIndex || f.SQL != indexDef || f.Relation != "customers" ||
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
	if none := Plan(report(q("e", "SELECT * FROM t", compare.StatusUnchanged, 0, 0.9, 1.1)), plans, 0); len(none) != 0 {
		t.Errorf("Plan without regressions = %+v", none)
	}
}

// TestJudge: the regression within noise with the fix is verified;
// still regressed but with an interval below the one without, partial
// with the share of its time recovered; overlapping, no effect. A query
// that regressed with the fix only is its cost; one regressed before too
// is not. The writes of its relation are compared with the candidate
// without it.
func TestJudge(t *testing.T) {
	fix := Fix{Name: "index-customers_email_idx", Kind: CreateIndex, SQL: indexDef, Relation: "customers", Fingerprints: []string{"a"}}
	before := report(
		q("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 1000, 100, 400),
		q("o", "SELECT count(*) FROM orders", compare.StatusRegressed, 300, 2, 3),
		q("i", "INSERT INTO customers (id, email) VALUES ($1, $2)", compare.StatusImproved, -10, 0.5, 0.8),
	)
	for _, tc := range []struct {
		name       string
		with       compare.QueryDiff
		delta      compare.QueryDiff
		want       Status
		recovered  float64
		writeSlows bool
	}{
		{"verified", q("a", "", compare.StatusUnchanged, 3, 0.8, 1.3), faster("a", -900, 0.01, 0.02), Verified, 100, false},
		{"partial", q("a", "", compare.StatusRegressed, 250, 3, 20), faster("a", -700, 0.1, 0.3), Partial, 75, true},
		{"no effect", q("a", "", compare.StatusRegressed, 900, 90, 300), q("a", "", compare.StatusUnchanged, -100, 0.7, 1.2), NoEffect, 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := report(tc.with,
				q("o", "SELECT count(*) FROM orders", compare.StatusRegressed, 280, 2, 3),
				q("u", "UPDATE customers SET name = $1 WHERE id = $2", compare.StatusRegressed, 40, 1.5, 2),
				q("i", "INSERT INTO customers (id, email) VALUES ($1, $2)", compare.StatusUnchanged, 1, 0.9, 1.2))
			insert := q("i", "INSERT INTO customers (id, email) VALUES ($1, $2)", compare.StatusUnchanged, 1, 0.95, 1.6)
			if tc.writeSlows {
				insert = q("i", "INSERT INTO customers (id, email) VALUES ($1, $2)", compare.StatusRegressed, 12, 1.3, 1.6)
			}
			delta := report(tc.delta, insert,
				q("o", "SELECT count(*) FROM orders", compare.StatusUnchanged, 0, 0.9, 1.1),
				q("u", "UPDATE customers SET name = $1 WHERE id = $2", compare.StatusUnchanged, 0, 0.9, 1.1))
			o := Judge(fix, before, with, delta)
			if o.Status != tc.want || len(o.Queries) != 1 || o.Queries[0].Status != tc.want || o.RecoveredPct != tc.recovered {
				t.Errorf("Judge = %s %.1f%% %+v, want %s %.0f%%", o.Status, o.RecoveredPct, o.Queries, tc.want, tc.recovered)
			}
			if fq := o.Queries[0]; fq.Before == nil || fq.With == nil || fq.Before.Low != 100 || fq.AddedMSBefore != 1000 {
				t.Errorf("the query's figures: %+v", fq)
			}
			if len(o.Costs) != 1 || o.Costs[0].Fingerprint != "u" {
				t.Errorf("costs %+v, want the update of customers only (the orders' regressed without the fix too)", o.Costs)
			}
			if len(o.Writes) != 2 || o.Writes[0].Fingerprint != "i" || o.Writes[0].Beyond != tc.writeSlows || o.Writes[0].Mean == nil || o.Writes[1].Fingerprint != "u" {
				t.Errorf("writes %+v, want the insert (beyond noise: %v) and the update of customers", o.Writes, tc.writeSlows)
			}
		})
	}
}

// faster is a query of a comparison whose mean is faster beyond noise
// (the candidate without a fix against with it), by the interval given.
func faster(fp string, added, low, high float64) compare.QueryDiff {
	d := q(fp, "", compare.StatusImproved, added, low, high)
	d.Effects.Mean.Change, d.Effects.Mean.Beyond = compare.ChangeFaster, true
	return d
}

// TestJudgeDelta: a query still flagged against the control with the fix
// is judged by the figure that regressed and by the direct comparison
// with the candidate without the fix (delta), so that the verdict never
// contradicts its figures. The first case is CI's: the mean from 49.27x
// (12.83-243) to ~3.49x (0.85-17.06), +816 ms to +10.4 ms per run, one
// slow call in the tail still flagged: verified (the mean back within
// noise), the tail said as remaining, 98.7% recovered; never "no effect".
func TestJudgeDelta(t *testing.T) {
	const text = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
	mean := func(ratio, low, high float64, change compare.Change, beyond bool) compare.Effect {
		return compare.Effect{Ratio: ratio, Low: low, High: high, Change: change, Beyond: beyond}
	}
	diff := func(st compare.Status, metric compare.Metric, added float64, m, p95 compare.Effect) compare.QueryDiff {
		return compare.QueryDiff{Fingerprint: "a", Query: text, Status: st, Regressed: metric, ImpactMS: added,
			Effects: &compare.Effects{Mean: m, P95: p95}}
	}
	none := mean(1, 0.9, 1.1, compare.ChangeNone, false)
	beforeMean := diff(compare.StatusRegressed, compare.MetricMean, 816, mean(49.27, 12.83, 243, compare.ChangeSlower, true), none)
	beforeTail := diff(compare.StatusTailRegressed, compare.MetricP95, 400, none, mean(8, 4, 20, compare.ChangeSlower, true))
	for _, tc := range []struct {
		name          string
		before, with  compare.QueryDiff
		delta         compare.QueryDiff
		want          Status
		recovered     float64
		remains       compare.Metric
		deltaReported bool
	}{
		{"CI: mean back within noise, one slow call in the tail", beforeMean,
			diff(compare.StatusTailRegressed, compare.MetricP95, 10.4, mean(3.49, 0.85, 17.06, compare.ChangeNone, false), mean(30, 5, 90, compare.ChangeSlower, true)),
			diff(compare.StatusImproved, "", -800, mean(0.02, 0.005, 0.07, compare.ChangeFaster, true), none),
			Verified, 98.7, compare.MetricP95, true},
		{"mean back within noise, delta within noise too", beforeMean,
			diff(compare.StatusTailRegressed, compare.MetricP95, 10.4, mean(3.49, 0.85, 17.06, compare.ChangeNone, false), mean(30, 5, 90, compare.ChangeSlower, true)),
			diff(compare.StatusUnchanged, "", -800, mean(0.3, 0.05, 1.4, compare.ChangeNone, false), none),
			Verified, 98.7, compare.MetricP95, true},
		{"mean still slower, intervals overlap, faster than without beyond noise", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 17.06, compare.ChangeSlower, true), none),
			diff(compare.StatusImproved, "", -500, mean(0.3, 0.1, 0.6, compare.ChangeFaster, true), none),
			Partial, 63.2, "", true},
		{"mean still slower, intervals overlap, delta within noise", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 17.06, compare.ChangeSlower, true), none),
			diff(compare.StatusUnchanged, "", -500, mean(0.3, 0.05, 1.4, compare.ChangeNone, false), none),
			NoEffect, 63.2, "", true},
		{"interval below the one without, delta within noise", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 10, compare.ChangeSlower, true), none),
			diff(compare.StatusUnchanged, "", -500, mean(0.3, 0.05, 1.4, compare.ChangeNone, false), none),
			Partial, 63.2, "", true},
		{"faster than without beyond noise, but no time came back against the control", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 900, mean(50, 13, 250, compare.ChangeSlower, true), none),
			diff(compare.StatusImproved, "", -20, mean(0.9, 0.85, 0.95, compare.ChangeFaster, true), none),
			NoEffect, -10.3, "", true},
		{"tail regression, tail still slower, tail faster than without", beforeTail,
			diff(compare.StatusTailRegressed, compare.MetricP95, 100, none, mean(3, 2, 6, compare.ChangeSlower, true)),
			diff(compare.StatusSmallChange, "", -300, none, mean(0.3, 0.2, 0.5, compare.ChangeFaster, true)),
			Partial, 75, "", true},
		{"tail regression, tail back within noise, the mean slower now", beforeTail,
			diff(compare.StatusRegressed, compare.MetricMean, 100, mean(3, 2, 6, compare.ChangeSlower, true), mean(1.2, 0.8, 2, compare.ChangeNone, false)),
			diff(compare.StatusSmallChange, "", -300, none, mean(0.3, 0.2, 0.5, compare.ChangeFaster, true)),
			Partial, 75, "", true},
		{"no delta for the query", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 17.06, compare.ChangeSlower, true), none),
			compare.QueryDiff{Fingerprint: "other"},
			NoEffect, 63.2, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fix := Fix{Name: "index-x", Kind: CreateIndex, Relation: "pgbench_accounts", Fingerprints: []string{"a"}}
			o := Judge(fix, report(tc.before), report(tc.with), report(tc.delta))
			if len(o.Queries) != 1 {
				t.Fatalf("Judge: queries %+v", o.Queries)
			}
			fq := o.Queries[0]
			if o.Status != tc.want || fq.Status != tc.want || fq.Remains != tc.remains || (fq.Delta != nil) != tc.deltaReported {
				t.Errorf("Judge = %s (query %s, remains %q, delta %+v), want %s (remains %q)", o.Status, fq.Status, fq.Remains, fq.Delta, tc.want, tc.remains)
			}
			if got := float64(int(fq.RecoveredPct*10+0.5*sign(fq.RecoveredPct))) / 10; got != tc.recovered {
				t.Errorf("recovered %.2f%%, want %.1f%%", fq.RecoveredPct, tc.recovered)
			}
			if tc.remains != "" && (fq.RemainsWith == nil || fq.AddedMSWith != tc.with.ImpactMS) {
				t.Errorf("the figure that remains: %+v, added with %.1f ms; want its effect and the time it still adds", fq.RemainsWith, fq.AddedMSWith)
			}
			if fq.Status == NoEffect && fq.Delta != nil && fq.Delta.Change == compare.ChangeFaster && fq.Delta.Beyond && fq.RecoveredPct > 0 {
				t.Errorf("no effect next to a figure faster beyond noise with %.1f%% recovered", fq.RecoveredPct)
			}
		})
	}
}

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

// TestJudgeCostElsewhere: an index on customers, and in the fix's rounds
// a slowdown of a query on accounts, which the index cannot reach
// (Elsewhere). Issue 57: such a query is a cost only when the comparison
// with the control is at the family's level (three rounds a side with
// the calls' histograms: FamilyLevel); with two rounds a side, or
// without histograms, it is within noise (WithinNoise), never a cost.
// The update of customers stays a plain cost either way, and a setting
// reaches every query, so none of its costs is elsewhere.
func TestJudgeCostElsewhere(t *testing.T) {
	before := report(q("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 1000, 100, 400))
	delta := report(q("a", "", compare.StatusImproved, -900, 0.01, 0.02))
	index := Fix{Name: "index-customers_email_idx", Kind: CreateIndex, SQL: indexDef, Relation: "customers", Fingerprints: []string{"a"}}
	setting := Fix{Name: "setting-random_page_cost", Kind: SetDatabase, Relation: "customers", Fingerprints: []string{"a"}}
	for _, tc := range []struct {
		name      string
		fix       Fix
		measured  bool
		warnings  []compare.Warning
		costs     map[string]bool // fingerprint: elsewhere
		withinFPs []string
	}{
		{"index, 3 rounds a side", index, true, nil, map[string]bool{"u": false, "b": true}, nil},
		{"index, 2 rounds a side", index, false, []compare.Warning{{Kind: compare.WarnNoiseNotMeasured}}, map[string]bool{"u": false}, []string{"b"}},
		{"index, no histograms", index, true, []compare.Warning{{Kind: compare.WarnNoHistograms}}, map[string]bool{"u": false}, []string{"b"}},
		{"setting, 2 rounds a side", setting, false, nil, map[string]bool{"u": false, "b": false}, nil},
	} {
		with := report(q("a", "", compare.StatusUnchanged, 3, 0.8, 1.3),
			q("u", "UPDATE customers SET name = $1 WHERE id = $2", compare.StatusRegressed, 40, 1.5, 2),
			q("b", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", compare.StatusRegressed, 190, 1.26, 24.43))
		with.Noise.Measured, with.Warnings = tc.measured, tc.warnings
		if FamilyLevel(with) != (tc.measured && len(tc.warnings) == 0) {
			t.Errorf("%s: FamilyLevel %v", tc.name, FamilyLevel(with))
		}
		o := Judge(tc.fix, before, with, delta)
		if len(o.Costs) != len(tc.costs) {
			t.Errorf("%s: costs %+v, want %v", tc.name, o.Costs, tc.costs)
		}
		for _, c := range o.Costs {
			elsewhere, ok := tc.costs[c.Fingerprint]
			if !ok || c.Elsewhere != elsewhere || c.Effect == nil || c.Effect.Low == 0 {
				t.Errorf("%s: cost %s elsewhere %v effect %+v, want %v", tc.name, c.Fingerprint, c.Elsewhere, c.Effect, tc.costs)
			}
		}
		var within []string
		for _, c := range o.WithinNoise {
			within = append(within, c.Fingerprint)
			if !c.Elsewhere || c.Effect == nil {
				t.Errorf("%s: within noise %+v: want a query elsewhere, with its interval", tc.name, c)
			}
		}
		if !slices.Equal(within, tc.withinFPs) {
			t.Errorf("%s: within noise %v, want %v", tc.name, within, tc.withinFPs)
		}
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
	rep := report(
		q("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 900, 5, 9),
		q("b", "SELECT * FROM orders", compare.StatusRegressed, 500, 2, 3),
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

// TestJudgeTry: the user's own fix is aimed at every regression (the
// latency's and the server work's); against the candidate without it,
// the query it made faster and the one it made slower are both named,
// the slower first, each with its mean against the control; one within
// noise is not. With no regression at all, it is "tried", not "no
// effect".
func TestJudgeTry(t *testing.T) {
	try, err := ParseTry("n_idx:CREATE INDEX ON items (n)")
	if err != nil {
		t.Fatal(err)
	}
	before := report(
		q("a", "SELECT v FROM items WHERE n = $1", compare.StatusRegressed, 800, 3, 5),
		q("b", "SELECT v FROM items WHERE m = $1 ORDER BY n LIMIT $2", compare.StatusUnchanged, 0, 0.9, 1.1),
		q("c", "SELECT 1", compare.StatusUnchanged, 0, 0.9, 1.1),
	)
	before.MoreWork = []string{"w"}
	before.Queries = append(before.Queries, compare.QueryDiff{Fingerprint: "w", Query: "UPDATE items SET n = n + 1 WHERE id = $1", Status: compare.StatusMoreWork, ImpactMS: -1})
	aimed := Aim(try, before)
	if !slices.Equal(aimed.Fingerprints, []string{"a", "w"}) || aimed.AddedMS != 800 {
		t.Fatalf("Aim = %+v, want the regression and the work regression", aimed)
	}
	with := report(
		q("a", "SELECT v FROM items WHERE n = $1", compare.StatusUnchanged, 1, 0.9, 1.2),
		q("b", "SELECT v FROM items WHERE m = $1 ORDER BY n LIMIT $2", compare.StatusRegressed, 300, 4, 6),
		q("c", "SELECT 1", compare.StatusUnchanged, 0, 0.9, 1.1),
	)
	faster := q("a", "SELECT v FROM items WHERE n = $1", compare.StatusImproved, -790, 0.2, 0.3)
	faster.Effects.Mean.Change = compare.ChangeFaster
	delta := report(faster,
		q("b", "SELECT v FROM items WHERE m = $1 ORDER BY n LIMIT $2", compare.StatusRegressed, 300, 4, 6),
		q("c", "SELECT 1", compare.StatusUnchanged, 0, 0.9, 1.1),
	)
	o := Judge(aimed, before, with, delta)
	if len(o.Changes) != 2 {
		t.Fatalf("changes %+v, want the faster and the slower query", o.Changes)
	}
	slower, fast := o.Changes[0], o.Changes[1]
	if slower.Fingerprint != "b" || slower.Direction != Slower || slower.Effect == nil || slower.Effect.Low != 4 || slower.Control == nil || slower.ControlStatus != compare.StatusRegressed {
		t.Errorf("the slower query: %+v", slower)
	}
	if fast.Fingerprint != "a" || fast.Direction != Faster || fast.Effect == nil || fast.Effect.High != 0.3 || fast.Control == nil || fast.ControlStatus != compare.StatusUnchanged {
		t.Errorf("the faster query: %+v", fast)
	}
	if len(o.Costs) != 1 || o.Costs[0].Fingerprint != "b" {
		t.Errorf("costs %+v, want the query it made regress against the control", o.Costs)
	}
	// No regression: tried, with its changes.
	none := Judge(Aim(try, report(q("c", "SELECT 1", compare.StatusUnchanged, 0, 0.9, 1.1))), before, with, delta)
	if none.Status != Tried || len(none.Queries) != 0 || len(none.Changes) != 2 {
		t.Errorf("with no regression: %s, %d queries, %d changes; want tried with both changes", none.Status, len(none.Queries), len(none.Changes))
	}
	// The plans' fixes carry no changes (their JSON is as it was).
	if plain := Judge(Fix{Name: "index-x", Origin: OriginPlans, Fingerprints: []string{"a"}}, before, with, delta); plain.Changes != nil {
		t.Errorf("a plans' fix has changes: %+v", plain.Changes)
	}
}

// TestPlanAndJudgeHOT: an index on the candidate only that stops HOT
// updates is dropped from the copy, schema-qualified as its table, for
// the work regression it causes; one that the control has under another
// definition is not. Judged on the update's WAL per call: back within
// noise is verified, and reverting confirms the cause.
func TestPlanAndJudgeHOT(t *testing.T) {
	upd := compare.QueryDiff{Fingerprint: "u", Query: "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", Status: compare.StatusMoreWork,
		Work: &compare.QueryWork{More: compare.MetricWALBytes, WALBytes: compare.WorkEffect{Ratio: 2.9, Low: 2.7, High: 3.1, Change: compare.ChangeMore, Delta: 150}}}
	rep := report()
	rep.Queries, rep.MoreWork = []compare.QueryDiff{upd}, []string{"u"}
	def := "CREATE INDEX pgbench_accounts_abalance ON public.pgbench_accounts USING btree (abalance)"
	plans := &explain.Report{Outcomes: []explain.Outcome{{Fingerprint: "u", Database: "shop", Causes: []explain.Cause{
		{Kind: explain.CauseIndexStopsHOT, Side: explain.Candidate, Relation: "pgbench_accounts", Index: "pgbench_accounts_abalance", Candidate: def, Columns: []string{"abalance"}},
		{Kind: explain.CauseIndexStopsHOT, Side: explain.Candidate, Relation: "pgbench_accounts", Index: "accounts_x", Candidate: "CREATE INDEX accounts_x ON public.pgbench_accounts (abalance, bid)",
			Control: "CREATE INDEX accounts_x ON public.pgbench_accounts (bid)"},
	}}}}
	got := Plan(rep, plans, 0)
	if len(got) != 1 {
		t.Fatalf("Plan = %+v, want the index to drop", got)
	}
	f := got[0]
	if f.Name != "drop-index-pgbench_accounts_abalance" || f.Kind != DropIndex || !f.Reverts() || f.SQL != `DROP INDEX "public"."pgbench_accounts_abalance"` ||
		f.Relation != "pgbench_accounts" || !slices.Equal(f.Fingerprints, []string{"u"}) || !slices.Equal(f.Databases, []string{"shop"}) {
		t.Errorf("the HOT index's fix: %+v", f)
	}
	for _, tc := range []struct {
		name string
		with compare.WorkEffect
		st   compare.Status
		want Status
	}{
		{"back within noise", compare.WorkEffect{Ratio: 1.01, Low: 0.97, High: 1.05, Change: compare.ChangeNone}, compare.StatusUnchanged, Verified},
		{"less, still more", compare.WorkEffect{Ratio: 1.8, Low: 1.7, High: 1.9, Change: compare.ChangeMore, Delta: 60}, compare.StatusMoreWork, Partial},
		{"as before", compare.WorkEffect{Ratio: 2.8, Low: 2.6, High: 3.0, Change: compare.ChangeMore, Delta: 140}, compare.StatusMoreWork, NoEffect},
	} {
		w := upd
		w.Status, w.Work = tc.st, &compare.QueryWork{WALBytes: tc.with}
		if tc.st == compare.StatusMoreWork {
			w.Work.More = compare.MetricWALBytes
		}
		with := report()
		with.Queries = []compare.QueryDiff{w}
		o := Judge(f, rep, with, report())
		if o.Status != tc.want || len(o.Queries) != 1 || o.Queries[0].WorkMetric != compare.MetricWALBytes || o.Queries[0].WorkBefore == nil || o.Queries[0].WorkWith == nil {
			t.Errorf("%s: %s %+v, want %s with the WAL per call", tc.name, o.Status, o.Queries, tc.want)
		}
		if tc.want == Partial && o.RecoveredPct != 60 {
			t.Errorf("%s: %.1f%% recovered, want 60%% of the WAL added per call", tc.name, o.RecoveredPct)
		}
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
			rep := report(q("a", "SELECT v FROM t WHERE a = $1 AND b = $2 ORDER BY id LIMIT $3", compare.StatusRegressed, 900, 5, 9))
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
