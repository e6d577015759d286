package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

func textPlan(t *testing.T, s string) *plan.Plan {
	t.Helper()
	p, err := plan.ParseText(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// explained compares two plans as package explain does.
func explained(t *testing.T, mode explain.Mode, a, b string) explain.Explained {
	pa, pb := textPlan(t, a), textPlan(t, b)
	d := plan.Compare(pa, pb)
	e := explain.Explained{Control: &explain.SidePlan{Mode: mode, Plan: pa}, Candidate: &explain.SidePlan{Mode: mode, Plan: pb}, Diff: d}
	for _, g := range plan.Growths(pa, pb, d) {
		if g.Grew(0.5) {
			e.Growths = append(e.Growths, g)
		}
	}
	return e
}

// plansReport is the demo's dropped index (with a value in its filter),
// a same plan that reads more, and a statement that could not be
// explained.
func plansReport(t *testing.T) *explain.Report {
	lookup := explained(t, explain.ModeCustom,
		`Index Scan using customers_email_idx on customers  (cost=0.41..8.43 rows=1 width=22) (actual time=0.020..0.021 rows=1 loops=1)
  Index Cond: (email = 'bob@example.com'::text)
  Buffers: shared hit=4`,
		`Seq Scan on customers  (cost=0.00..1141.00 rows=1 width=22) (actual time=0.010..9.750 rows=1 loops=1)
  Filter: (email = 'bob@example.com'::text)
  Rows Removed by Filter: 49999
  Buffers: shared hit=516`)
	lookup.Sample = explain.SampleSlowest
	scan := explained(t, explain.ModeLiteral,
		`Aggregate  (cost=4167.00..4167.01 rows=1 width=32) (actual time=40.000..40.001 rows=1 loops=1)
  Buffers: shared hit=1667
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=6) (actual time=0.002..25.000 rows=200000 loops=1)
        Buffers: shared hit=1667`,
		`Aggregate  (cost=4167.00..4167.01 rows=1 width=32) (actual time=95.000..95.001 rows=1 loops=1)
  Buffers: shared hit=16 read=1651
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=6) (actual time=0.002..80.000 rows=200000 loops=1)
        Buffers: shared hit=16 read=1651`)
	return &explain.Report{
		Control:   map[string]*explain.Snapshot{},
		Candidate: map[string]*explain.Snapshot{},
		Outcomes: []explain.Outcome{
			{Fingerprint: "aaaa", Query: "SELECT id, name FROM customers WHERE email = $1", Verdict: explain.PlanChanged,
				Explained: []explain.Explained{lookup},
				Causes: []explain.Cause{{Kind: explain.CauseIndexMissing, Side: explain.Candidate, Relation: "customers", Index: "customers_email_idx",
					Control: "CREATE INDEX customers_email_idx ON public.customers USING btree (email)"}}},
			{Fingerprint: "bbbb", Query: "SELECT sum(total) FROM orders", Verdict: explain.SamePlan, Explained: []explain.Explained{scan},
				Causes: []explain.Cause{{Kind: explain.CauseSetting, Setting: "shared_buffers", Control: "128MB", Candidate: "128kB", Evidence: "reads"}}},
			{Fingerprint: "cccc", Query: "SELECT * FROM tmp_x WHERE id = $1", Verdict: explain.NotCompared, Generic: true,
				Problems: []explain.Problem{{Side: explain.Candidate, Kind: explain.ProblemRelationMissing, Relation: "tmp_x"}}},
		},
	}
}

func TestPlanLines(t *testing.T) {
	rep := plansReport(t)
	want := []string{
		"plan changed: Index Scan (customers_email_idx) -> Seq Scan (customers); cause: index missing on candidate",
		"same plan, slower: Seq Scan (orders) own time 25.0 ms -> 80.0 ms, shared read 0 -> 1,651 blocks; cause: shared_buffers 128MB -> 128kB",
		"not explained: candidate: relation tmp_x does not exist there (a temporary table of a session that is gone, or a schema difference)",
	}
	for i := range rep.Outcomes {
		if got := PlanLine(&rep.Outcomes[i], compare.StatusRegressed); got != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, want[i])
		}
	}
	both := explain.Outcome{Verdict: explain.NotCompared, Problems: []explain.Problem{{Side: explain.Control, Kind: explain.ProblemUtility}, {Side: explain.Candidate, Kind: explain.ProblemUtility}}}
	if got := PlanLine(&both, compare.StatusUnchanged); got != "not explained: DDL or a utility statement, which EXPLAIN cannot plan" {
		t.Errorf("the same reason on both sides: %q", got)
	}
	// A statement without a sample whose normalized text the servers
	// refuse: said once.
	refused := `syntax error at or near "…"`
	none := explain.Outcome{Verdict: explain.NotCompared, Problems: []explain.Problem{{Side: explain.Control, Kind: explain.ProblemNoSample, Message: refused},
		{Side: explain.Candidate, Kind: explain.ProblemNoSample, Message: refused}}}
	if got := PlanLine(&none, compare.StatusUnchanged); got != "not explained: no sample: no execution of it was kept or found in the logs, and its normalized text does not plan: "+refused {
		t.Errorf("no sample: %q", got)
	}
	// Issue 57: the node's time that grew in a query the comparison
	// does not call slower is said as context, never as a finding.
	if got := PlanLine(&rep.Outcomes[1], compare.StatusUnchanged); got != "same plan: Seq Scan (orders) own time 25.0 ms -> 80.0 ms, shared read 0 -> 1,651 blocks; "+
		"context, not a regression: the query's time did not change beyond noise" {
		t.Errorf("not slower: %q", got)
	}
	if got := PlanLine(&rep.Outcomes[1], compare.StatusImproved); !strings.HasSuffix(got, "; context, not a regression: the comparison does not call the query slower") {
		t.Errorf("faster: %q", got)
	}
	long := ChangeLong(rep.Outcomes[0].Main())
	if long != "Index Scan using customers_email_idx on customers (est. 1 row; actual 1 row) -> Seq Scan on customers (est. 1 row; "+
		"Filter: (email = 'bob@example.com'::text); rows removed by filter 49,999; actual 1 row)" {
		t.Errorf("long: %q", long)
	}
	if c := CauseText(rep.Outcomes[1].Causes[0], rep.Outcomes[1].Main()); c != "shared_buffers 128MB -> 128kB: blocks read from outside shared_buffers 0 -> 1,651" {
		t.Errorf("cause: %q", c)
	}
	var b bytes.Buffer
	if err := WritePlans(&b, rep, map[string]compare.Status{"aaaa": compare.StatusRegressed, "bbbb": compare.StatusRegressed}, PlanHints{KeepSamples: "--keep-samples"}); err != nil {
		t.Fatal(err)
	}
	wantIn(t, "WritePlans", b.String(), want[0], "cause: index customers_email_idx on customers does not exist on the candidate", "Generic plans", "(--keep-samples)")
}

// TestPlansRedacted: once the report is redacted, no value of the
// statements is left in the text, the page or the JSON.
func TestPlansRedacted(t *testing.T) {
	rep := plansReport(t)
	rep.Redact()
	var text, page bytes.Buffer
	if err := WritePlans(&text, rep, nil, PlanHints{}); err != nil {
		t.Fatal(err)
	}
	if err := htmlreport.Write(&page, htmlreport.Page{Title: "t", Sections: []htmlreport.Section{PlansSection(rep, map[string]compare.Status{"bbbb": compare.StatusRegressed}, PlanHints{})}}); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "page": page.String(), "JSON": string(js)} {
		if strings.Contains(out, "bob@example.com") {
			t.Errorf("%s holds a parameter value", name)
		}
	}
	if !strings.Contains(text.String(), "Filter: (email = …::text)") {
		t.Errorf("redacted filter missing:\n%s", text.String())
	}
}

func TestPlanTreesTable(t *testing.T) {
	e := explained(t, explain.ModeGeneric,
		`HashAggregate  (cost=4667.00..5163.71 rows=49671 width=40)
  Group Key: customer_id
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14)`,
		`GroupAggregate  (cost=22911.82..25395.37 rows=49671 width=40)
  Group Key: customer_id
  ->  Sort  (cost=22911.82..23411.82 rows=200000 width=14)
        Sort Key: customer_id
        ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14)`)
	tb := PlanTreesTable("agg", &e)
	if len(tb.Rows) != 3 {
		t.Fatalf("%d rows", len(tb.Rows))
	}
	type row struct{ ctl, cand, class string }
	want := []row{
		{"HashAggregate", "GroupAggregate", "bad"},
		{"", "\u00a0\u00a0-> Sort", "bad"},
		{"\u00a0\u00a0-> Seq Scan on orders", "\u00a0\u00a0\u00a0\u00a0-> Seq Scan on orders", ""},
	}
	for i, r := range tb.Rows {
		got := row{r.Cells[0].Text, r.Cells[4].Text, r.Class}
		if got != want[i] {
			t.Errorf("row %d: %q, want %q", i, got, want[i])
		}
	}
}

// TestSlowerSamePlanWords: a same plan whose sort spilled names the sort
// and its spill, not a node whose time did not grow, and a verified
// spill's cause says what verified it.
func TestSlowerSamePlanWords(t *testing.T) {
	e := explained(t, explain.ModeLiteral,
		`Sort  (cost=22911.82..23411.82 rows=200000 width=14) (actual time=100.000..120.000 rows=200000 loops=1)
  Sort Key: total, id
  Sort Method: quicksort  Memory: 14000kB
  Buffers: shared hit=1471
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14) (actual time=0.010..61.500 rows=200000 loops=1)
        Buffers: shared hit=1471`,
		`Sort  (cost=22911.82..23411.82 rows=200000 width=14) (actual time=90.000..110.000 rows=200000 loops=1)
  Sort Key: total, id
  Sort Method: external merge  Disk: 4392kB
  Buffers: shared read=1471, temp read=549 written=551
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14) (actual time=0.010..51.200 rows=200000 loops=1)
        Buffers: shared read=1471`)
	o := explain.Outcome{Fingerprint: "s", Verdict: explain.SamePlan, Explained: []explain.Explained{e},
		Causes: []explain.Cause{{Kind: explain.CauseSetting, Setting: "work_mem", Control: "64MB", Candidate: "1MB", Evidence: "spill", Verified: true}}}
	want := "same plan, slower: Sort temp blocks 0 -> 1,100, Sort Method external merge, Disk 4,392kB; cause: work_mem 64MB -> 1MB"
	if got := PlanLine(&o, compare.StatusRegressed); got != want {
		t.Errorf("line:\n got %q\nwant %q", got, want)
	}
	want = "work_mem 64MB -> 1MB: the Sort went to disk (Sort Method external merge, Disk 4,392kB; temp blocks 0 -> 1,100) (verified: with 64MB nothing goes to disk)"
	if got := CauseText(o.Causes[0], o.Main()); got != want {
		t.Errorf("cause:\n got %q\nwant %q", got, want)
	}
}

// TestNoneFoundUnchecked: a slower same plan without a cause says "none
// found in statistics" only when the statistics were read; a side whose
// read failed is named instead.
func TestNoneFoundUnchecked(t *testing.T) {
	e := explained(t, explain.ModeLiteral,
		`Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14) (actual time=0.010..51.200 rows=200000 loops=1)`,
		`Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14) (actual time=0.010..91.200 rows=200000 loops=1)`)
	o := explain.Outcome{Fingerprint: "s", Verdict: explain.SamePlan, Explained: []explain.Explained{e}}
	if got := PlanLine(&o, compare.StatusRegressed); !strings.HasSuffix(got, "cause: none found in settings, indexes or statistics") {
		t.Errorf("read: %q", got)
	}
	o.Unchecked = []explain.Problem{{Side: explain.Candidate, Kind: explain.ProblemTimeout, Message: "canceling statement due to lock timeout"}}
	want := "cause: none found in settings or indexes; statistics not checked (candidate: the read ran out of time (statement_timeout or lock_timeout): canceling statement due to lock timeout)"
	if got := PlanLine(&o, compare.StatusRegressed); !strings.HasSuffix(got, want) {
		t.Errorf("unread:\n got %q\nwant suffix %q", got, want)
	}
}

// TestGenericStatisticsWords: a statistics target named behind the same
// generic plans says why the plans do not show it; behind the same plans
// of a value, or a changed generic plan, it does not.
func TestGenericStatisticsWords(t *testing.T) {
	scan := `Seq Scan on skew  (cost=0.00..1355.50 rows=1 width=312)`
	c := explain.Cause{Kind: explain.CauseStatisticsTarget, Relation: "skew", Columns: []string{"a"}, Control: "200", Candidate: "default"}
	base := "the statistics target of skew.a is 200 on the control and default on the candidate: the planner's estimates of the column differ with it"
	generic := explained(t, explain.ModeGeneric, scan, scan)
	if got, want := CauseText(c, &generic), base+"; the generic plans, made without the statement's values, cannot show an estimate of a value: the values' plans may differ"; got != want {
		t.Errorf("same generic plans:\n got %q\nwant %q", got, want)
	}
	for _, e := range []explain.Explained{explained(t, explain.ModeCustom, scan, scan),
		explained(t, explain.ModeGeneric, `Index Scan using skew_pkey on skew  (cost=0.29..1755.79 rows=200 width=312)`, scan)} {
		if got := CauseText(c, &e); got != base {
			t.Errorf("%s plans, same %v: %q", e.Candidate.Mode, e.Diff.Same, got)
		}
	}
}

// TestMoreWorkHOTWords: an update that writes more WAL with the same
// plan is "same plan, more work", and the index that stops its HOT
// updates is its cause, in the line, the text, the page and the JSON;
// the same outcome not flagged names no cause.
func TestMoreWorkHOTWords(t *testing.T) {
	e := explained(t, explain.ModeGeneric,
		`Update on pgbench_accounts  (cost=0.29..8.31 rows=0 width=0)
  ->  Index Scan using pgbench_accounts_pkey on pgbench_accounts  (cost=0.29..8.31 rows=1 width=10)
        Index Cond: (aid = $2)`,
		`Update on pgbench_accounts  (cost=0.29..8.31 rows=0 width=0)
  ->  Index Scan using pgbench_accounts_pkey on pgbench_accounts  (cost=0.29..8.31 rows=1 width=10)
        Index Cond: (aid = $2)`)
	o := explain.Outcome{Fingerprint: "upd", Query: "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
		Verdict: explain.SamePlan, Generic: true, Explained: []explain.Explained{e},
		Causes: []explain.Cause{{Kind: explain.CauseIndexStopsHOT, Side: explain.Candidate, Relation: "pgbench_accounts",
			Index: "pgbench_accounts_abalance_idx", Candidate: "CREATE INDEX pgbench_accounts_abalance_idx ON public.pgbench_accounts USING btree (abalance)",
			Columns: []string{"abalance"},
			HOT:     &explain.HOTUpdates{ControlUpdates: 15480, ControlHOT: 14551, CandidateUpdates: 15480, CandidateHOT: 0}}}}
	want := "same plan, more work; cause: index pgbench_accounts_abalance_idx stops HOT updates (generic plans)"
	if got := PlanLine(&o, compare.StatusMoreWork); got != want {
		t.Errorf("line:\n got %q\nwant %q", got, want)
	}
	if got := PlanLine(&o, compare.StatusUnchanged); got != "same plan (generic plans)" {
		t.Errorf("not flagged: %q", got)
	}
	cause := "index pgbench_accounts_abalance_idx (candidate only) on pgbench_accounts (abalance) covers abalance, which this statement sets: " +
		"its updates that change it cannot be HOT on the candidate; HOT updates of pgbench_accounts 94% -> 0% " +
		"(table statistics when the plans were explained: 15,480 and 15,480 rows updated)"
	if got := CauseText(o.Causes[0], o.Main()); got != cause {
		t.Errorf("cause:\n got %q\nwant %q", got, cause)
	}
	// Another definition on the control, two columns, no counters.
	c := explain.Cause{Kind: explain.CauseIndexStopsHOT, Relation: "items", Index: "items_sku_idx",
		Control: "CREATE INDEX items_sku_idx ON public.items USING btree (sku)", Candidate: "CREATE INDEX items_sku_idx ON public.items USING btree (sku) INCLUDE (note) WHERE (qty > 0)",
		Columns: []string{"qty", "note"}}
	if got, want := CauseText(c, nil), "index items_sku_idx (defined as (sku) on the control) on items (sku) INCLUDE (note) WHERE (qty > 0) covers qty and note, "+
		"which this statement sets: its updates that change them cannot be HOT on the candidate"; got != want {
		t.Errorf("cause:\n got %q\nwant %q", got, want)
	}
	// Counters with no drop: said, with why they may not show one.
	c.HOT = &explain.HOTUpdates{ControlUpdates: 200, ControlHOT: 2, CandidateUpdates: 1000, CandidateHOT: 10}
	if got, want := CauseText(c, nil), "; the table statistics show no drop in HOT updates of items (1% -> 1%, 200 and 1,000 rows updated), "+
		"but they count every statement's updates since they were last reset, which may be before the index was made"; !strings.HasSuffix(got, want) {
		t.Errorf("cause:\n got %q\nwant suffix %q", got, want)
	}

	rep := &explain.Report{Outcomes: []explain.Outcome{o}}
	status := map[string]compare.Status{"upd": compare.StatusMoreWork}
	var text, page bytes.Buffer
	if err := WritePlans(&text, rep, status, PlanHints{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "      cause: "+cause+"\n") {
		t.Errorf("text lacks the cause:\n%s", text.String())
	}
	text.Reset()
	if err := WritePlans(&text, rep, nil, PlanHints{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "cause") {
		t.Errorf("not flagged, but a cause:\n%s", text.String())
	}
	if err := htmlreport.Write(&page, htmlreport.Page{Title: "t", Sections: []htmlreport.Section{PlansSection(rep, status, PlanHints{})}}); err != nil {
		t.Fatal(err)
	}
	wantIn(t, "page", page.String(), "same plan, more work", "index pgbench_accounts_abalance_idx stops HOT updates", "94% -&gt; 0%")
	js, err := json.Marshal(o.Causes[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"index_stops_hot","side":"candidate","relation":"pgbench_accounts","index":"pgbench_accounts_abalance_idx",` +
		`"candidate":"CREATE INDEX pgbench_accounts_abalance_idx ON public.pgbench_accounts USING btree (abalance)","columns":["abalance"],` +
		`"hot_updates":{"control_updates":15480,"control_hot":14551,"candidate_updates":15480,"candidate_hot":0}}`; string(js) != want {
		t.Errorf("JSON:\n got %s\nwant %s", js, want)
	}
}

// TestPlansAcrossVersions: a control on 13 and a candidate on 18 make the
// same plan, though 18's EXPLAIN prints fractional rows, index searches
// and buffers of planning; the versions are said once above the plans,
// and not as the cause of a plan that neither changed nor slowed.
func TestPlansAcrossVersions(t *testing.T) {
	e := explained(t, explain.ModeCustom,
		`Index Scan using customers_email_idx on customers  (cost=0.29..8.31 rows=1 width=22) (actual time=0.020..0.021 rows=1 loops=1)
  Index Cond: (email = 'bob@example.com'::text)
  Buffers: shared hit=3`,
		`Index Scan using customers_email_idx on customers  (cost=0.29..8.31 rows=1 width=22) (actual time=0.018..0.019 rows=1.00 loops=1)
  Index Cond: (email = 'bob@example.com'::text)
  Index Searches: 1
  Buffers: shared hit=3`)
	if !e.Diff.Same {
		t.Fatalf("13's and 18's EXPLAIN of one plan compare as a change: %+v", e.Diff)
	}
	rep := &explain.Report{
		Control:   map[string]*explain.Snapshot{"shop": {Version: 130023, VersionText: "13.23"}},
		Candidate: map[string]*explain.Snapshot{"shop": {Version: 180004, VersionText: "18.4"}},
		Outcomes: []explain.Outcome{{Fingerprint: "aaaa", Query: "SELECT id, name FROM customers WHERE email = $1", Verdict: explain.SamePlan,
			Explained: []explain.Explained{e}, Causes: []explain.Cause{{Kind: explain.CauseVersion, Control: "13.23", Candidate: "18.4"}}}},
	}
	note := "The control runs PostgreSQL 13.23, the candidate PostgreSQL 18.4: plans are compared by their nodes"
	var b bytes.Buffer
	if err := WritePlans(&b, rep, nil, PlanHints{}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), note) != 1 || !strings.Contains(b.String(), "aaaa  same plan\n") || strings.Contains(b.String(), "planner differs") {
		t.Errorf("the plans across versions read:\n%s", b.String())
	}
	var page bytes.Buffer
	if err := htmlreport.Write(&page, htmlreport.Page{Title: "t", Sections: []htmlreport.Section{PlansSection(rep, nil, PlanHints{})}}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(page.String(), "PostgreSQL 13.23") != 1 || strings.Contains(page.String(), "planner differs") {
		t.Errorf("the page says the versions %d times, the planner differs: %v", strings.Count(page.String(), "PostgreSQL 13.23"), strings.Contains(page.String(), "planner differs"))
	}
	// Slower on the candidate, the version is a cause.
	b.Reset()
	if err := WritePlans(&b, rep, map[string]compare.Status{"aaaa": compare.StatusRegressed}, PlanHints{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "same plan, slower; cause: version 13.23 -> 18.4") ||
		!strings.Contains(b.String(), "cause: PostgreSQL 13.23 on the control, 18.4 on the candidate: the same plan runs on another version's executor and storage") {
		t.Errorf("slower across versions:\n%s", b.String())
	}
	rep.Candidate["shop"] = &explain.Snapshot{Version: 130020, VersionText: "13.20"}
	if v := VersionsNote(rep); v != "" {
		t.Errorf("same major: %q", v)
	}
}

// TestWorkSettingWords: a same plan that writes more WAL (a read under
// data checksums) or dirties more blocks (fewer shared_buffers) reads
// "same plan, more work" with the setting as the cause, and the cause's
// sentence says how the setting adds that work.
func TestWorkSettingWords(t *testing.T) {
	e := explained(t, explain.ModeLiteral,
		`Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14) (actual time=0.010..51.200 rows=200000 loops=1)`,
		`Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14) (actual time=0.010..51.300 rows=200000 loops=1)`)
	for _, tc := range []struct {
		cause      explain.Cause
		line, text string
	}{
		{explain.Cause{Kind: explain.CauseSetting, Setting: "data_checksums", Control: "off", Candidate: "on", Evidence: explain.EvidenceWAL},
			"same plan, more work; cause: data_checksums off -> on",
			"data_checksums off -> on: the candidate writes more WAL per call: with data checksums, the first hint bit set on a page after a checkpoint, by a read too, writes the whole page to WAL"},
		{explain.Cause{Kind: explain.CauseSetting, Setting: "shared_buffers", Control: "128MB", Candidate: "128kB", Evidence: explain.EvidenceDirtied},
			"same plan, more work; cause: shared_buffers 128MB -> 128kB",
			"shared_buffers 128MB -> 128kB: the candidate dirties more blocks per call, and with fewer buffers a block written out to make room is dirtied again"},
	} {
		o := explain.Outcome{Fingerprint: "s", Verdict: explain.SamePlan, Explained: []explain.Explained{e},
			Causes: []explain.Cause{tc.cause, {Kind: explain.CauseVersion, Control: "13.23", Candidate: "18.4"}}}
		if got := PlanLine(&o, compare.StatusMoreWork); got != tc.line {
			t.Errorf("line:\n got %q\nwant %q", got, tc.line)
		}
		if got := CauseText(o.Causes[0], o.Main()); !strings.HasPrefix(got, tc.text) {
			t.Errorf("cause:\n got %q\nwant prefix %q", got, tc.text)
		}
	}
}
