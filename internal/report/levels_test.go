package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// levelsReport compares three rounds a side of a lookup whose logged
// mean goes from 0.3 to 6.2 ms (0.2 ms of it overhead per call) while
// pg_stat_statements counts 0.1 then 6 ms a call: 60x on the server,
// about 20x in the log; the round trips are kept (the application's
// level). The rule mean>30x breaks on the server's time only.
func levelsReport(t *testing.T) *compare.Report {
	t.Helper()
	return levelsReportAt(t, "")
}

// levelsReportAt is levelsReport's comparison with its means judged on
// level l (compare.Options.JudgeLevel).
func levelsReportAt(t *testing.T, l compare.Level) *compare.Report {
	t.Helper()
	side := func(seed uint64, logUS, serverMS float64) []*compare.Run {
		var runs []*compare.Run
		for i := range 3 {
			q := synthQuery{"a1b2c3d4e5f60718", "SELECT * FROM customers WHERE email = $1", 2000, logUS, 0}
			r := keepRoundTrips(synthRun(t, "analysis", seed+uint64(i), false, q))
			ms := serverMS * (1 + 0.01*float64(i))
			ev := observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: []observe.Query{
				{Fingerprint: q.fp, QueryStats: observe.QueryStats{Calls: 2000, TotalExecMS: 2000 * ms}}}}}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			r.Evidence = b
			runs = append(runs, r)
		}
		return runs
	}
	rules, err := judge.ParsePairRules([]string{"mean>30x"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := compare.Runs(side(1, 300, 0.1), side(11, 6200, 6), compare.Options{Rules: rules, JudgeLevel: l})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestLevelsReportedApplication: asked to judge the application's round
// trips, the verdict, the broken rule and the regressions name that
// level; the lookup's 0.6 -> 6.6 ms round trip (its 0.3 ms of overhead
// on both sides) does not break mean>30x there, as its server time does.
func TestLevelsReportedApplication(t *testing.T) {
	rep := levelsReportAt(t, compare.LevelApplication)
	var text bytes.Buffer
	if err := WriteComparison(&text, rep, 10); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, s := range []string{"the mean judged on the application's round trips for 1 of 1 query\n",
		"(mean on the application's round trips 10.99x (10.69-11.29), +11.99 s per run)"} {
		if !strings.Contains(out, s) {
			t.Errorf("the text lacks %q:\n%s", s, out)
		}
	}
	if rep.Verdict.Status == compare.VerdictFail || strings.Contains(out, "server time (pg_stat_statements) for") {
		t.Errorf("verdict %s:\n%s", rep.Verdict.Status, out)
	}
}

// TestLevelsReported: the text, the JSON and the page set the levels
// side by side and say the mean is judged on the server's time, as the
// broken rule and the top regression do.
func TestLevelsReported(t *testing.T) {
	rep := levelsReport(t)
	var text bytes.Buffer
	if err := WriteComparison(&text, rep, 10); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, s := range []string{"Time per call at each level (server: pg_stat_statements' execution + planning per call;",
		"mean judged on", "app overhead ms", "mean on server time (pg_stat_statements) 0.101 ms -> 6.06 ms (60.00x, interval",
		"(mean on server time (pg_stat_statements) 60.00x (",
		"(90% intervals); the mean judged on server time (pg_stat_statements) for 1 of 1 query\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("the text lacks %q:\n%s", s, out)
		}
	}
	row := ""
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "server ") && strings.Contains(line, "0.101 -> 6.06") {
			row = line
		}
	}
	if row == "" || !strings.Contains(row, "60.00x (") {
		t.Errorf("no levels row with the server's 0.101 -> 6.06 ms, 60x:\n%s", out)
	}

	b, err := json.Marshal(ComparisonDocument(rep))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Verdict struct {
			Broken []struct {
				Level  string `json:"level"`
				Detail string `json:"detail"`
			} `json:"broken"`
		} `json:"verdict"`
		Queries []struct {
			Factor float64 `json:"factor"`
			Levels struct {
				Judged      string `json:"judged"`
				Percentiles string `json:"percentiles"`
				Server      struct {
					Mean struct{ Ratio, Low, High float64 } `json:"mean"`
				} `json:"server"`
				Log struct {
					Mean struct{ Ratio float64 } `json:"mean"`
				} `json:"server_log"`
				Application struct {
					Mean struct{ Ratio float64 } `json:"mean"`
				} `json:"application"`
				OverheadMS    float64 `json:"log_overhead_ms"`
				AppOverheadMS float64 `json:"application_overhead_ms"`
			} `json:"levels"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Verdict.Broken) != 1 || doc.Verdict.Broken[0].Level != "server" || len(doc.Queries) != 1 {
		t.Fatalf("JSON verdict %+v, %d queries", doc.Verdict, len(doc.Queries))
	}
	lv := doc.Queries[0].Levels
	if lv.Judged != "server" || lv.Percentiles != "server_log" || lv.Server.Mean.Ratio < 59 || lv.Server.Mean.Ratio > 61 ||
		lv.Server.Mean.Low > lv.Server.Mean.Ratio || lv.Server.Mean.High < lv.Server.Mean.Ratio || lv.Log.Mean.Ratio > 30 ||
		lv.Application.Mean.Ratio >= lv.Log.Mean.Ratio || lv.OverheadMS < 0.15 || lv.OverheadMS > 0.25 || doc.Queries[0].Factor != lv.Server.Mean.Ratio ||
		lv.AppOverheadMS < 0.4 || lv.AppOverheadMS > 0.6 {
		t.Errorf("JSON levels %+v, factor %.1f", lv, doc.Queries[0].Factor)
	}

	p := ComparisonPage(rep, ComparisonOptions{})
	var page bytes.Buffer
	if err := htmlreport.Write(&page, p); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range p.Sections {
		if s.ID == "levels" {
			found = len(s.Tables) == 1 && len(s.Tables[0].Rows) == 1 && s.Tables[0].Rows[0].Cells[1].Text == "server"
		}
	}
	if !found || !strings.Contains(page.String(), "Time per call at each level") {
		t.Errorf("the page has no levels' table judged on the server")
	}
}
