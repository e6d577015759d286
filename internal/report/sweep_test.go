package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/sweep"
)

// syntheticSweep is a two-configuration sweep whose "on" configuration
// falls off a cliff.
func syntheticSweep() *sweep.Result {
	cpu := 1.5
	perTx := 0.02
	res := &sweep.Result{Kind: "sweep", Version: 1, Target: "throwaway", ClientCPUs: 2,
		Workload: sweep.WorkloadInfo{Kind: "pgbench", Builtin: "select-only", Mode: "simple", Scale: 10},
		Plan:     sweep.PlanInfo{Clients: []int{1, 2, 4, 8}, WarmupS: 5, DurationS: 10, CliffRatio: 0.8}}
	for _, c := range []struct {
		name string
		tps  []float64
	}{{"on", []float64{10e3, 19e3, 30e3, 20e3}}, {"off", []float64{11e3, 21e3, 36e3, 38e3}}} {
		cr := sweep.ConfigRun{Name: c.name, Settings: map[string]string{"pg_stat_statements.track_planning": c.name}}
		for i, tps := range c.tps {
			cr.Steps = append(cr.Steps, sweep.Step{Clients: 1 << i, TPS: tps, Transactions: int64(tps * 10),
				Latency:    sweep.Latency{Mean: 0.05 * float64(i+1), P50: 0.04 * float64(i+1), P95: 0.1 * float64(i+1), P99: 0.2 * float64(i+1), Max: 3},
				ServerCPUS: &cpu, CPUPerTxMS: &perTx,
				WaitEvents: []sweep.Wait{{Type: "LWLock", Event: "pg_stat_statements", Samples: 30, Share: 0.6}, {Type: "CPU", Event: "running", Samples: 20, Share: 0.4}},
				HotQueries: []sweep.Hot{{QueryID: -42, Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1", CallsPerS: tps, PlansPerS: tps, ShareCalls: 1}}})
		}
		cr.Peak = sweep.FindPeak(cr.Steps)
		cr.Cliff = sweep.FindCliff(cr.Steps, 0.8)
		res.Configs = append(res.Configs, cr)
	}
	res.Comparison = sweep.CompareConfigs(res.Configs)
	return res
}

func TestSweepChartOption(t *testing.T) {
	res := syntheticSweep()
	var opt struct {
		XAxis  map[string]any   `json:"xAxis"`
		YAxis  []map[string]any `json:"yAxis"`
		Series []struct {
			Name       string       `json:"name"`
			YAxisIndex int          `json:"yAxisIndex"`
			Data       [][2]float64 `json:"data"`
		} `json:"series"`
	}
	if err := json.Unmarshal(curveOption(res), &opt); err != nil {
		t.Fatal(err)
	}
	// Both configurations on one chart: TPS on the left axis, p95 on
	// the right.
	if len(opt.Series) != 4 || len(opt.YAxis) != 2 || opt.XAxis["type"] != "log" {
		t.Fatalf("option %+v", opt)
	}
	want := []struct {
		name string
		axis int
		last [2]float64
	}{{"on TPS", 0, [2]float64{8, 20e3}}, {"on p95 ms", 1, [2]float64{8, 0.4}}, {"off TPS", 0, [2]float64{8, 38e3}}, {"off p95 ms", 1, [2]float64{8, 0.4}}}
	for i, w := range want {
		s := opt.Series[i]
		if s.Name != w.name || s.YAxisIndex != w.axis || len(s.Data) != 4 || s.Data[3] != w.last {
			t.Errorf("series %d: %+v, want %+v", i, s, w)
		}
	}
}

func TestWriteSweep(t *testing.T) {
	cpu := 0.02
	res := &sweep.Result{
		Workload: sweep.WorkloadInfo{Kind: "pgbench", Builtin: "select-only", Mode: "simple", Scale: 1},
		Target:   "throwaway", ClientCPUs: 2, Plan: sweep.PlanInfo{WarmupS: 1, DurationS: 2},
		Configs: []sweep.ConfigRun{
			{Name: "on", Settings: map[string]string{"pg_stat_statements.track_planning": "on"},
				Steps: []sweep.Step{{Clients: 1, TPS: 100, CPUPerTxMS: &cpu, WaitEvents: []sweep.Wait{{Type: "LWLock", Event: "pg_stat_statements", Samples: 5, Share: 0.5}}},
					{Clients: 2, TPS: 50}}},
			{Name: "off", Settings: map[string]string{"pg_stat_statements.track_planning": "off"},
				Steps: []sweep.Step{{Clients: 1, TPS: 120}, {Clients: 2, TPS: 200}}},
		},
	}
	for i := range res.Configs {
		res.Configs[i].Knee = sweep.FindKnee(res.Configs[i].Steps)
		res.Configs[i].Peak = sweep.FindPeak(res.Configs[i].Steps)
		res.Configs[i].Cliff = sweep.FindCliff(res.Configs[i].Steps, 0.8)
	}
	res.Comparison = sweep.CompareConfigs(res.Configs)
	out := sweepText(t, res)
	if strings.Contains(out, "WARNING") {
		t.Errorf("a sweep whose driver did not share the server warns:\n%s", out)
	}
	wantIn(t, "output", out,
		"configuration on: pg_stat_statements.track_planning=on",
		"LWLock:pg_stat_statements 50%",
		"unknown", // CPU of the steps without it
		"cliff: 2 clients, 50.0 TPS = 0.50 of the peak",
		"cliff: no cliff up to 2 clients",
		"TPS vs clients (full bar = 200.0 TPS)",
		"off/on",
		"4.000", // off/on at 2 clients: 200 / 50
	)
}

// A log sweep names its log, its sessions and its concurrency, and says
// what its TPS counts.
func TestWriteSweepLog(t *testing.T) {
	res := &sweep.Result{Target: "throwaway", ClientCPUs: 2, Plan: sweep.PlanInfo{WarmupS: 1, DurationS: 2},
		Workload: sweep.WorkloadInfo{Kind: "log", Log: "/tmp/x/pgbench.csv", LogSessions: 3, LogConcurrency: 2, LogStatements: 500, LogSpanS: 1.5, Scale: 1},
		Configs: []sweep.ConfigRun{{Name: "default", Steps: []sweep.Step{{Clients: 1, TPS: 100, StatementsPerS: 500,
			Sessions: &sweep.SessionLoad{MeanOpen: 1}}}}}}
	wantIn(t, "output", sweepText(t, res), "sweep: log pgbench.csv replayed at speed 0 (3 sessions, at most 2 at once, 500 statements in 1.5 s of log time), pgbench -i scale 1",
		"TPS: transactions/s (COMMIT, ROLLBACK and statements outside a transaction block)", "stmt/s",
	)
}

// A flat curve leads with its knee, says that its highest reading is
// within noise of it, and a driver on the server's machine is warned of.
func TestWriteSweepKnee(t *testing.T) {
	steps := []sweep.Step{
		{Clients: 1, TPS: 5000, Latency: sweep.Latency{Mean: 0.2}},
		{Clients: 2, TPS: 5150, Latency: sweep.Latency{Mean: 0.39}},
		{Clients: 4, TPS: 4950, Latency: sweep.Latency{Mean: 0.81}},
	}
	res := &sweep.Result{Workload: sweep.WorkloadInfo{Kind: "pgbench", Builtin: "select-only", Mode: "simple"},
		Target: "throwaway", ClientCPUs: 2, DriverSharesServer: true,
		Configs: []sweep.ConfigRun{{Name: "default", Steps: steps, Knee: sweep.FindKnee(steps), Peak: sweep.FindPeak(steps), Cliff: sweep.FindCliff(steps, 0.8)}}}
	out := sweepText(t, res)
	wantIn(t, "output", out,
		"WARNING: the load generator ran on the server's machine (2 CPUs shared)",
		"knee:  1 clients, 5000.0 TPS at 0.200 ms mean: from 1 to 2 clients TPS grew 1.03x while latency grew 1.95x",
		"peak:  2 clients, 5150.0 TPS, not told from the knee's (1-4 clients within noise of it): no real gain past the knee",
	)
	if i, j := strings.Index(out, "knee:"), strings.Index(out, "peak:"); i < 0 || j < i {
		t.Errorf("the knee does not come before the peak:\n%s", out)
	}
}

// A comparison of one step per client count measured no noise: its ratios
// print bare, without interval or "~", and every configuration says why
// it has no knee and no cliff; the page says so too.
func TestWriteSweepNoiseUnmeasured(t *testing.T) {
	res := syntheticSweep()
	sweep.Judge(res, 1, 0.8)
	out := sweepText(t, res)
	wantIn(t, "output", out,
		"TPS relative to on (medians; no interval, no ~: one step per client count measures no noise between steps (--repeat 3 measures it, the default with --compare))",
		"  knee, cliff: not judged: one step per client count measures no noise",
		"1.200\n", // off/on at 4 clients, bare
	)
	for _, bad := range []string{"cliff: 8 clients", "knee:  ", "within noise", "(1.", " ~\n"} {
		if strings.Contains(out, bad) {
			t.Errorf("output claims %q against unmeasured noise:\n%s", bad, out)
		}
	}
	if n := strings.Count(out, "not judged"); n != 2 {
		t.Errorf("%d configurations say why they are not judged, want 2:\n%s", n, out)
	}
	page := SweepSections(res)
	if !strings.Contains(strings.Join(page[0].Text, " "), "one step per client count measures no noise") {
		t.Errorf("the page does not say why nothing is judged: %v", page[0].Text)
	}
}

// A knee and a cliff one curve alone shows, whose curve cannot be told
// from the other's, say so on both the text and the page, and are not
// claimed.
func TestWriteSweepNotToldApart(t *testing.T) {
	steps := []sweep.Step{{Clients: 1, TPS: 5000, Latency: sweep.Latency{Mean: 0.2}}, {Clients: 2, TPS: 5100, Latency: sweep.Latency{Mean: 0.39}}}
	res := &sweep.Result{Workload: sweep.WorkloadInfo{Kind: "pgbench", Builtin: "select-only", Mode: "simple"}, Target: "throwaway", ClientCPUs: 2,
		Configs: []sweep.ConfigRun{
			{Name: "a", Steps: steps, Peak: &sweep.Peak{Clients: 2, TPS: 5100},
				Knee:  &sweep.Knee{Clients: 2, Lo: 2, Hi: 2, UpTo: 8, Indistinct: "b"},
				Cliff: &sweep.Cliff{Clients: 8, Ratio: 0.8, UpTo: 8, Indistinct: "b"}},
			{Name: "b", Steps: steps, Peak: &sweep.Peak{Clients: 2, TPS: 5100},
				Knee: &sweep.Knee{UpTo: 8, Lo: 4, Hi: 8}, Cliff: &sweep.Cliff{Ratio: 0.8, UpTo: 8}}}}
	out := sweepText(t, res)
	wantIn(t, "output", out,
		"knee:  not told apart: this curve alone shows one at 2 clients, b's none, and no client count's TPS or TPS over latency tells the two curves apart beyond the noise",
		"cliff: not told apart: this curve alone falls below 0.80 of its peak at 8 clients, b's does not",
	)
	for _, bad := range []string{"knee:  2 clients", "cliff: 8 clients"} {
		if strings.Contains(out, bad) {
			t.Errorf("output claims %q:\n%s", bad, out)
		}
	}
	cards := peakCards(res.Configs[0])
	if cards[0].Value != "not told apart" || cards[len(cards)-1].Value != "not told apart" {
		t.Errorf("the page's cards claim them: %+v", cards)
	}
}

// sweepText is WriteSweep's text of res.
func sweepText(t *testing.T, res *sweep.Result) string {
	t.Helper()
	var b strings.Builder
	if err := WriteSweep(&b, res); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
