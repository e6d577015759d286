package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// TestRenderStoredRun renders the tables of a stored run
// (testdata/README.md) and checks its figures: the report's queries are
// found by their normalized text, the truth is the candidate's median
// over the control's with the range of the round pairs, and the verdict
// agreement and the summary follow from them.
func TestRenderStoredRun(t *testing.T) {
	var out bytes.Buffer
	if err := renderDir(&out, filepath.Join("testdata", "run")); err != nil {
		t.Fatal(err)
	}
	// The columns' widths are the tabwriter's: compared with single
	// spaces.
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"load average (1, 5, 15 min) at start 33.48 15.91 6.37",
		"rehearse exit 3, verdict fail: FAIL: mean>+50% broken by 1 query",
		"server  lookup by email      128.7x (122.1x-193.3x)  245.0x (182.7x-372.0x)  no no      1.90   7.375 / 14.859        regressed  caught",
		// The report predates the application level: its rows say
		// n/a, never the server's figure.
		"app     lookup by email      8.51x (7.27x-10.2x)     n/a                     no - -      9.541 / -             regressed  flagged",
		"server  order insert         0.98x (0.69x-2.22x)     1.03x (0.30x-1.50x)     yes yes     1.05   -0.002 / 0.004        unchanged  ok",
		"app     order insert         3.05x (2.42x-3.38x)     n/a                     no - -      2.289 / -             unchanged  not flagged",
		"throughput (candidate/control): true 1.00 (1.00-1.00), forecast 0.63 (0.59-0.74) statements/s",
		"throughput forecast within 15% of the truth in 0 of 1 changes, inside the truth's round pairs in 0 of 1",
		"replay span (median over rounds): control 5.2 s, candidate 8.2 s; sync object waits summed: control 7.5 s, candidate 27.6 s; the application ran 5s a round",
		"forecast (90% interval)",
		"time per call outside the server's work on the control, ms (the replay's round trip / the application's): lookup by email n/a / 1.213,",
		"summary: rows inside the interval 2 of 8 (server 2 of 4, app 0 of 4), caught 1 of 1 (server rows, true >= 1.5x), " +
			"passed 0 of 0 changes without a true regression, median forecast/true 1.27 (server rows), 1.90 (those true >= 1.5x), - (app rows)",
	} {
		if want = strings.Join(strings.Fields(want), " "); !strings.Contains(got, want) {
			t.Errorf("the table lacks %q; it reads:\n%s", want, got)
		}
	}
}

// TestRenderAppLevel renders a stored run whose report has the
// application level (testdata/README.md): the app rows take the
// replay's round trips' ratio and interval (levels.application), not
// the server's, with the time added per call beside the truth's, and the
// round trips' overhead on the control beside the application's.
func TestRenderAppLevel(t *testing.T) {
	var out bytes.Buffer
	if err := renderDir(&out, filepath.Join("testdata", "quiet")); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"server lookup by email 188.0x (163.6x-191.8x) 139.2x (137.4x-157.0x) no no 0.74 2.986 / 3.130 regressed caught",
		"app lookup by email 25.2x (24.4x-29.3x) 16.4x (14.9x-18.8x) no no 0.65 3.663 / 3.840 regressed flagged",
		"app order insert 3.97x (3.37x-4.37x) 2.61x (2.44x-3.29x) no no 0.66 0.560 / 0.529 unchanged not flagged",
		"app report by day 1.63x (1.54x-1.82x) 1.46x (1.41x-1.72x) yes yes 0.89 8.749 / 8.017 regressed flagged",
		"(the replay's round trip / the application's): lookup by email 0.227 / 0.136, order insert 0.282 / 0.157,",
		"summary: rows inside the interval 4 of 8 (server 3 of 4, app 1 of 4), caught 2 of 2 (server rows, true >= 1.5x), " +
			"passed 0 of 0 changes without a true regression, median forecast/true 0.92 (server rows), 0.82 (those true >= 1.5x), 0.65 (app rows)",
		"the truth's own noise: a forecast exactly as good as its intervals claim would hold the measured truth in about 6.2 of 8 rows " +
			"(server 3.2 of 4, app 3.1 of 4; each truth's noise from its rounds); within both noises at the interval's level: 4 of 8 (server 3, app 1)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q; it reads:\n%s", want, got)
		}
	}
}

// TestRenderInFlight renders a stored run whose candidate saturated its
// server (testdata/README.md, saturated/): the line of clients in flight
// has the application's and the replay's figures for each side, from
// the truth's transactions and the report's runs, and says how many
// clients there were.
func TestRenderInFlight(t *testing.T) {
	var out bytes.Buffer
	if err := renderDir(&out, filepath.Join("testdata", "saturated")); err != nil {
		t.Fatal(err)
	}
	want := "clients with a statement in flight on average (the application's / the replay's, medians over rounds): control 1.3 / 0.7, candidate 8.2 / 6.8, of 8"
	if !strings.Contains(out.String(), want) {
		t.Errorf("the table lacks %q; it reads:\n%s", want, out.String())
	}
	// Without the report's runs (a report kept before they were) the
	// line is left out, never written with zeros.
	out.Reset()
	if err := renderDir(&out, filepath.Join("testdata", "quiet")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "in flight") {
		t.Errorf("a report without its runs' figures gave a line of clients in flight:\n%s", out.String())
	}
}

// TestRowJudge: a true 1.5x or more at the server must be caught by a
// non-zero exit with the query among the regressions; an application's
// row is never counted.
func TestRowJudge(t *testing.T) {
	regressed := predicted{found: true, ratio: 2, low: 1.6, high: 2.5, status: compare.StatusRegressed}
	unchanged := predicted{found: true, ratio: 1.2, low: 0.9, high: 1.4, status: compare.StatusUnchanged}
	undecided := predicted{found: true, ratio: 1.45, low: 1.3, high: 1.7, status: compare.StatusUndecided}
	for _, c := range []struct {
		level     string
		truth     float64
		fc        predicted
		exit      int
		agreement string
		counted   bool
		inside    bool
	}{
		{levelServer, 2.2, regressed, 3, "caught", true, true},
		{levelServer, 2.2, regressed, 0, "MISSED", true, true},
		{levelServer, 1.6, unchanged, 0, "MISSED (true range holds 1)", true, false},
		{levelServer, 2.2, unchanged, 3, "MISSED", true, false},
		{levelServer, 1.6, undecided, 4, "undecided (exit non-zero)", true, true},
		{levelServer, 1.6, undecided, 0, "MISSED (true range holds 1)", true, true},
		{levelServer, 2.2, predicted{found: true, ratio: 2.4, low: 1.4, high: 2.7, status: compare.StatusSlowerWhileBusier}, 3,
			"slower while busier (exit non-zero)", true, true},
		{levelServer, 2.2, predicted{found: true, ratio: 2.4, low: 1.4, high: 2.7, status: compare.StatusSlowerWhileBusier}, 0,
			"MISSED", true, true},
		{levelServer, 1.2, regressed, 3, "flagged, true < 1.5x", false, false},
		{levelServer, 1.1, predicted{found: true, ratio: 1.13, low: 1.1, high: 1.2, status: compare.StatusTailRegressed, tailOf: compare.LevelApplication}, 3,
			"tail flagged at the app level, true < 1.5x", false, true},
		{levelServer, 1.2, unchanged, 0, "ok", false, true},
		{levelApp, 3, unchanged, 3, "not flagged", false, false},
		{levelApp, 2, regressed, 3, "flagged", false, true},
	} {
		// The truth's range of round pairs: from 1 below 1.6x.
		rw := row{level: c.level, truth: c.truth, tLow: c.truth - 0.6, tHigh: c.truth + 0.5, fc: c.fc}
		rw.judge(c.exit)
		if rw.agreement != c.agreement || rw.counted != c.counted || rw.inside != c.inside {
			t.Errorf("%s true %.1f, forecast %s, exit %d: got %q counted %v inside %v, want %q %v %v",
				c.level, c.truth, c.fc.status, c.exit, rw.agreement, rw.counted, rw.inside, c.agreement, c.counted, c.inside)
		}
	}
}

// TestAppLatencies reads pgbench's per-transaction log: latency less the
// schedule lag, per script, skipped transactions left out.
func TestAppLatencies(t *testing.T) {
	app, lag, txs, err := appLatencies(shop, []string{filepath.Join("testdata", "txlog")})
	if err != nil {
		t.Fatal(err)
	}
	// Script 2 (status update): (1903-81 + 8961-3311 + 16532-1763) / 3 µs.
	want := (1903.0 - 81 + 8961 - 3311 + 16532 - 1763) / 3 / 1000
	if got := app["status update"]; math.Abs(got-want) > 1e-9 || txs["status update"] != 3 {
		t.Errorf("status update: %v ms over %d transactions, want %v over 3", got, txs["status update"], want)
	}
	if got := lag["order insert"]; got != 5.157 || txs["order insert"] != 1 {
		t.Errorf("order insert: lag %v ms over %d, want 5.157 over 1", got, txs["order insert"])
	}
	if _, ok := txs["report by day"]; ok {
		t.Errorf("the skipped transaction was counted: %v", txs)
	}
}

func TestPairRange(t *testing.T) {
	low, high := pairRange([]float64{1, 2}, []float64{4, 6})
	if low != 2 || high != 6 {
		t.Errorf("pairRange = %v-%v, want 2-6", low, high)
	}
}

// TestReplaySideSyncOff: a replay with --sync off omits its waits
// (sync_wait_ms): none, not unknown; one without a sync at all (an older
// result) leaves them unknown.
func TestReplaySideSyncOff(t *testing.T) {
	off := compare.RunSummary{SpanS: 20, Sync: &results.Sync{Mode: results.SyncOff}}
	if span, waits, mode := replaySide(&compare.RunSummary{Runs: []compare.RunSummary{off, off}}); span != 20 || waits != 0 || mode != "off" {
		t.Errorf("sync off: span %v waits %v mode %q, want 20, 0, off", span, waits, mode)
	}
	if _, waits, _ := replaySide(&compare.RunSummary{SpanS: 20}); waits != -1 {
		t.Errorf("no sync: waits %v, want -1 (unknown)", waits)
	}
}

// TestRenderNextRun: a report whose effects have the interval of the
// application's next run (next_run) gets a column of it and of whether
// the truth lies inside, and a summary line that counts those rows; the
// stored saturated run's report, whose runs' means are kept, is given
// the next run's interval over them (stats.PredictInterval, as compare
// makes it) for its server rows: a fixture, the runs kept being the
// log's means where the report judged the server's time.
func TestRenderNextRun(t *testing.T) {
	src := filepath.Join("testdata", "saturated")
	dir := t.TempDir()
	cdir := filepath.Join(dir, "random-page-cost")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"load.txt", "random-page-cost/result.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(src, "random-page-cost", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	means := func(side map[string]any) []float64 {
		var v []float64
		for _, r := range side["runs"].([]any) {
			v = append(v, r.(map[string]any)["mean_ms"].(float64))
		}
		return v
	}
	n := 0
	for _, q := range doc["queries"].([]any) {
		q := q.(map[string]any)
		e := q["effects"].(map[string]any)["mean"].(map[string]any)
		_, low, high, ok := stats.PredictInterval(means(q["baseline"].(map[string]any)), means(q["candidate"].(map[string]any)), 0.1)
		if !ok {
			t.Fatal("no next run's interval over the stored runs")
		}
		e["next_run"] = map[string]any{"low": math.Min(low, e["low"].(float64)), "high": math.Max(high, e["high"].(float64)), "level": 0.9}
		n++
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := renderDir(&out, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d queries given a next run's interval:\n%s", n, out.String())
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"inside next within noise", "rows inside the interval of the application's next run (never judged)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q; it reads:\n%s", want, out.String())
		}
	}
	// The stored run without it keeps its table.
	out.Reset()
	if err := renderDir(&out, src); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "next") {
		t.Errorf("a report without next_run shows it:\n%s", out.String())
	}
}
