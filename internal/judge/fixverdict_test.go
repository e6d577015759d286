package judge

import (
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/fixes/fixestest"
)

// The tests of a fix's verdict (fixVerdict) on comparisons made up by
// hand: what the fix is for, its costs, what it changed.

// q and report make up the queries and comparisons; fixes' tests of
// the fixes planned share them (fixestest).
var q, report = fixestest.Query, fixestest.Report

// TestFixVerdict: the regression within noise with the fix is verified;
// still regressed but with an interval below the one without, partial
// with the share of its time recovered; overlapping, no effect. A query
// that regressed with the fix only is its cost; one regressed before too
// is not. The writes of its relation are compared with the candidate
// without it.
func TestFixVerdict(t *testing.T) {
	fix := fixes.Fix{Name: "index-customers_email_idx", Kind: fixes.CreateIndex, SQL: fixestest.IndexDef, Relation: "customers", Fingerprints: []string{"a"}}
	before := report(
		q("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 1000, 100, 400),
		q("o", "SELECT count(*) FROM orders", compare.StatusRegressed, 300, 2, 3),
		q("i", "INSERT INTO customers (id, email) VALUES ($1, $2)", compare.StatusImproved, -10, 0.5, 0.8),
	)
	for _, tc := range []struct {
		name       string
		with       compare.QueryDiff
		delta      compare.QueryDiff
		want       fixes.Status
		recovered  float64
		writeSlows bool
	}{
		{"verified", q("a", "", compare.StatusUnchanged, 3, 0.8, 1.3), faster("a", -900, 0.01, 0.02), fixes.Verified, 100, false},
		{"partial", q("a", "", compare.StatusRegressed, 250, 3, 20), faster("a", -700, 0.1, 0.3), fixes.Partial, 75, true},
		{"no effect", q("a", "", compare.StatusRegressed, 900, 90, 300), q("a", "", compare.StatusUnchanged, -100, 0.7, 1.2), fixes.NoEffect, 10, false},
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
			o := fixVerdict(fix, before, with, delta)
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

// TestFixVerdictDelta: a query still flagged against the control with the fix
// is judged by the figure that regressed and by the direct comparison
// with the candidate without the fix (delta), so that the verdict never
// contradicts its figures. The first case is CI's: the mean from 49.27x
// (12.83-243) to ~3.49x (0.85-17.06), +816 ms to +10.4 ms per run, one
// slow call in the tail still flagged: verified (the mean back within
// noise), the tail said as remaining, 98.7% recovered; never "no effect".
func TestFixVerdictDelta(t *testing.T) {
	const text = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
	mean := func(ratio, low, high float64, change compare.Change, beyond bool) compare.Effect {
		return compare.Effect{Estimate: compare.Estimate{Ratio: ratio, Low: low, High: high, Change: change, Beyond: beyond}}
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
		want          fixes.Status
		recovered     float64
		remains       compare.Metric
		deltaReported bool
	}{
		{"CI: mean back within noise, one slow call in the tail", beforeMean,
			diff(compare.StatusTailRegressed, compare.MetricP95, 10.4, mean(3.49, 0.85, 17.06, compare.ChangeNone, false), mean(30, 5, 90, compare.ChangeSlower, true)),
			diff(compare.StatusImproved, "", -800, mean(0.02, 0.005, 0.07, compare.ChangeFaster, true), none),
			fixes.Verified, 98.7, compare.MetricP95, true},
		{"mean back within noise, delta within noise too", beforeMean,
			diff(compare.StatusTailRegressed, compare.MetricP95, 10.4, mean(3.49, 0.85, 17.06, compare.ChangeNone, false), mean(30, 5, 90, compare.ChangeSlower, true)),
			diff(compare.StatusUnchanged, "", -800, mean(0.3, 0.05, 1.4, compare.ChangeNone, false), none),
			fixes.Verified, 98.7, compare.MetricP95, true},
		{"mean still slower, intervals overlap, faster than without beyond noise", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 17.06, compare.ChangeSlower, true), none),
			diff(compare.StatusImproved, "", -500, mean(0.3, 0.1, 0.6, compare.ChangeFaster, true), none),
			fixes.Partial, 63.2, "", true},
		{"mean still slower, intervals overlap, delta within noise", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 17.06, compare.ChangeSlower, true), none),
			diff(compare.StatusUnchanged, "", -500, mean(0.3, 0.05, 1.4, compare.ChangeNone, false), none),
			fixes.NoEffect, 63.2, "", true},
		{"interval below the one without, delta within noise", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 10, compare.ChangeSlower, true), none),
			diff(compare.StatusUnchanged, "", -500, mean(0.3, 0.05, 1.4, compare.ChangeNone, false), none),
			fixes.Partial, 63.2, "", true},
		{"faster than without beyond noise, but no time came back against the control", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 900, mean(50, 13, 250, compare.ChangeSlower, true), none),
			diff(compare.StatusImproved, "", -20, mean(0.9, 0.85, 0.95, compare.ChangeFaster, true), none),
			fixes.NoEffect, -10.3, "", true},
		{"tail regression, tail still slower, tail faster than without", beforeTail,
			diff(compare.StatusTailRegressed, compare.MetricP95, 100, none, mean(3, 2, 6, compare.ChangeSlower, true)),
			diff(compare.StatusSmallChange, "", -300, none, mean(0.3, 0.2, 0.5, compare.ChangeFaster, true)),
			fixes.Partial, 75, "", true},
		{"tail regression, tail back within noise, the mean slower now", beforeTail,
			diff(compare.StatusRegressed, compare.MetricMean, 100, mean(3, 2, 6, compare.ChangeSlower, true), mean(1.2, 0.8, 2, compare.ChangeNone, false)),
			diff(compare.StatusSmallChange, "", -300, none, mean(0.3, 0.2, 0.5, compare.ChangeFaster, true)),
			fixes.Partial, 75, "", true},
		{"no delta for the query", beforeMean,
			diff(compare.StatusRegressed, compare.MetricMean, 300, mean(6, 3, 17.06, compare.ChangeSlower, true), none),
			compare.QueryDiff{Fingerprint: "other"},
			fixes.NoEffect, 63.2, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fix := fixes.Fix{Name: "index-x", Kind: fixes.CreateIndex, Relation: "pgbench_accounts", Fingerprints: []string{"a"}}
			o := fixVerdict(fix, report(tc.before), report(tc.with), report(tc.delta))
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
			if fq.Status == fixes.NoEffect && fq.Delta != nil && fq.Delta.Change == compare.ChangeFaster && fq.Delta.Beyond && fq.RecoveredPct > 0 {
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

// TestFixVerdictCostElsewhere: an index on customers, and in the fix's rounds
// a slowdown of a query on accounts, which the index cannot reach
// (Elsewhere). Issue 57: such a query is a cost only when the comparison
// with the control is at the family's level (three rounds a side with
// the calls' histograms: FamilyLevel); with two rounds a side, or
// without histograms, it is within noise (WithinNoise), never a cost.
// The update of customers stays a plain cost either way, and a setting
// reaches every query, so none of its costs is elsewhere.
func TestFixVerdictCostElsewhere(t *testing.T) {
	before := report(q("a", "SELECT id FROM customers WHERE email = $1", compare.StatusRegressed, 1000, 100, 400))
	delta := report(q("a", "", compare.StatusImproved, -900, 0.01, 0.02))
	index := fixes.Fix{Name: "index-customers_email_idx", Kind: fixes.CreateIndex, SQL: fixestest.IndexDef, Relation: "customers", Fingerprints: []string{"a"}}
	setting := fixes.Fix{Name: "setting-random_page_cost", Kind: fixes.SetDatabase, Relation: "customers", Fingerprints: []string{"a"}}
	for _, tc := range []struct {
		name      string
		fix       fixes.Fix
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
		o := fixVerdict(tc.fix, before, with, delta)
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

// TestFixVerdictTry: the user's own fix is aimed at every regression (the
// latency's and the server work's); against the candidate without it,
// the query it made faster and the one it made slower are both named,
// the slower first, each with its mean against the control; one within
// noise is not. With no regression at all, it is "tried", not "no
// effect".
func TestFixVerdictTry(t *testing.T) {
	try, err := fixes.ParseTry("n_idx:CREATE INDEX ON items (n)")
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
	aimed := fixes.Aim(try, before)
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
	o := fixVerdict(aimed, before, with, delta)
	if len(o.Changes) != 2 {
		t.Fatalf("changes %+v, want the faster and the slower query", o.Changes)
	}
	slower, fast := o.Changes[0], o.Changes[1]
	if slower.Fingerprint != "b" || slower.Direction != fixes.Slower || slower.Effect == nil || slower.Effect.Low != 4 || slower.Control == nil || slower.ControlStatus != compare.StatusRegressed {
		t.Errorf("the slower query: %+v", slower)
	}
	if fast.Fingerprint != "a" || fast.Direction != fixes.Faster || fast.Effect == nil || fast.Effect.High != 0.3 || fast.Control == nil || fast.ControlStatus != compare.StatusUnchanged {
		t.Errorf("the faster query: %+v", fast)
	}
	if len(o.Costs) != 1 || o.Costs[0].Fingerprint != "b" {
		t.Errorf("costs %+v, want the query it made regress against the control", o.Costs)
	}
	// No regression: tried, with its changes.
	none := fixVerdict(fixes.Aim(try, report(q("c", "SELECT 1", compare.StatusUnchanged, 0, 0.9, 1.1))), before, with, delta)
	if none.Status != fixes.Tried || len(none.Queries) != 0 || len(none.Changes) != 2 {
		t.Errorf("with no regression: %s, %d queries, %d changes; want tried with both changes", none.Status, len(none.Queries), len(none.Changes))
	}
	// The plans' fixes carry no changes (their JSON is as it was).
	if plain := fixVerdict(fixes.Fix{Name: "index-x", Origin: fixes.OriginPlans, Fingerprints: []string{"a"}}, before, with, delta); plain.Changes != nil {
		t.Errorf("a plans' fix has changes: %+v", plain.Changes)
	}
}

// TestFixVerdictHOT: the drop of an index on the candidate only that
// stops HOT updates (fixes.Plan, fixes' TestPlanHOT), judged on the
// update's WAL per call: back within noise is verified, less but still
// more is partial with the share of the WAL added taken back, as before
// is no effect.
func TestFixVerdictHOT(t *testing.T) {
	rep, plans := fixestest.HOT()
	got := fixes.Plan(rep, plans, 0)
	if len(got) != 1 {
		t.Fatalf("Plan = %+v, want the index to drop", got)
	}
	f := got[0]
	if f.Name != "drop-index-pgbench_accounts_abalance" || f.Kind != fixes.DropIndex || !f.Reverts() || f.SQL != `DROP INDEX "public"."pgbench_accounts_abalance"` ||
		f.Relation != "pgbench_accounts" || !slices.Equal(f.Fingerprints, []string{"u"}) || !slices.Equal(f.Databases, []string{"shop"}) {
		t.Errorf("the HOT index's fix: %+v", f)
	}
	for _, tc := range []struct {
		name string
		with compare.WorkEffect
		st   compare.Status
		want fixes.Status
	}{
		{"back within noise", compare.WorkEffect{Estimate: compare.Estimate{Ratio: 1.01, Low: 0.97, High: 1.05, Change: compare.ChangeNone}}, compare.StatusUnchanged, fixes.Verified},
		{"less, still more", compare.WorkEffect{Estimate: compare.Estimate{Ratio: 1.8, Low: 1.7, High: 1.9, Change: compare.ChangeMore}, Delta: 60}, compare.StatusMoreWork, fixes.Partial},
		{"as before", compare.WorkEffect{Estimate: compare.Estimate{Ratio: 2.8, Low: 2.6, High: 3.0, Change: compare.ChangeMore}, Delta: 140}, compare.StatusMoreWork, fixes.NoEffect},
	} {
		w := rep.Queries[0]
		w.Status, w.Work = tc.st, &compare.QueryWork{WALBytes: tc.with}
		if tc.st == compare.StatusMoreWork {
			w.Work.More = compare.MetricWALBytes
		}
		with := report()
		with.Queries = []compare.QueryDiff{w}
		o := fixVerdict(f, rep, with, report())
		if o.Status != tc.want || len(o.Queries) != 1 || o.Queries[0].WorkMetric != compare.MetricWALBytes || o.Queries[0].WorkBefore == nil || o.Queries[0].WorkWith == nil {
			t.Errorf("%s: %s %+v, want %s with the WAL per call", tc.name, o.Status, o.Queries, tc.want)
		}
		if tc.want == fixes.Partial && o.RecoveredPct != 60 {
			t.Errorf("%s: %.1f%% recovered, want 60%% of the WAL added per call", tc.name, o.RecoveredPct)
		}
	}
}

// TestFixVerdictFinding: a finding's fix (fixes.FromFindings) whose
// queries regressed nothing is tried, judged by what it changed.
func TestFixVerdictFinding(t *testing.T) {
	poll, rep, cmpRep := fixestest.Findings()
	planned := []fixes.Fix{{Name: "index-orders_customer_idx", Kind: fixes.CreateIndex, Relation: "orders"}}
	got := fixes.FromFindings(rep, cmpRep, "app", planned)
	if len(got) != 1 {
		t.Fatalf("FromFindings = %+v, want the jobs index alone", got)
	}
	f := got[0]
	// Nothing regressed: tried, judged by what it changed.
	f.Fingerprints, f.AddedMS = []string{}, 0
	same := report(q("poll", poll.Query, compare.StatusUnchanged, 0, 0.9, 1.1))
	faster := q("poll", poll.Query, compare.StatusImproved, -600, 0.1, 0.2)
	faster.Effects.Mean.Change = compare.ChangeFaster
	o := fixVerdict(f, same, same, report(faster))
	if o.Status != fixes.Tried || len(o.Changes) != 1 || o.Changes[0].Direction != fixes.Faster || !f.JudgedByChanges() {
		t.Errorf("the finding's fix judged: %s, changes %+v", o.Status, o.Changes)
	}
}
