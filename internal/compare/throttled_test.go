package compare

import (
	"math/rand/v2"
	"testing"
)

// TestThrottledCandidateNeverPasses: five rounds a side of three
// queries (rounds 5% apart). When the caller found the candidate's runs
// throttled by the replay's own waits (UnjudgeableThrottled), an
// identical candidate is not a pass, a query 3x faster is not an
// improvement (a lower bound that fell says nothing: bench/forecast's
// hot lock read 0.06x where the application waited 3.24x longer), and a
// query 3x slower still breaks its rule; without the finding, the same
// rounds pass, improve and fail as always.
func TestThrottledCandidateNeverPasses(t *testing.T) {
	throttle := []Unjudgeable{{Kind: UnjudgeableThrottled, Run: "the candidate's rounds", Detail: "sync waits 39.6 s a round against the control's 12.0 s, medians"}}
	cases := []struct {
		name      string
		shift     map[string]float64
		throttled bool
		want      VerdictStatus
		a         Status
	}{
		{"identical", nil, false, VerdictPass, StatusUnchanged},
		{"identical, throttled", nil, true, VerdictIncomplete, StatusUnchanged},
		{"a faster", map[string]float64{"a": 1.0 / 3}, false, VerdictPass, StatusImproved},
		{"a faster, throttled", map[string]float64{"a": 1.0 / 3}, true, VerdictIncomplete, StatusNotJudgedThrottled},
		{"a slower", map[string]float64{"a": 3}, false, VerdictFail, StatusRegressed},
		{"a slower, throttled: the rule stands", map[string]float64{"a": 3}, true, VerdictFail, StatusRegressed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &rehearsal{sides: sides{t: t, r: rand.New(rand.NewPCG(7, 76))}, sigma: 0.05,
				means: map[string]float64{"a": 4000, "b": 2000, "c": 5000}, shift: c.shift}
			for range 5 {
				h.round(false)
				h.round(true)
			}
			o := Options{Rules: mustRules(t, "mean>+50%")}
			if c.throttled {
				o.Unjudgeable, o.AllowIncomplete = throttle, true
			}
			rep, err := Runs(h.base, h.cand, o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict.Status != c.want {
				t.Errorf("verdict %s, want %s", rep.Verdict.Status, c.want)
			}
			if q := rep.Query("a"); q == nil || q.Status != c.a {
				t.Fatalf("query a: %+v, want %s", q, c.a)
			}
			if c.a == StatusNotJudgedThrottled && !hasReason(rep.Query("a").Reasons, ReasonCandidateThrottled) {
				t.Errorf("query a's reasons %v lack %s", rep.Query("a").Reasons, ReasonCandidateThrottled)
			}
			if c.throttled && (len(rep.Incomplete) == 0 || rep.Incomplete[len(rep.Incomplete)-1].Kind != UnjudgeableThrottled) {
				t.Errorf("incomplete %+v, want the throttle named", rep.Incomplete)
			}
		})
	}
}

func hasReason(rs []Reason, r Reason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
