package compare

import (
	"errors"
	"strings"
	"testing"

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
	base := func() *Run {
		r := results.New(results.KindAnalysis, LatencyServerLog)
		r.Source = "base"
		r.Statements = results.StatementCounts{Total: 10000, Executed: 10000}
		r.FirstTime, r.LastTime = results.Time(t0), results.Time(t0+100*sec-1)
		r.Timeline = tl.JSON()
		return r
	}
	replay := func(total, lost int64, from, to int64) *Run {
		r := results.New(results.KindReplay, LatencyServerLog)
		r.Source = "cand"
		r.Statements = results.StatementCounts{Total: total, Executed: total - lost, Skipped: map[string]int64{"connection lost": lost}}
		r.Lost = lost
		r.FirstTime, r.LastTime = results.Time(t0+from*sec), results.Time(t0+to*sec-1)
		return r
	}
	tests := []struct {
		name string
		cand *Run
		want string // "" for judgeable
	}{
		{"whole log", replay(10000, 0, 0, 100), ""},
		{"a little lost", replay(10000, 500, 0, 100), ""},
		{"most lost", replay(10000, 7500, 0, 100), "measured 2500 statements, 25% of the 10000 of base"},
		{"a window of the log", replay(2000, 0, 40, 60), ""},
		{"a window with much lost", replay(2000, 1000, 40, 60), "measured 1000 statements, 50% of the 2000"},
		{"partial", func() *Run { r := replay(10000, 0, 0, 100); r.Partial = true; return r }(), "cand stopped early"},
		{"incomplete", func() *Run { r := replay(10000, 0, 0, 100); r.Incomplete = []string{"lost"}; return r }(), "cand is incomplete: lost"},
		{"degraded", func() *Run { r := replay(10000, 0, 0, 100); r.Degraded = []string{"reconnected"}; return r }(), "cand is degraded: reconnected"},
		{"empty", replay(0, 0, 0, 100), "cand holds no statement"},
		{"a later log, fewer", func() *Run {
			r := replay(5000, 0, 1000, 1100)
			r.Replay = nil
			r.Kind = results.KindAnalysis
			return r
		}(), "of the 10000 of base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Compare(base(), tt.cand, Options{})
			if tt.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
			rep, err = Compare(base(), tt.cand, Options{AllowIncomplete: true, Rules: mustRules(t, "p95>+20%")})
			if err != nil || rep.Verdict.Status != VerdictIncomplete || strings.Contains(rep.Verdict.Line, "PASS") {
				t.Errorf("allowed: %v, verdict %+v", err, rep.Verdict)
			}
		})
	}
}

func mustRules(t *testing.T, s ...string) []Rule {
	t.Helper()
	r, err := ParseRules(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
