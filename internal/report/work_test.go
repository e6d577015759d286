package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// workComparison: three runs a side of the same latency; the candidate's
// accounts update writes 2.5x the WAL and dirties 1.7x the blocks per
// call (an update that lost HOT).
func workComparison(t *testing.T, rules ...compare.Rule) *compare.Report {
	t.Helper()
	base, cand := workRuns(t, func(i int) observe.Evidence {
		wal, dirtied := int64(6800), 0.92
		if i >= 3 {
			wal, dirtied = 17000, 1.55
		}
		wal += int64(i) * 10
		qs := []observe.Query{
			{Fingerprint: "b2c3d4e5f6071829", QueryStats: observe.QueryStats{Calls: 5000, WALBytes: 5000 * wal, WALFPI: 4600, SharedBlksDirtied: int64(5000 * dirtied)}},
			{Fingerprint: "a1b2c3d4e5f60718", QueryStats: observe.QueryStats{Calls: 5000}},
		}
		return observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: qs}}
	})
	rep, err := compare.Runs(base, cand, compare.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestWorkRuleReport: --fail-on wal>+50% fails the verdict on the
// update that writes 2.5x the WAL, and the report words the figures per
// call with their interval; a threshold above the change breaks nothing.
func TestWorkRuleReport(t *testing.T) {
	rules := rulesOf(t, "wal>+50%,dirtied>3x")
	rep := workComparison(t, rules...)
	if rep.Verdict.Status != compare.VerdictFail || len(rep.Verdict.Broken) != 1 {
		t.Fatalf("verdict %s, broken %+v", rep.Verdict.Status, rep.Verdict.Broken)
	}
	text := comparisonText(t, rep, 5)
	wantIn(t, "text", text,
		"FAIL: wal>+50% broken by 1 query",
		"wal>+50% broken by b2c3d4e5f6071829",
		"WAL bytes per call 6.7 kB -> 16.6 kB (2.50x, interval 2.")
	rules, _ = judge.ParsePairRules([]string{"wal>3x"})
	if rep := workComparison(t, rules...); rep.Verdict.Status == compare.VerdictFail {
		t.Errorf("wal>3x was broken by a 2.5x change: %+v", rep.Verdict.Broken)
	}
}

func TestServerWorkReport(t *testing.T) {
	rep := workComparison(t)
	if len(rep.MoreWork) != 1 || rep.MoreWork[0] != "b2c3d4e5f6071829" {
		t.Fatalf("more work %v, queries %+v", rep.MoreWork, rep.Queries)
	}
	out := comparisonText(t, rep, 5)
	t.Logf("%s", out)
	wantIn(t, "text", out,
		"Server work per call (pg_stat_statements): queries that write more, by the share of the run's work they add; intervals over the runs; floors 1.50x and +1.0 kB WAL or +0.5 blocks dirtied a call",
		"6.7 kB -> 16.6 kB", "+48.8 MB", "1.68x (1.68-1.68)", "writes more: WAL bytes", "REGRESSIONS (no rule to fail on): no latency regression beyond noise; 1 query writes more per call, most b2c3d4e5f6071829",
		"(WAL bytes per call 2.50x (")
	wantIn(t, "JSON", string(comparisonJSON(t, rep)), `"more_work":["b2c3d4e5f6071829"]`, `"server_work":{"compared":true`, `"status":"more_work"`, `"wal_bytes":{"ratio":`)
	p := ComparisonPage(rep, ComparisonOptions{})
	var ids []string
	for _, s := range p.Sections {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, ","); !strings.Contains(got, "server-work") {
		t.Errorf("sections %s", got)
	}
	wantIn(t, "the page", renderPage(t, p), "Writes more per call", "2.50x (")
}

// TestSlowerWhileBusierReport: beside a dominant regression (the lookup,
// 100x, minutes of server time a run), a query slowed by 1.5x is listed
// apart, named with the regression it slowed beside, in the text, the
// verdict line, the JSON and the page.
func TestSlowerWhileBusierReport(t *testing.T) {
	base, cand := busierRuns(t)
	rep, err := compare.Runs(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.SlowerWhileBusier) != 1 || len(rep.RegressionsByAddedTime) != 1 {
		t.Fatalf("slower while busier %v, regressions %v", rep.SlowerWhileBusier, rep.RegressionsByAddedTime)
	}
	out := comparisonText(t, rep, 5)
	wantIn(t, "text", out,
		`Slower while the server was busier with a1b2c3d4e5f60718 "SELECT abalance FROM pgbench_accounts WHERE aid = $1" (+`,
		"1 regression, worst a1b2c3d4e5f60718",
		"; 1 more query slower beside it while the server was busier, not counted")
	wantIn(t, "JSON", string(comparisonJSON(t, rep)), `"slower_while_busier":["b2c3d4e5f6071829"]`, `"busier_with":"a1b2c3d4e5f60718"`, `"status":"slower_while_busier"`)
	wantIn(t, "the page", renderPage(t, ComparisonPage(rep, ComparisonOptions{})), "Slower while the server was busier with")
}

// TestServerWorkBelowFloorsAndHOT: the case in words. The
// accounts update's WAL grows 1.3x (under the 1.5x floor) and is listed
// below the floors with its ratio, interval and share of the run; the
// history insert's 2.8x, +141 B a call, is a work regression as 2% of
// the run's WAL; pgbench_accounts' HOT share drops and the index on the
// candidate that ended it is named, in the text, the JSON and the page.
func TestServerWorkBelowFloorsAndHOT(t *testing.T) {
	base, cand := workRuns(t, func(i int) observe.Evidence {
		upd, ins, hot := int64(6800), int64(78), int64(4900)
		ixs := []observe.TableIndex{{Name: "pgbench_accounts_pkey", Columns: []string{"aid"}, Method: "btree"}}
		if i >= 3 {
			upd, ins, hot = 8840, 219, 40
			ixs = append(ixs, observe.TableIndex{Name: "pgbench_accounts_abalance_idx", Columns: []string{"abalance"}, Method: "btree"})
		}
		upd += int64(i) * 3
		qs := []observe.Query{
			{Fingerprint: "b2c3d4e5f6071829", Query: synthQueries[1].text, QueryStats: observe.QueryStats{Calls: 5000, WALBytes: 5000 * upd, SharedBlksDirtied: 4600}},
			{Fingerprint: "d4e5f60718293041", Query: synthQueries[3].text, QueryStats: observe.QueryStats{Calls: 5000, WALBytes: 5000 * ins}},
			{Fingerprint: "a1b2c3d4e5f60718", QueryStats: observe.QueryStats{Calls: 5000}},
		}
		tot := observe.QueryStats{WALBytes: qs[0].WALBytes + qs[1].WALBytes, SharedBlksDirtied: 4600}
		return observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: qs, Totals: tot},
			Tables: []observe.TableUpdates{{Database: "bench", Schema: "public", Name: "pgbench_accounts", Updates: 5000, HOTUpdates: hot + int64(i), Indexes: ixs}}}
	})
	rep, err := compare.Runs(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := comparisonText(t, rep, 5)
	t.Logf("%s", out)
	wantIn(t, "text", out,
		"or 1.0% of the run's WAL or blocks dirtied",
		"Server work changed beyond noise (by 1.10x at least), but under a floor: not work regressions",
		"6.6 kB -> 8.6 kB", "under the 1.50x floor",
		"78 B -> 219 B", "+2.0% (",
		"HOT updates (pg_stat_user_tables): tables whose share of HOT updates moved",
		"pgbench_accounts: HOT updates 98% (98-98%) -> 0.9% (0.9-0.9%) of 5000 -> 5000 updates a run; an index on the updated column abalance exists only on the candidate: pgbench_accounts_abalance_idx")
	wantIn(t, "JSON", string(comparisonJSON(t, rep)), `"below_floors":["b2c3d4e5f6071829"]`, `"below_floors_reason":"under_work_effect_floor"`, `"hot_updates":[{"schema":"public","name":"pgbench_accounts"`,
		`"dropped":true,"cause":{"columns":["abalance"],"indexes":["pgbench_accounts_abalance_idx"]}`, `"more_work":["d4e5f60718293041"]`)
	wantIn(t, "the page", renderPage(t, ComparisonPage(rep, ComparisonOptions{})), "but under a floor: not work regressions", "pgbench_accounts_abalance_idx", "HOT updates per table")
}

// TestWorkFromNone: a query that wrote no WAL on the control and 105 B a
// call on the candidate (a read whose hint bits are WAL-logged under data
// checksums) is a change from nothing: "none -> 105 B a call" in the
// verdict and the broken rule, "none -> 105 B" and "from none" in the
// table, from_none with no ratio in the JSON, and never a ratio over the
// counter's resolution ("105x (105-105)", "(-, interval 105-105)").
func TestWorkFromNone(t *testing.T) {
	base, cand := workRuns(t, func(i int) observe.Evidence {
		var wal int64
		if i >= 3 {
			wal = 105
		}
		qs := []observe.Query{
			{Fingerprint: "b2c3d4e5f6071829", QueryStats: observe.QueryStats{Calls: 5000, WALBytes: 5000 * wal, SharedBlksDirtied: 4600}},
			{Fingerprint: "a1b2c3d4e5f60718", QueryStats: observe.QueryStats{Calls: 5000, WALBytes: 5000 * 200, SharedBlksDirtied: 5000}},
		}
		totals := observe.QueryStats{Calls: 10000, WALBytes: 5000 * (wal + 200), SharedBlksDirtied: 9600}
		return observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: qs, Totals: totals}}
	})
	rules := rulesOf(t, "wal>+50%")
	rep, err := compare.Runs(base, cand, compare.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Query("b2c3d4e5f6071829")
	if q == nil || q.Work == nil || !q.Work.WALBytes.FromNone || q.Work.Dirtied.FromNone || q.Status != compare.StatusMoreWork || len(rep.Verdict.Broken) != 1 {
		t.Fatalf("query %+v, broken %+v", q, rep.Verdict.Broken)
	}
	out := comparisonText(t, rep, 5)
	wantIn(t, "text", out,
		"(WAL bytes none -> 105 B a call, +512.7 kB WAL per run)",
		"wal>+50% broken by b2c3d4e5f6071829",
		": WAL bytes none -> 105 B a call\n",
		"  none -> 105 B ",
		"  from none  +52% (52 to 52%) of the run's WAL")
	js := comparisonJSON(t, rep)
	wantIn(t, "JSON", string(js), `"wal_bytes":{"ratio":0,`, `"from_none":true`, `"detail":"WAL bytes none -\u003e 105 B a call"`)
	if n := bytes.Count(js, []byte(`"from_none"`)); n != 1 {
		t.Errorf("from_none %d times in the JSON, want once (the WAL of one query)", n)
	}
	page := renderPage(t, ComparisonPage(rep, ComparisonOptions{}))
	wantIn(t, "the page", page, "none -&gt; 105 B", "from none")
	for name, s := range map[string]string{"text": out, "JSON": string(js), "page": page} {
		for _, ratio := range []string{"105x", "105.0x", "interval 105", "(105-105)", "(-, "} {
			if strings.Contains(s, ratio) {
				t.Errorf("the %s gives a change from nothing as a ratio: %q", name, ratio)
			}
		}
	}
}

// TestWorkRankedByWhatItAdds: issue 57. The small-shared-buffers demo
// ranked first, as its "worst" work regression, a query dirtying 0.00 ->
// 0.83 blocks a call (238x, +216 B of WAL per run) above the range report
// the change is about (a latency regression dirtying thousands of blocks
// per run), and its page showed the email lookup "regressed" beside "0 B
// -> 0 B" in a table of writes. The work queries go by what they add per
// run (the share of the run's work), and the work table's status is its
// work's.
func TestWorkRankedByWhatItAdds(t *testing.T) {
	work := func(more compare.Metric, share, wal float64, dirtied compare.WorkEffect) *compare.QueryWork {
		w := &compare.QueryWork{Judged: true, More: more, AddedWALBytes: wal, BaselineCalls: 500, CandidateCalls: 500, Dirtied: dirtied}
		if e := w.Of(more); e != nil {
			e.AddedShare = share
		}
		return w
	}
	tiny := work(compare.MetricDirtied, 0.004, 216, compare.WorkEffect{Estimate: compare.Estimate{Ratio: 238, Low: 120, High: 400, Change: compare.ChangeMore}, Baseline: 0.0035, Candidate: 0.83, Delta: 0.83})
	rangeReport := work(compare.MetricDirtied, 0.62, 0, compare.WorkEffect{Estimate: compare.Estimate{Ratio: 3.1, Low: 2.8, High: 3.4, Change: compare.ChangeMore}, Baseline: 40, Candidate: 124, Delta: 84})
	lookup := &compare.QueryWork{Judged: true, BaselineCalls: 500, CandidateCalls: 500}
	rep := &compare.Report{
		Verdict: compare.Verdict{Status: compare.VerdictFail, Regressions: 2, MoreWork: 1, Worst: "range"},
		Noise:   compare.Noise{Measured: true, BaselineRuns: 3, CandidateRuns: 3},
		Queries: []compare.QueryDiff{
			{Fingerprint: "range", Query: "SELECT count(*) FROM orders WHERE created_at BETWEEN $1 AND $2", Status: compare.StatusRegressed, Work: rangeReport},
			{Fingerprint: "lookup", Query: "SELECT id FROM customers WHERE email = $1", Status: compare.StatusRegressed, Work: lookup},
			{Fingerprint: "tiny", Query: "UPDATE customers SET seen = now() WHERE id = $1", Status: compare.StatusMoreWork, Work: tiny},
		},
		RegressionsByAddedTime: []string{"range", "lookup"},
		MoreWork:               []string{"tiny"},
		ServerWork:             &compare.ServerWork{Compared: true, BelowFloors: []string{}},
	}
	if got := workQueries(rep); strings.Join(got, ",") != "range,tiny" {
		t.Errorf("work queries %v, want the range report (62%% of the run's blocks dirtied) before the 238x from near zero (0.4%%)", got)
	}
	var text bytes.Buffer
	ew := &errWriter{w: &text}
	writeServerWork(ew, rep, 5)
	if ew.err != nil {
		t.Fatal(ew.err)
	}
	out := text.String()
	if r, s := strings.Index(out, "SELECT count(*) FROM orders WHERE created_at"), strings.Index(out, "UPDATE customers SET seen"); r < 0 || s < 0 || r > s {
		t.Errorf("the text's work list does not rank the range report first:\n%s", out)
	}
	sec, ok := workSection(rep)
	if !ok || len(sec.Tables) == 0 {
		t.Fatal("no server work section")
	}
	status := map[string]string{}
	for _, row := range sec.Tables[0].Rows {
		status[row.Cells[len(row.Cells)-1].Title] = row.Cells[0].Text
	}
	for fp, want := range map[string]string{"range": "writes more: shared blocks dirtied", "tiny": "writes more: shared blocks dirtied", "lookup": "~"} {
		if status[fp] != want {
			t.Errorf("%s: work status %q, want %q (statuses %v)", fp, status[fp], want, status)
		}
	}
	if rows := sec.Tables[0].Rows; len(rows) != 3 || rows[0].Cells[len(rows[0].Cells)-1].Title != "range" {
		t.Errorf("the page's work table does not start with the range report: %+v", rows)
	}
	// The verdict's clause gives what the change adds in its own metric:
	// "+216 B WAL per run" beside 238x blocks dirtied (a bench's UPDATE
	// under shared_buffers 16MB: 2.22x dirtied, "+562 B WAL per run")
	// read as a trifle.
	rep.MoreWork = []string{"tiny"}
	clause := workClause(rep)
	if !strings.Contains(clause, "of the run's blocks dirtied") || strings.Contains(clause, "WAL per run") {
		t.Errorf("verdict's work clause %q: want the share of the run's blocks dirtied, not the WAL", clause)
	}
	rangeReport.More = compare.MetricWALBytes
	rangeReport.AddedWALBytes = 12.3 * 1024 * 1024
	rep.MoreWork = []string{"range"}
	if clause := workClause(rep); !strings.Contains(clause, "+12.3 MB WAL per run") {
		t.Errorf("verdict's work clause %q: want the WAL it adds per run", clause)
	}
}
