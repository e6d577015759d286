package compare

import (
	"errors"
	"math"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

func TestUnjudgeable(t *testing.T) {
	const sec = int64(1_000_000)
	t0 := int64(1_700_000_000) * sec
	// The baseline: 100 statements a second for 100 seconds.
	tl := timeline.New()
	for i := range int64(10000) {
		tl.Add(t0+i*sec/100, 1000, false)
	}
	one := []querystats.Row{{Fingerprint: "a", Query: "SELECT a", Calls: 100, Latency: querystats.Latency{TimedCalls: 100, TotalMS: 100, MeanMS: 1, P50MS: 1, P95MS: 1, P99MS: 1}}}
	base := func() *Run {
		r := results.New(results.KindAnalysis, LatencyServerLog)
		r.Source = "base"
		r.Queries = one
		r.Statements = results.StatementCounts{Total: 10000, Executed: 10000}
		r.FirstTime, r.LastTime = results.Time(t0), results.Time(t0+100*sec-1)
		r.Timeline = tl.JSON()
		return r
	}
	replay := func(total, lost int64, from, to int64) *Run {
		r := results.New(results.KindReplay, LatencyServerLog)
		r.Source = "cand"
		r.Queries = one
		r.Statements = results.StatementCounts{Total: total, Executed: total - lost, Skipped: map[results.SkipReason]int64{results.SkipConnectionLost: lost}}
		r.Lost = lost
		r.FirstTime, r.LastTime = results.Time(t0+from*sec), results.Time(t0+to*sec-1)
		return r
	}
	tests := []struct {
		name string
		cand *Run
		want *Unjudgeable // nil for judgeable
	}{
		{"whole log", replay(10000, 0, 0, 100), nil},
		{"a little lost", replay(10000, 500, 0, 100), nil},
		{"most lost", replay(10000, 7500, 0, 100), &Unjudgeable{Kind: UnjudgeableSmaller, Run: "cand", Other: "base", Measured: 2500, Expected: 10000}},
		{"a window of the log", replay(2000, 0, 40, 60), nil},
		{"a window with much lost", replay(2000, 1000, 40, 60), &Unjudgeable{Kind: UnjudgeableSmaller, Run: "cand", Other: "base", Measured: 1000, Expected: 2000}},
		{"partial", func() *Run { r := replay(10000, 0, 0, 100); r.Partial = true; return r }(), &Unjudgeable{Kind: UnjudgeablePartial, Run: "cand"}},
		{"incomplete", func() *Run { r := replay(10000, 0, 0, 100); r.Incomplete = []string{"lost"}; return r }(), &Unjudgeable{Kind: UnjudgeableIncomplete, Run: "cand", Detail: "lost"}},
		{"degraded", func() *Run { r := replay(10000, 0, 0, 100); r.Degraded = []string{"reconnected"}; return r }(), &Unjudgeable{Kind: UnjudgeableDegraded, Run: "cand", Detail: "reconnected"}},
		{"empty", replay(0, 0, 0, 100), &Unjudgeable{Kind: UnjudgeableEmpty, Run: "cand"}},
		{"no timed call", func() *Run { r := replay(10000, 0, 0, 100); r.Queries = nil; return r }(), &Unjudgeable{Kind: UnjudgeableEmpty, Run: "cand", Detail: "no timed statement"}},
		{"a later log, fewer", func() *Run {
			r := replay(5000, 0, 1000, 1100)
			r.Replay = nil
			r.Kind = results.KindAnalysis
			return r
		}(), &Unjudgeable{Kind: UnjudgeableSmaller, Run: "cand", Other: "base", Measured: 5000, Expected: 10000}},
		{"another load level", func() *Run {
			r := replay(10000, 0, 0, 100)
			r.Part = &results.Part{Load: &results.Load{By: results.LoadBySpeed, K: 2}}
			return r
		}(), &Unjudgeable{Kind: UnjudgeableMixedLoad, Run: "base", Other: "cand", Detail: "1x and 2x by speed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Compare(base(), tt.cand, Options{})
			if tt.want == nil {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			var ie *IncompleteError
			if !errors.Is(err, ErrIncomplete) || !errors.As(err, &ie) || len(ie.Reasons) != 1 || ie.Reasons[0] != *tt.want {
				t.Errorf("err %v, want %+v", err, *tt.want)
			}
			rep, err = Compare(base(), tt.cand, Options{AllowIncomplete: true, Rules: mustRules(t, "p95>+20%")})
			if err != nil || rep.Verdict.Status != VerdictIncomplete || len(rep.Incomplete) != 1 {
				t.Errorf("allowed: %v, verdict %+v", err, rep.Verdict)
			}
		})
	}
}

func mustRules(t *testing.T, s ...string) []Rule {
	t.Helper()
	r, err := parseRules(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestInvalidFigures: figures that cannot be true are refused with the
// field named, never judged.
func TestInvalidFigures(t *testing.T) {
	good := runOf(t, "good.json", 1, 500, expAround(1000))
	tests := []struct {
		name  string
		spoil func(r *Run)
		field string
	}{
		{"negative mean", func(r *Run) { r.Queries[0].MeanMS = -1 }, "queries[0].mean_ms (fingerprint q)"},
		{"NaN p95", func(r *Run) { r.Queries[0].P95MS = math.NaN() }, "queries[0].p95_ms (fingerprint q)"},
		{"negative calls", func(r *Run) { r.Queries[0].Calls = -5 }, "queries[0].calls (fingerprint q)"},
		{"histogram short of the calls", func(r *Run) { r.Queries[0].TimedCalls, r.Queries[0].Calls = 800, 800 }, "queries[0].hist (fingerprint q)"},
		{"histogram that does not decode", func(r *Run) { r.Queries[0].Hist = "HISTFAAAAbogus" }, "queries[0].hist (fingerprint q)"},
		{"more errors than calls", func(r *Run) { r.Queries[0].Errors = 501 }, "queries[0].errors (fingerprint q)"},
		{"negative statements", func(r *Run) { r.Statements.Failed = -1 }, "statements.failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := runOf(t, "bad.json", 2, 500, expAround(1000))
			tt.spoil(bad)
			for _, pair := range [][2]*Run{{good, bad}, {bad, good}} {
				_, err := Compare(pair[0], pair[1], Options{})
				var ie *IncompleteError
				if !errors.As(err, &ie) {
					t.Fatalf("judged: %v", err)
				}
				found := false
				for _, u := range ie.Reasons {
					found = found || (u.Kind == UnjudgeableInvalid && u.Run == "bad.json" && u.Field == tt.field)
				}
				if !found {
					t.Errorf("reasons %+v do not name %s", ie.Reasons, tt.field)
				}
			}
		})
	}
	bad := runOf(t, "bad.json", 2, 500, expAround(1000))
	bad.Queries[0].P99MS = -3
	var ie *IncompleteError
	if err := Validate(bad); !errors.As(err, &ie) || ie.Reasons[0].Field != "queries[0].p99_ms (fingerprint q)" {
		t.Errorf("Validate of a negative p99: %v", err)
	}
	if err := Validate(good); err != nil {
		t.Errorf("Validate of a good result: %v", err)
	}
	if _, err := Runs(nil, []*Run{good}, Options{}); !errors.Is(err, ErrIncomplete) {
		t.Errorf("an empty side judged: %v", err)
	}
}

// TestStartupSettingsWarning: a run whose sessions may have run with
// other connection settings than the original's is a warning of the
// comparison, with its note; one with nothing suspect is not.
func TestStartupSettingsWarning(t *testing.T) {
	r := results.New(results.KindReplay, LatencyServerLog)
	r.Source = "regress"
	r.StartupSettings = &results.StartupSettings{Note: "note"}
	if ws := runWarnings([]*Run{r}); len(ws) != 0 {
		t.Errorf("nothing suspect: %+v", ws)
	}
	r.StartupSettings.Suspect = true
	ws := runWarnings([]*Run{r})
	if len(ws) != 1 || ws[0] != (Warning{Kind: WarnStartupSettings, Run: "regress", Text: "note"}) {
		t.Errorf("suspect: %+v", ws)
	}
}
