package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// syntheticEvidence is an observation of two queries, one waiting on a
// lock, with a reset warning.
func syntheticEvidence() *observe.Evidence {
	e := &observe.Evidence{Version: observe.Version, Start: "2025-01-02T03:04:05.000000Z", End: "2025-01-02T03:04:15.000000Z", DurationS: 10,
		Capabilities: observe.Capabilities{ServerVersion: "15.8", Database: "postgres", PGSS: observe.ExtensionState{Status: observe.ExtInstalled}, TrackPlanning: true, WaitSource: observe.WaitsFromActivity, WaitSampling: observe.ExtensionState{Status: observe.ExtMissing}},
		Warnings:     []string{"pg_stat_statements was reset 1 time(s) during the observation"},
		Notes:        []string{"pg_wait_sampling is not installed"}}
	e.Statements = &observe.Statements{Snapshots: 3, IntervalS: 5, TrackPlanning: true, Resets: []string{"2025-01-02 03:04:10+00"},
		Totals: observe.QueryStats{Calls: 300, TotalExecMS: 60, TotalPlanMS: 9},
		Queries: []observe.Query{
			{Fingerprint: "aaaa", Query: "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2", QueryIDs: []int64{1}, Databases: []string{"postgres"},
				QueryStats:  observe.QueryStats{Calls: 100, TotalExecMS: 50, MeanExecMS: 0.5, Plans: 100, TotalPlanMS: 4, MeanPlanMS: 0.04, Rows: 100, SharedBlksHit: 300, WALBytes: 9000},
				WaitSamples: 40, Waits: []observe.WaitCount{{Type: "Lock", Event: "transactionid", Samples: 30, Share: 0.75}, {Type: "CPU", Event: "CPU", Samples: 10, Share: 0.25}}},
			{Fingerprint: "bbbb", Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1", QueryIDs: []int64{2}, Databases: []string{"postgres"}, Restarted: true,
				QueryStats: observe.QueryStats{Calls: 200, TotalExecMS: 10, MeanExecMS: 0.05, Plans: 200, TotalPlanMS: 5, MeanPlanMS: 0.025, Rows: 200, SharedBlksHit: 500, SharedBlksRead: 20}},
		}}
	e.Waits = observe.Waits{Source: "pg_stat_activity", SampleIntervalMS: 100, CPUSampled: true, Rounds: 100, Samples: 50,
		Events: []observe.WaitCount{{Type: "Lock", Event: "transactionid", Samples: 30, Share: 0.6}, {Type: "CPU", Event: "CPU", Samples: 20, Share: 0.4}},
		ByQuery: []observe.QueryWaits{
			{Fingerprint: "aaaa", Query: "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2", Samples: 40, Events: []observe.WaitCount{{Type: "Lock", Event: "transactionid", Samples: 30, Share: 0.75}, {Type: "CPU", Event: "CPU", Samples: 10, Share: 0.25}}},
			{Fingerprint: "bbbb", Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1", Samples: 10, Events: []observe.WaitCount{{Type: "CPU", Event: "CPU", Samples: 10, Share: 1}}},
		},
		OverTime: &observe.WaitSeries{Start: "2025-01-02T03:04:05.000000Z", BucketMS: 1000, Rounds: []int64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
			Series: []observe.WaitSeriesEntry{{Type: "Lock", Event: "transactionid", Samples: []int64{1, 2, 3, 4, 5, 5, 4, 3, 2, 1}}, {Type: "CPU", Event: "CPU", Samples: []int64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}}}}}
	e.Throughput = &observe.Throughput{Start: "2025-01-02T03:04:05.000000Z", BucketMS: 1000, TPS: []float64{10, 12, 11, 9, 10, 10, 12, 11, 9, 10},
		Transactions: []int64{10, 12, 11, 9, 10, 10, 12, 11, 9, 10}, Rollbacks: make([]int64, 10),
		Connections: []float64{4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, ConnectionsMax: []int64{4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
		Active: []float64{1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, IdleInTransaction: make([]float64, 10), TotalTransactions: 104, MeanTPS: 10.4}
	e.Sampling = observe.Sampling{SampleIntervalMS: 100, Rounds: 100, AchievedIntervalMS: 100, BusyMS: 150, BusyShare: 0.015}
	return e
}

func TestEvidenceSectionsStructure(t *testing.T) {
	secs := EvidenceSections(syntheticEvidence(), "", Hints{})
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
	a, b := EvidenceSections(syntheticEvidence(), "baseline", Hints{}), EvidenceSections(syntheticEvidence(), "candidate", Hints{})
	if a[0].ID == b[0].ID || a[2].Tables[0].ID == b[2].Tables[0].ID || !strings.Contains(b[0].Title, "candidate") {
		t.Errorf("labeled ids %s %s", a[0].ID, b[0].ID)
	}
	if s := EvidenceSections(nil, "", Hints{}); len(s) != 1 || len(s[0].Text) != 1 {
		t.Errorf("no evidence: %+v", s)
	}
	// Without evidence, the section says how to get it when told.
	if s := EvidenceSections(nil, "candidate", Hints{Observe: "replay --observe"}); s[0].Text[0] != "The server was not observed (replay --observe)." || s[0].ID != "observe-candidate" {
		t.Errorf("no evidence, with a hint: %+v", s)
	}
	if s := EvidenceSections(nil, "", Hints{}); s[0].Text[0] != "The server was not observed." {
		t.Errorf("no evidence, no hint: %q", s[0].Text)
	}
}

// The text summary and the HTML sections say which source they show.
func TestWaitSourceShown(t *testing.T) {
	e := syntheticEvidence()
	e.Capabilities.WaitSource, e.Capabilities.WaitSampling = observe.WaitsFromPGWaitSampling, observe.ExtensionState{Status: observe.ExtInstalled}
	e.Waits.Source, e.Waits.SampleIntervalMS, e.Waits.Rounds, e.Waits.Snapshots, e.Waits.CPUSampled = "pg_wait_sampling", 10, 1000, 3, false
	e.Waits.SourceReason = "pg_wait_sampling 1.1 is loaded and created in database postgres"
	e.Waits.Excluded = &observe.WaitExcluded{Idle: 7}
	var b bytes.Buffer
	if err := WriteEvidence(&b, e, 5); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "wait events    from pg_wait_sampling every 10.0 ms: 0.05 sessions waiting on average, 50 samples in 1000 rounds") {
		t.Errorf("text:\n%s", b.String())
	}
	secs := EvidenceSections(e, "", Hints{})
	if !strings.Contains(secs[0].Text[0], "wait events from pg_wait_sampling every 10.0 ms") ||
		!strings.Contains(secs[1].Text[0], "Source: pg_wait_sampling. The server sampled every backend every 10.0 ms (1000 rounds)") ||
		!strings.Contains(secs[1].Charts[0].Title, "pg_wait_sampling") ||
		!strings.Contains(strings.Join(secs[1].Notes, " "), "Why this source: pg_wait_sampling 1.1 is loaded") {
		t.Errorf("sections: %q / %q / %q / %q", secs[0].Text, secs[1].Text, secs[1].Charts[0].Title, secs[1].Notes)
	}
	if strings.Contains(fmt.Sprint(secs[0].Cards), "active sessions") {
		t.Errorf("cards %+v: pg_wait_sampling counts waits, not active sessions", secs[0].Cards)
	}
}

// Sampled from pg_stat_activity (pg_wait_sampling not loaded, or not
// created), the waits section says so and why.
func TestWaitSourceFallbackShown(t *testing.T) {
	e := syntheticEvidence()
	e.Waits.SourceReason = "pg_wait_sampling is loaded but not created in database postgres: CREATE EXTENSION pg_wait_sampling there"
	secs := EvidenceSections(e, "", Hints{})
	if !strings.Contains(secs[1].Text[0], "Source: pg_stat_activity") ||
		!strings.Contains(strings.Join(secs[1].Notes, " "), "Why this source: "+e.Waits.SourceReason) {
		t.Errorf("waits section %q, notes %q", secs[1].Text, secs[1].Notes)
	}
	var b bytes.Buffer
	if err := WriteEvidence(&b, e, 5); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "wait events    from pg_stat_activity every 100 ms") {
		t.Errorf("text:\n%s", b.String())
	}
}
