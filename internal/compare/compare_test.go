package compare

import (
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// q describes one query of a synthetic run: n calls with durations drawn
// around meanUS (exponential spread, fixed seed), errs of them failed.
type q struct {
	fp     string
	n      int
	meanUS float64
	errs   int
	// tailUS, when set, makes one call in tailEvery (10 when 0) take
	// this long instead.
	tailUS    float64
	tailEvery int
}

func makeRun(t *testing.T, kind string, hist bool, seed uint64, qs ...q) *Run {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	s := querystats.NewSet()
	for _, x := range qs {
		for i := range x.n {
			d := x.meanUS * (0.5 + r.ExpFloat64()*0.5)
			if every := max(x.tailEvery, 10); x.tailUS > 0 && i%every == 0 {
				d = x.tailUS
			}
			s.AddAt(x.fp, "SELECT "+x.fp, 1_700_000_000_000_000+int64(i)*1000, int64(d), i < x.errs)
		}
	}
	rows, err := s.Rows(querystats.RowOptions{Hist: hist})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"kind": kind, "queries": rows, "statements": map[string]int64{"total": int64(len(rows))}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := results.Decode(b, kind+".json")
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestCompareStatus: one run a side, judged against the default noise
// floors and the calls' own sampling error.
func TestCompareStatus(t *testing.T) {
	tests := []struct {
		name       string
		hist       bool
		base, cand q
		want       Status
	}{
		{"same distribution, other sample", true, q{fp: "a", n: 2000, meanUS: 1000}, q{fp: "a", n: 2000, meanUS: 1000}, StatusUnchanged},
		{"4x slower", true, q{fp: "a", n: 500, meanUS: 1000}, q{fp: "a", n: 500, meanUS: 4000}, StatusRegressed},
		{"4x faster", true, q{fp: "a", n: 500, meanUS: 4000}, q{fp: "a", n: 500, meanUS: 1000}, StatusImproved},
		{"tail only: 10% of calls 50 ms", true, q{fp: "a", n: 1000, meanUS: 1000}, q{fp: "a", n: 1000, meanUS: 1000, tailUS: 50_000}, StatusRegressed},
		{"3 calls, 4x slower", true, q{fp: "a", n: 3, meanUS: 1000}, q{fp: "a", n: 3, meanUS: 4000}, StatusTooFewCalls},
		{"9 calls is still too few", true, q{fp: "a", n: 9, meanUS: 1000}, q{fp: "a", n: 500, meanUS: 4000}, StatusTooFewCalls},
		{"2% slower on a busy query: within the default floor", true, q{fp: "a", n: 50000, meanUS: 1000}, q{fp: "a", n: 50000, meanUS: 1020}, StatusUnchanged},
		{"30% slower, one run a side: within the default floor", true, q{fp: "a", n: 5000, meanUS: 1000}, q{fp: "a", n: 5000, meanUS: 1300}, StatusUnchanged},
		{"without histograms, 4x slower", false, q{fp: "a", n: 500, meanUS: 1000}, q{fp: "a", n: 500, meanUS: 4000}, StatusRegressed},
		{"12 calls, one 100 ms outlier", true, q{fp: "a", n: 12, meanUS: 1000}, q{fp: "a", n: 12, meanUS: 1000, tailUS: 100_000, tailEvery: 12}, StatusUnchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := makeRun(t, "analysis", tt.hist, 1, tt.base)
			cand := makeRun(t, "analysis", tt.hist, 2, tt.cand)
			rep, err := Compare(base, cand, Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Query("a")
			if d.Status != tt.want {
				t.Errorf("status %s, want %s (ratio %+v, effects %+v, reasons %v)", d.Status, tt.want, d.Ratio, d.Effects, d.Reasons)
			}
			wantReg := tt.want == StatusRegressed
			if got := len(rep.RegressionsByAddedTime) == 1; got != wantReg {
				t.Errorf("regressions %v", rep.RegressionsByAddedTime)
			}
			if rep.Noise.Measured || rep.Verdict.NoiseMeasured {
				t.Error("one run a side: noise said measured")
			}
			if tt.want == StatusTooFewCalls && !slices.Contains(d.Reasons, ReasonTooFewCalls) {
				t.Errorf("reasons %v do not say too few calls", d.Reasons)
			}
		})
	}
}

// TestSameFiguresTwice: results with the same figures (the same file
// twice, two analyses of one log) are refused as identical, named; two
// samples of the same distribution pass.
func TestSameFiguresTwice(t *testing.T) {
	qs := []q{{fp: "a", n: 5000, meanUS: 800}, {fp: "b", n: 40, meanUS: 20000, errs: 3}, {fp: "c", n: 2, meanUS: 5}}
	base := makeRun(t, "analysis", true, 1, qs...)
	same := makeRun(t, "analysis", true, 1, qs...)
	same.Source = "again.json"
	_, err := Compare(base, same, Options{})
	var ie *IncompleteError
	if !errors.As(err, &ie) || len(ie.Reasons) != 1 || ie.Reasons[0].Kind != UnjudgeableIdentical || ie.Reasons[0].Other != "again.json" {
		t.Errorf("identical results: %v", err)
	}
	if _, err := Compare(base, base, Options{}); !errors.As(err, &ie) || ie.Reasons[0].Kind != UnjudgeableIdentical {
		t.Errorf("one result twice: %v", err)
	}
	other := makeRun(t, "analysis", true, 2, qs...)
	rules, _ := parseRules([]string{"p95>+20%,mean>+1%", "errors>+0pp", "total_ms>+0ms"})
	rep, err := Compare(base, other, Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict.Status != VerdictPass || len(rep.RegressionsByAddedTime) != 0 || len(rep.NewErrors) != 0 {
		t.Errorf("same distribution: verdict %+v, regressions %v", rep.Verdict, rep.RegressionsByAddedTime)
	}
}

func TestRanking(t *testing.T) {
	base := makeRun(t, "analysis", true, 1,
		q{fp: "busy", n: 5000, meanUS: 1000},   // 3x: 10 s added
		q{fp: "rare", n: 50, meanUS: 1000},     // 10x: 0.45 s added
		q{fp: "gone", n: 100, meanUS: 1000},    // only in the baseline
		q{fp: "steady", n: 1000, meanUS: 3000}, // unchanged
		q{fp: "few", n: 4, meanUS: 1000},       // too few calls
		q{fp: "failing", n: 200, meanUS: 1000}, // error rate 0 -> 10%
	)
	cand := makeRun(t, "analysis", true, 2,
		q{fp: "busy", n: 5000, meanUS: 3000},
		q{fp: "rare", n: 50, meanUS: 10000},
		q{fp: "steady", n: 1000, meanUS: 3000},
		q{fp: "few", n: 4, meanUS: 9000},
		q{fp: "new", n: 100, meanUS: 1000},
		q{fp: "failing", n: 200, meanUS: 1000, errs: 20},
	)
	rules, err := parseRules([]string{"p95>+400%", "errors>+5pp"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(base, cand, Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"by added time", rep.RegressionsByAddedTime, []string{"busy", "rare"}},
		{"by factor", rep.RegressionsByFactor, []string{"rare", "busy"}},
		{"only baseline", rep.OnlyBaseline, []string{"gone"}},
		{"only candidate", rep.OnlyCandidate, []string{"new"}},
		{"too few calls", rep.TooFewCalls, []string{"few"}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if rep.Queries[0].Fingerprint != "busy" || rep.Queries[1].Fingerprint != "rare" {
		t.Errorf("table does not start with the regressions: %s, %s", rep.Queries[0].Fingerprint, rep.Queries[1].Fingerprint)
	}
	var broken []string
	for _, b := range rep.Verdict.Broken {
		broken = append(broken, b.Rule+" "+b.Fingerprint)
	}
	if want := []string{"p95>+400% rare", "errors>+5pp failing"}; !reflect.DeepEqual(broken, want) {
		t.Errorf("broken %v, want %v", broken, want)
	}
	if rep.Verdict.Status != VerdictFail || rep.Verdict.Regressions != 2 || rep.Verdict.Worst != "busy" {
		t.Errorf("verdict %+v", rep.Verdict)
	}
}

func TestLatencySources(t *testing.T) {
	analysis := makeRun(t, "analysis", true, 1, q{fp: "a", n: 100, meanUS: 1000})
	replay := makeRun(t, "replay", true, 2, q{fp: "a", n: 100, meanUS: 1300})
	if analysis.LatencySource != LatencyServerLog || replay.LatencySource != LatencyClient {
		t.Fatalf("defaults: analysis %s, replay %s", analysis.LatencySource, replay.LatencySource)
	}
	_, err := Compare(analysis, replay, Options{})
	// The CLI phrases what to do (cli's report test: --allow-mixed-latency);
	// the error says which result measured where.
	var me *MixedLatencyError
	if !errors.Is(err, ErrMixedLatency) || !errors.As(err, &me) || me.BaselineSource != LatencyServerLog || me.CandidateSource != LatencyClient ||
		!strings.Contains(err.Error(), "analysis.json has server_log latency and replay.json has client latency") {
		t.Fatalf("mixed sources: err = %v", err)
	}
	rep, err := Compare(analysis, replay, Options{AllowMixedLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.MixedLatency || !rep.Query("a").MixedLatency || !rep.Verdict.Mixed || !hasWarning(rep, WarnMixedLatency) {
		t.Errorf("mixed comparison not flagged: %+v", rep.Verdict)
	}
	replay.LatencySource = LatencyServerLog // replay --target-log
	if _, err := Compare(analysis, replay, Options{}); err != nil {
		t.Errorf("server-side replay vs analysis: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	one := []map[string]any{row("a", 100, 1, 1)}
	base := replayRun(t, "b", map[string]any{"latency_source": "server_log", "errors_by_sqlstate": map[string]int64{"23505": 5, "42P01": 1}}, one, nil)
	cand := replayRun(t, "c", map[string]any{"latency_source": "server_log", "errors_by_sqlstate": map[string]int64{"23505": 5, "42P01": 3, "57014": 40},
		"errors": []map[string]any{{"sqlstate": "57014", "fingerprint": "slow", "count": 40}}}, one, nil)
	rep, err := Compare(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []ErrorDiff{
		{SQLState: "57014", Baseline: 0, Candidate: 40, New: true, Fingerprints: []string{"slow"}},
		{SQLState: "42P01", Baseline: 1, Candidate: 3},
	}
	if !reflect.DeepEqual(rep.NewErrors, want) {
		t.Errorf("new errors %+v, want %+v", rep.NewErrors, want)
	}
}

// TestUncodedErrors: a log without %e counts its errors as unknown; the
// same errors coded on the other side are matched by count, never new,
// and only what the uncoded ones cannot account for is.
func TestUncodedErrors(t *testing.T) {
	one := []map[string]any{row("a", 100, 1, 1)}
	mk := func(name string, codes map[string]int64) *Run {
		// Each its own wall time: never the same result twice.
		return replayRun(t, name, map[string]any{"latency_source": "server_log", "errors_by_sqlstate": codes, "wall_seconds": 10 + len(name)}, one, nil)
	}
	tests := []struct {
		name    string
		b, c    map[string]int64
		want    []ErrorDiff
		matched int64
	}{
		{"baseline without %e", map[string]int64{"unknown": 97}, map[string]int64{"23505": 97}, nil, 97},
		{"candidate without %e", map[string]int64{"23505": 97}, map[string]int64{"unknown": 97}, nil, 97},
		{"more than the uncoded account for", map[string]int64{"unknown": 50}, map[string]int64{"23505": 97},
			[]ErrorDiff{{SQLState: "23505", Baseline: 50, Candidate: 97}}, 50},
		{"both coded", map[string]int64{"23505": 97}, map[string]int64{"23505": 97}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Compare(mk("b", tt.b), mk("cand", tt.c), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.NewErrors) == 0 {
				rep.NewErrors = nil
			}
			if !reflect.DeepEqual(rep.NewErrors, tt.want) || rep.UncodedErrors != tt.matched {
				t.Errorf("new errors %+v, matched %d; want %+v, %d", rep.NewErrors, rep.UncodedErrors, tt.want, tt.matched)
			}
			if hasWarning(rep, WarnUncodedErrors) != (tt.matched > 0) {
				t.Errorf("warnings %+v", rep.Warnings)
			}
		})
	}
}

func hasWarning(rep *Report, k WarningKind) bool {
	for _, w := range rep.Warnings {
		if w.Kind == k {
			return true
		}
	}
	return false
}

func TestSummarize(t *testing.T) {
	r := makeRun(t, "analysis", true, 1, q{fp: "a", n: 10, meanUS: 100}, q{fp: "b", n: 100, meanUS: 1000})
	rep := Summarize(r)
	if rep.Verdict.Status != "summary" || rep.Candidate != nil || rep.Queries[0].Fingerprint != "b" {
		t.Errorf("summary: %+v, first %s", rep.Verdict, rep.Queries[0].Fingerprint)
	}
	if rep.Baseline.P95MS <= 0 || rep.Baseline.TimedCalls != 110 {
		t.Errorf("run summary %+v", rep.Baseline)
	}
}

func TestProportionIncrease(t *testing.T) {
	if p := proportionIncrease(0, 1000, 50, 1000); p > 1e-6 {
		t.Errorf("0%% -> 5%% of 1000: p = %v", p)
	}
	if p := proportionIncrease(5, 1000, 6, 1000); p < 0.1 {
		t.Errorf("0.5%% -> 0.6%%: p = %v", p)
	}
	if p := proportionIncrease(0, 10, 0, 10); p != 1 {
		t.Errorf("no errors: p = %v", p)
	}
}

// TestMinEffectMS: a slowdown of a few microseconds is not a regression
// when MinEffectMS asks for more; the default asks for
// DefaultMinEffectMS, and a negative value for nothing. Unless the query
// is a material share of the run's time (DefaultMinTimeShare): alone in
// its run, its 4x slower mean adds three times the run's time, and the
// floor does not spare it.
func TestMinEffectMS(t *testing.T) {
	b := makeRun(t, "analysis", true, 1, q{fp: "a", n: 2000, meanUS: 10})
	c := makeRun(t, "analysis", true, 2, q{fp: "a", n: 2000, meanUS: 40})
	for _, tt := range []struct {
		minMS, share float64
		want         Status
	}{{-1, -1, StatusRegressed}, {0.01, -1, StatusRegressed}, {0, -1, StatusSmallChange}, {0.1, -1, StatusSmallChange},
		{0, 0, StatusRegressed}, {0.1, 0.5, StatusRegressed}} {
		rules, err := parseRules([]string{"p95>+20%", "mean>+50%"})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Compare(b, c, Options{MinEffectMS: tt.minMS, MinTimeShare: tt.share, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		if broken := len(rep.Verdict.Broken) > 0; broken != (tt.want == StatusRegressed) {
			t.Errorf("MinEffectMS %g, share %g: rule broken %v, want %v", tt.minMS, tt.share, broken, tt.want == StatusRegressed)
		}
		if d := rep.Query("a"); d.Status != tt.want || (tt.want == StatusSmallChange && !slices.Contains(d.Reasons, ReasonUnderMSFloor)) {
			t.Errorf("MinEffectMS %g, share %g: status %s, want %s (%v)", tt.minMS, tt.share, d.Status, tt.want, d.Reasons)
		}
	}
}

// TestSharedCPUWarning: a replay as fast as possible on the target's own
// machine says its rate is a lower bound, in a comparison (either side)
// and a summary; a remote target or a paced replay says nothing.
func TestSharedCPUWarning(t *testing.T) {
	replay := func(name string, extra map[string]any) *Run {
		t.Helper()
		extra = maps.Clone(extra)
		extra["statements"] = map[string]int64{"total": 5000}
		return replayRun(t, name, extra, []map[string]any{row("a", 5000, 0.1, 0.1)}, nil)
	}
	tests := []struct {
		name  string
		extra map[string]any
		want  *Warning // nil for none
	}{
		{"speed 0, local", map[string]any{"speed": 0, "client_cpu_seconds": 3, "target_local": true},
			&Warning{Kind: WarnSharedCPU, Run: "run.json", Source: LatencyClient, ClientCPUSeconds: 3, WallSeconds: 10, StatementsPerS: 500}},
		{"speed 0, local, server-side latency", map[string]any{"speed": 0, "client_cpu_seconds": 3, "target_local": true, "latency_source": "server_log"},
			&Warning{Kind: WarnSharedCPU, Run: "run.json", Source: LatencyServerLog, ClientCPUSeconds: 3, WallSeconds: 10, StatementsPerS: 500}},
		{"speed 0, local, CPU unknown", map[string]any{"speed": 0, "target_local": true},
			&Warning{Kind: WarnSharedCPU, Run: "run.json", Source: LatencyClient, StatementsPerS: 500}},
		{"speed 0, remote", map[string]any{"speed": 0, "client_cpu_seconds": 3}, nil},
		{"speed 1, local", map[string]any{"speed": 1, "client_cpu_seconds": 3, "target_local": true}, nil},
		{"speed 0.5, local", map[string]any{"speed": 0.5, "client_cpu_seconds": 3, "target_local": true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := replay("run.json", tt.extra)
			other := replay("other.json", map[string]any{"speed": 1, "latency_source": string(run.LatencySource)})
			var reps []*Report
			for _, pair := range [][2]*Run{{other, run}, {run, other}} {
				rep, err := Compare(pair[0], pair[1], Options{})
				if err != nil {
					t.Fatal(err)
				}
				reps = append(reps, rep)
			}
			reps = append(reps, Summarize(run))
			for i, rep := range reps {
				var got []Warning
				for _, w := range rep.Warnings {
					if w.Kind == WarnSharedCPU {
						got = append(got, w)
					}
				}
				if tt.want == nil {
					if len(got) > 0 {
						t.Errorf("report %d: unexpected warning %+v", i, got)
					}
					continue
				}
				if len(got) != 1 || got[0] != *tt.want {
					t.Errorf("report %d: warnings %+v, want %+v", i, got, *tt.want)
				}
			}
		})
	}
}
