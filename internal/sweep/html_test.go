package sweep

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

// syntheticResult is a two-configuration sweep whose "on" configuration
// falls off a cliff.
func syntheticResult() *Result {
	cpu := 1.5
	perTx := 0.02
	res := &Result{Kind: "sweep", Version: 1, Target: "throwaway", ClientCPUs: 2,
		Workload: WorkloadInfo{Kind: "pgbench", Builtin: "select-only", Mode: "simple", Scale: 10},
		Plan:     PlanInfo{Clients: []int{1, 2, 4, 8}, WarmupS: 5, DurationS: 10, CliffRatio: 0.8}}
	for _, c := range []struct {
		name string
		tps  []float64
	}{{"on", []float64{10e3, 19e3, 30e3, 20e3}}, {"off", []float64{11e3, 21e3, 36e3, 38e3}}} {
		cr := ConfigRun{Name: c.name, Settings: map[string]string{"pg_stat_statements.track_planning": c.name}}
		for i, tps := range c.tps {
			cr.Steps = append(cr.Steps, Step{Clients: 1 << i, TPS: tps, Transactions: int64(tps * 10),
				Latency:    Latency{Mean: 0.05 * float64(i+1), P50: 0.04 * float64(i+1), P95: 0.1 * float64(i+1), P99: 0.2 * float64(i+1), Max: 3},
				ServerCPUS: &cpu, CPUPerTxMS: &perTx,
				WaitEvents: []Wait{{"LWLock", "pg_stat_statements", 30, 0.6}, {"CPU", "running", 20, 0.4}},
				HotQueries: []Hot{{QueryID: -42, Query: pgbenchQuery, CallsPerS: tps, PlansPerS: tps, ShareCalls: 1}}})
		}
		cr.Peak = FindPeak(cr.Steps)
		cr.Cliff = FindCliff(cr.Steps, 0.8)
		res.Configs = append(res.Configs, cr)
	}
	res.Comparison = compare(res.Configs)
	return res
}

func TestHTMLOption(t *testing.T) {
	res := syntheticResult()
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

// The page draws its chart and its tables work in a real browser.
func TestHTMLInBrowser(t *testing.T) {
	var page bytes.Buffer
	if err := htmlreport.Write(&page, HTMLPage(syntheticResult())); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sweep.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := htmltest.DumpDOM(t, path, "selfcheck")
	m := regexp.MustCompile(`(?s)<pre id="selfcheck"[^>]*>(.*?)</pre>`).FindSubmatch(dom)
	if m == nil || len(bytes.TrimSpace(m[1])) == 0 {
		t.Fatalf("the page wrote no self-check")
	}
	var sc struct {
		Library        string `json:"library"`
		ChartsRendered int    `json:"charts_rendered"`
		Tables         []struct {
			ID          string `json:"id"`
			Rows        int    `json:"rows"`
			SortedOK    bool   `json:"sorted_ok"`
			DetailShown bool   `json:"detail_shown"`
		} `json:"tables"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &sc); err != nil {
		t.Fatalf("self-check: %v\n%s", err, m[1])
	}
	if len(sc.Errors) > 0 || sc.Library == "" || sc.ChartsRendered != 1 {
		t.Errorf("self-check: library %q, %d charts rendered, errors %v", sc.Library, sc.ChartsRendered, sc.Errors)
	}
	var ids []string
	for _, tb := range sc.Tables {
		ids = append(ids, tb.ID)
		if tb.Rows != 4 || !tb.SortedOK || !tb.DetailShown {
			t.Errorf("table %+v", tb)
		}
	}
	if got := strings.Join(ids, " "); got != "sweep-compare sweep-steps-on sweep-steps-off" {
		t.Errorf("tables %s", got)
	}
}
