package observe

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
)

// syntheticEvidence is an observation of two queries, one waiting on a
// lock, with a reset warning.
func syntheticEvidence() *Evidence {
	e := &Evidence{Version: Version, Start: "2025-01-02T03:04:05.000000Z", End: "2025-01-02T03:04:15.000000Z", DurationS: 10,
		Capabilities: Capabilities{ServerVersion: "15.8", Database: "postgres", PGSS: ExtensionState{Status: ExtInstalled}, TrackPlanning: true, WaitSource: "pg_stat_activity", WaitSampling: ExtensionState{Status: ExtMissing}},
		Warnings:     []string{"pg_stat_statements was reset 1 time(s) during the observation"},
		Notes:        []string{"pg_wait_sampling is not installed"}}
	e.Statements = &Statements{Snapshots: 3, IntervalS: 5, TrackPlanning: true, Resets: []string{"2025-01-02 03:04:10+00"},
		Totals: QueryStats{Calls: 300, TotalExecMS: 60, TotalPlanMS: 9},
		Queries: []Query{
			{Fingerprint: "aaaa", Query: "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2", QueryIDs: []int64{1}, Databases: []string{"postgres"},
				QueryStats:  QueryStats{Calls: 100, TotalExecMS: 50, MeanExecMS: 0.5, Plans: 100, TotalPlanMS: 4, MeanPlanMS: 0.04, Rows: 100, SharedBlksHit: 300, WALBytes: 9000},
				WaitSamples: 40, Waits: []WaitCount{{"Lock", "transactionid", 30, 0.75}, {"CPU", "CPU", 10, 0.25}}},
			{Fingerprint: "bbbb", Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1", QueryIDs: []int64{2}, Databases: []string{"postgres"}, Restarted: true,
				QueryStats: QueryStats{Calls: 200, TotalExecMS: 10, MeanExecMS: 0.05, Plans: 200, TotalPlanMS: 5, MeanPlanMS: 0.025, Rows: 200, SharedBlksHit: 500, SharedBlksRead: 20}},
		}}
	e.Waits = Waits{Source: "pg_stat_activity", SampleIntervalMS: 100, CPUSampled: true, Rounds: 100, Samples: 50,
		Events: []WaitCount{{"Lock", "transactionid", 30, 0.6}, {"CPU", "CPU", 20, 0.4}},
		ByQuery: []QueryWaits{
			{Fingerprint: "aaaa", Query: "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2", Samples: 40, Events: []WaitCount{{"Lock", "transactionid", 30, 0.75}, {"CPU", "CPU", 10, 0.25}}},
			{Fingerprint: "bbbb", Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1", Samples: 10, Events: []WaitCount{{"CPU", "CPU", 10, 1}}},
		},
		OverTime: &WaitSeries{Start: "2025-01-02T03:04:05.000000Z", BucketMS: 1000, Rounds: []int64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
			Series: []WaitSeriesEntry{{"Lock", "transactionid", []int64{1, 2, 3, 4, 5, 5, 4, 3, 2, 1}}, {"CPU", "CPU", []int64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}}}}}
	e.Throughput = &Throughput{Start: "2025-01-02T03:04:05.000000Z", BucketMS: 1000, TPS: []float64{10, 12, 11, 9, 10, 10, 12, 11, 9, 10},
		Transactions: []int64{10, 12, 11, 9, 10, 10, 12, 11, 9, 10}, Rollbacks: make([]int64, 10),
		Connections: []float64{4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, ConnectionsMax: []int64{4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
		Active: []float64{1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, IdleInTransaction: make([]float64, 10), TotalTransactions: 104, MeanTPS: 10.4}
	e.Sampling = Sampling{SampleIntervalMS: 100, Rounds: 100, AchievedIntervalMS: 100, BusyMS: 150, BusyShare: 0.015}
	return e
}

func TestSectionsStructure(t *testing.T) {
	secs := Sections(syntheticEvidence())
	if len(secs) != 3 {
		t.Fatalf("%d sections, want overview, waits, statements", len(secs))
	}
	ids := []string{secs[0].ID, secs[1].ID, secs[2].ID}
	if strings.Join(ids, " ") != "observe observe-waits observe-statements" {
		t.Errorf("ids %v", ids)
	}
	if len(secs[0].Charts) != 1 || len(secs[1].Charts) != 1 || len(secs[2].Charts) != 1 {
		t.Fatalf("charts per section: %d %d %d", len(secs[0].Charts), len(secs[1].Charts), len(secs[2].Charts))
	}
	if !strings.Contains(strings.Join(secs[0].Notes, " "), "Warning: pg_stat_statements was reset") {
		t.Errorf("overview notes %q", secs[0].Notes)
	}
	// The wait profile is a stacked area over time.
	var wait struct {
		XAxis  map[string]any `json:"xAxis"`
		Series []struct {
			Name  string         `json:"name"`
			Stack string         `json:"stack"`
			Area  map[string]any `json:"areaStyle"`
			Data  [][2]float64   `json:"data"`
		} `json:"series"`
	}
	if err := json.Unmarshal(secs[1].Charts[0].Option, &wait); err != nil {
		t.Fatal(err)
	}
	if wait.XAxis["type"] != "time" || len(wait.Series) != 2 || wait.Series[0].Name != "Lock/transactionid" || wait.Series[0].Stack == "" ||
		wait.Series[0].Area == nil || len(wait.Series[0].Data) != 10 || wait.Series[0].Data[4][1] != 0.5 || wait.Series[1].Name != "CPU" {
		t.Errorf("wait option %+v", wait)
	}
	// Planning and execution stacked per query, the biggest at the top
	// (last in a category axis).
	var plan struct {
		YAxis  struct{ Data []string } `json:"yAxis"`
		Series []struct {
			Name  string    `json:"name"`
			Stack string    `json:"stack"`
			Data  []float64 `json:"data"`
		} `json:"series"`
	}
	if err := json.Unmarshal(secs[2].Charts[0].Option, &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Series) != 2 || plan.Series[0].Name != "planning" || plan.Series[0].Stack != plan.Series[1].Stack ||
		plan.Series[1].Data[1] != 50 || !strings.HasPrefix(plan.YAxis.Data[1], "UPDATE pgbench_branches") {
		t.Errorf("plan option %+v", plan)
	}
	tb := secs[2].Tables[0]
	if len(tb.Rows) != 2 || !tb.Sortable || !tb.Filter || tb.Rows[1].Class != "muted" || tb.Rows[0].Detail == nil {
		t.Errorf("queries table %+v", tb)
	}
	// Two runs on one page: distinct IDs.
	a, b := LabeledSections(syntheticEvidence(), "baseline"), LabeledSections(syntheticEvidence(), "candidate")
	if a[0].ID == b[0].ID || a[2].Tables[0].ID == b[2].Tables[0].ID || !strings.Contains(b[0].Title, "candidate") {
		t.Errorf("labeled ids %s %s", a[0].ID, b[0].ID)
	}
	if s := LabeledSections(nil, ""); len(s) != 1 || len(s[0].Text) != 1 {
		t.Errorf("no evidence: %+v", s)
	}
}

var selfCheckRE = regexp.MustCompile(`(?s)<pre id="selfcheck"[^>]*>(.*?)</pre>`)

// The sections render in a real browser: every chart draws, every table
// sorts and opens a detail (the page's own #selfcheck, as in
// htmlreport's browser tests).
func TestSectionsInBrowser(t *testing.T) {
	page := htmlreport.Page{Title: "observe test", Sections: Sections(syntheticEvidence())}
	dir := t.TempDir()
	path := filepath.Join(dir, "observe.html")
	var buf bytes.Buffer
	if err := htmlreport.Write(&buf, page); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := htmltest.DumpDOM(t, path, "selfcheck")
	m := selfCheckRE.FindSubmatch(dom)
	if m == nil {
		t.Fatal("the page wrote no self-check")
	}
	var sc struct {
		Library string `json:"library"`
		Charts  []struct {
			ID  string `json:"id"`
			Ink int    `json:"ink"`
			SVG int    `json:"svg"`
		} `json:"charts"`
		ChartsRendered int `json:"charts_rendered"`
		Tables         []struct {
			ID          string `json:"id"`
			Rows        int    `json:"rows"`
			SortedOK    bool   `json:"sorted_ok"`
			DetailShown bool   `json:"detail_shown"`
		} `json:"tables"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &sc); err != nil {
		t.Fatal(err)
	}
	t.Logf("self-check: %+v", sc)
	if len(sc.Errors) > 0 || sc.Library == "" {
		t.Fatalf("script errors %v, library %q", sc.Errors, sc.Library)
	}
	if len(sc.Charts) != 3 || sc.ChartsRendered != 3 {
		t.Errorf("%d charts, %d rendered; want 3", len(sc.Charts), sc.ChartsRendered)
	}
	for _, c := range sc.Charts {
		if c.Ink == 0 && c.SVG == 0 {
			t.Errorf("chart %s is blank", c.ID)
		}
	}
	if len(sc.Tables) != 2 {
		t.Errorf("%d tables, want 2", len(sc.Tables))
	}
	for _, tb := range sc.Tables {
		if tb.Rows != 2 || !tb.SortedOK || !tb.DetailShown {
			t.Errorf("table %+v", tb)
		}
	}
	// A picture for a person to look at, left behind.
	png := htmltest.Screenshot(t, path, "1400,2600")
	t.Logf("screenshot: %s", png)
}
