package compare

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
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
	// tailUS, when set, makes 10% of the calls take this long instead.
	tailUS float64
}

func makeRun(t *testing.T, kind string, hist bool, seed uint64, qs ...q) *Run {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	s := querystats.NewSet()
	for _, x := range qs {
		for i := range x.n {
			d := x.meanUS * (0.5 + r.ExpFloat64()*0.5)
			if x.tailUS > 0 && i%10 == 0 {
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
		{"2% slower on a busy query: real, below min effect", true, q{fp: "a", n: 50000, meanUS: 1000}, q{fp: "a", n: 50000, meanUS: 1020}, StatusSmallChange},
		{"summary only, 4x slower", false, q{fp: "a", n: 500, meanUS: 1000}, q{fp: "a", n: 500, meanUS: 4000}, StatusRegressed},
		{"summary only, 30% slower is not beyond the tail", false, q{fp: "a", n: 500, meanUS: 1000}, q{fp: "a", n: 500, meanUS: 1300}, StatusUnchanged},
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
				t.Errorf("status %s, want %s (ratio %+v, significance %+v, note %q)", d.Status, tt.want, d.Ratio, d.Significance, d.Note)
			}
			wantReg := tt.want == StatusRegressed
			if got := len(rep.RegressionsByAddedTime) == 1; got != wantReg {
				t.Errorf("regressions %v", rep.RegressionsByAddedTime)
			}
			if tt.want == StatusTooFewCalls && !strings.Contains(d.Note, "too few calls") {
				t.Errorf("note %q does not say too few calls", d.Note)
			}
		})
	}
}

func TestIdenticalResultsPass(t *testing.T) {
	for _, hist := range []bool{true, false} {
		qs := []q{{fp: "a", n: 5000, meanUS: 800}, {fp: "b", n: 40, meanUS: 20000, errs: 3}, {fp: "c", n: 2, meanUS: 5}}
		base := makeRun(t, "analysis", hist, 1, qs...)
		cand := makeRun(t, "analysis", hist, 1, qs...)
		rules, _ := ParseRules([]string{"p95>+20%,mean>+1%", "errors>+0pp", "total_ms>+0ms"})
		rep, err := Compare(base, cand, Options{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict.Status != "pass" || len(rep.RegressionsByAddedTime) != 0 || len(rep.NewErrors) != 0 {
			t.Errorf("hist=%v: identical results: verdict %+v, regressions %v", hist, rep.Verdict, rep.RegressionsByAddedTime)
		}
		for _, d := range rep.Queries {
			if d.Significance.Significant {
				t.Errorf("hist=%v: %s significant on identical data: %+v", hist, d.Fingerprint, d.Significance)
			}
		}
	}
}

func TestRanking(t *testing.T) {
	base := makeRun(t, "analysis", true, 1,
		q{fp: "busy", n: 5000, meanUS: 1000},   // +50%: 2.5 s added
		q{fp: "rare", n: 50, meanUS: 1000},     // 10x: 0.45 s added
		q{fp: "gone", n: 100, meanUS: 1000},    // only in the baseline
		q{fp: "steady", n: 1000, meanUS: 3000}, // unchanged
		q{fp: "few", n: 4, meanUS: 1000},       // too few calls
		q{fp: "failing", n: 200, meanUS: 1000}, // error rate 0 -> 10%
	)
	cand := makeRun(t, "analysis", true, 2,
		q{fp: "busy", n: 5000, meanUS: 1500},
		q{fp: "rare", n: 50, meanUS: 10000},
		q{fp: "steady", n: 1000, meanUS: 3000},
		q{fp: "few", n: 4, meanUS: 9000},
		q{fp: "new", n: 100, meanUS: 1000},
		q{fp: "failing", n: 200, meanUS: 1000, errs: 20},
	)
	rules, err := ParseRules([]string{"p95>+400%", "errors>+5pp"})
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
	if rep.Verdict.Status != "fail" || !strings.HasPrefix(rep.Verdict.Line, "FAIL: p95>+400% broken by 1 query") {
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
	if !rep.MixedLatency || !rep.Query("a").MixedLatency || !strings.HasPrefix(rep.Verdict.Line, "MIXED LATENCY") {
		t.Errorf("mixed comparison not flagged: %+v", rep.Verdict)
	}
	replay.LatencySource = LatencyServerLog // replay --target-log
	if _, err := Compare(analysis, replay, Options{}); err != nil {
		t.Errorf("server-side replay vs analysis: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	base := &Run{Source: "b", Kind: results.KindAnalysis, LatencySource: LatencyServerLog, ErrorsBySQLState: map[string]int64{"23505": 5, "42P01": 1},
		Statements: results.StatementCounts{Total: 100}}
	cand := &Run{Source: "c", Kind: results.KindReplay, LatencySource: LatencyServerLog, ErrorsBySQLState: map[string]int64{"23505": 5, "42P01": 3, "57014": 40},
		Statements: results.StatementCounts{Total: 100},
		Replay:     &results.Replay{Errors: []results.ErrorSample{{SQLState: "57014", Fingerprint: "slow", Count: 40}}}}
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

func TestTestBuckets(t *testing.T) {
	same := []Bucket{{100, 10}, {200, 30}, {300, 10}}
	tests := []struct {
		name       string
		base, cand []Bucket
		sig        bool
		slower     float64 // ProbSlower, ±0.01
	}{
		{"identical", same, same, false, 0.5},
		{"all slower", []Bucket{{100, 200}}, []Bucket{{200, 200}}, true, 1},
		{"all faster", []Bucket{{200, 200}}, []Bucket{{100, 200}}, true, 0},
		{"one call apart", []Bucket{{100, 20}, {101, 1}}, []Bucket{{100, 20}, {102, 1}}, false, 0.5},
		{"all tied", []Bucket{{5, 100}}, []Bucket{{5, 300}}, false, 0.5},
		{"empty candidate", same, nil, false, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testBuckets(tt.base, tt.cand)
			sig := 2*min(r.PMannWhitney, r.PKS) < 0.01
			if sig != tt.sig || math.Abs(r.ProbSlower-tt.slower) > 0.01 {
				t.Errorf("%+v: significant %v want %v, prob slower want %v", r, sig, tt.sig, tt.slower)
			}
			if r.PMannWhitney < 0 || r.PMannWhitney > 1 || r.PKS < 0 || r.PKS > 1 {
				t.Errorf("p-values out of [0,1]: %+v", r)
			}
		})
	}
}

func TestMannWhitneyKnownValue(t *testing.T) {
	// Two samples without ties: base 10..50, cand 41..81; U for the
	// candidate is counted by brute force.
	var base, cand []Bucket
	for v := int64(1); v <= 5; v++ {
		base = append(base, Bucket{v * 10, 1})
	}
	for v := int64(4); v <= 8; v++ {
		cand = append(cand, Bucket{v*10 + 1, 1})
	}
	var u float64
	for _, c := range cand {
		for _, b := range base {
			if c.ValueUS > b.ValueUS {
				u++
			}
		}
	}
	r := testBuckets(base, cand)
	if math.Abs(r.ProbSlower-u/25) > 1e-9 {
		t.Errorf("prob slower %v, want %v", r.ProbSlower, u/25)
	}
	// By hand: U = 24, mean 12.5, sd sqrt(5*5*11/12) = 4.787, with the
	// continuity correction z = 11/4.787 = 2.298, two-sided p = 0.0216.
	if math.Abs(r.PMannWhitney-0.0216) > 0.0005 {
		t.Errorf("p = %v, want 0.0216", r.PMannWhitney)
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

// TestMinEffectMS: a significant slowdown of a few microseconds is not a
// regression when MinEffectMS asks for more.
func TestMinEffectMS(t *testing.T) {
	b := makeRun(t, "analysis", true, 1, q{fp: "a", n: 2000, meanUS: 30})
	c := makeRun(t, "analysis", true, 2, q{fp: "a", n: 2000, meanUS: 70})
	for _, tt := range []struct {
		minMS float64
		want  Status
	}{{0, StatusRegressed}, {0.02, StatusRegressed}, {0.1, StatusSmallChange}} {
		rules, err := ParseRules([]string{"p95>+20%"})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Compare(b, c, Options{MinEffectMS: tt.minMS, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		if broken := len(rep.Verdict.Broken) > 0; broken != (tt.want == StatusRegressed) {
			t.Errorf("MinEffectMS %g: rule broken %v, want %v", tt.minMS, broken, tt.want == StatusRegressed)
		}
		if d := rep.Query("a"); d.Status != tt.want {
			t.Errorf("MinEffectMS %g: status %s, want %s (%s)", tt.minMS, d.Status, tt.want, d.Note)
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
		want  []string // substrings of the one warning; nil for none
	}{
		{"speed 0, local", map[string]any{"speed": 0, "client_cpu_seconds": 3, "target_local": true},
			[]string{"run.json replayed at speed 0 on the target's machine", "3.0 CPU-seconds (0.30 cores on average)",
				"its 500.0 statements/s is a lower bound", "(client round trips)"}},
		{"speed 0, local, server-side latency", map[string]any{"speed": 0, "client_cpu_seconds": 3, "target_local": true, "latency_source": "server_log"},
			[]string{"lower bound", "may include waiting for CPU"}},
		{"speed 0, local, under a CPU-second", map[string]any{"speed": 0, "client_cpu_seconds": 0.5, "target_local": true},
			[]string{"0.50 CPU-seconds (0.05 cores on average)"}},
		{"speed 0, local, CPU unknown", map[string]any{"speed": 0, "target_local": true},
			[]string{"the replayer's CPU was taken from the server"}},
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
				var got []string
				for _, w := range rep.Warnings {
					if strings.Contains(w, "speed 0") {
						got = append(got, w)
					}
				}
				if tt.want == nil {
					if len(got) > 0 {
						t.Errorf("report %d: unexpected warning %q", i, got)
					}
					continue
				}
				if len(got) != 1 {
					t.Fatalf("report %d: warnings %q, want one about speed 0", i, rep.Warnings)
				}
				for _, s := range tt.want {
					if !strings.Contains(got[0], s) {
						t.Errorf("report %d: warning %q lacks %q", i, got[0], s)
					}
				}
			}
		})
	}
}
