package replayrun

import (
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

func TestRoundConfig(t *testing.T) {
	functionalCase(t)
	base := Config{TargetLogs: []string{"base.log"}, Observe: &observe.Options{}}
	base.Replay.Target, base.Replay.Speed = "host=base", 2
	base.Replay.Samples = results.NewSampler(0)
	base.Selection.Start, base.Selection.End = 100, 900

	r := base.Round(Round{Target: "host=cand", DatabaseMap: map[string]string{"app": "app_r1"}, Part: &results.Part{Round: 1}})
	switch {
	case r.Replay.Target != "host=cand" || r.Replay.DatabaseMap["app"] != "app_r1" || r.Part.Round != 1:
		t.Errorf("target, map or part not the round's: %+v", r.Replay)
	case r.Replay.Speed != 2 || !slices.Equal(r.TargetLogs, base.TargetLogs):
		t.Errorf("speed %g and logs %v, want the configuration's", r.Replay.Speed, r.TargetLogs)
	case r.Observe == base.Observe || r.Replay.Samples == base.Replay.Samples:
		t.Error("the round shares the observer options or the sampler with the configuration")
	case r.Selection.Start != 100 || r.Selection.End != 900:
		t.Errorf("window [%d, %d), want the configuration's", r.Selection.Start, r.Selection.End)
	}

	for _, tc := range []struct {
		window     source.Selection
		start, end int64
	}{
		{source.Selection{Start: 50, End: 500}, 100, 500},
		{source.Selection{Start: 500, End: 1000}, 500, 900},
		{source.Selection{Start: 500}, 500, 900},
	} {
		r := base.Round(Round{Speed: 3, Window: tc.window})
		if r.Selection.Start != tc.start || r.Selection.End != tc.end || r.Replay.Speed != 3 {
			t.Errorf("window %+v: [%d, %d) at %g, want [%d, %d) at 3", tc.window, r.Selection.Start, r.Selection.End, r.Replay.Speed, tc.start, tc.end)
		}
	}
	if base.Replay.Target != "host=base" || base.Selection.End != 900 {
		t.Error("Round changed the configuration")
	}
}

func TestRoundStop(t *testing.T) {
	functionalCase(t)
	o := &Outcome{Reasons: []Reason{ReasonErrorRate, ReasonDiverged, ReasonIncomplete, ReasonTargetGone, ReasonInputCut}}
	if got, want := o.RoundStop(false).Reasons, []Reason{ReasonIncomplete, ReasonTargetGone, ReasonInputCut}; !slices.Equal(got, want) {
		t.Errorf("at the workload's load: %v, want %v", got, want)
	}
	if got, want := o.RoundStop(true).Reasons, []Reason{ReasonInputCut}; !slices.Equal(got, want) {
		t.Errorf("overloaded: %v, want %v", got, want)
	}
	if len(o.Reasons) != 5 {
		t.Errorf("RoundStop changed the outcome's reasons: %v", o.Reasons)
	}
}

// TestErrorRateGate: the error-rate gate counts the failures only on the
// target that are not explained: a replay of 10 statements, one of which
// names an OID the original's server assigned (and one after it in its
// block), or ran in a session recorded from the middle without the state
// it needed, passes at --max-error-rate 1; one unexplained failure more
// fails it, as one after a skipped fast-path call does (its cause is not
// proven).
func TestErrorRateGate(t *testing.T) {
	functionalCase(t)
	for _, tc := range []struct {
		name string
		out  results.Outcomes
		want bool
	}{
		{"baked ids", results.Outcomes{Ran: 10, FailedOnlyOnTarget: 2, OnlyOnTargetBakedIDs: 2}, false},
		{"session state", results.Outcomes{Ran: 10, FailedOnlyOnTarget: 1, OnlyOnTargetSessionState: 1}, false},
		{"baked ids and one unexplained", results.Outcomes{Ran: 10, FailedOnlyOnTarget: 3, OnlyOnTargetBakedIDs: 2}, true},
		{"after a fast-path call", results.Outcomes{Ran: 10, FailedOnlyOnTarget: 1, OnlyOnTargetAfterFastPath: 1}, true},
		{"both failed", results.Outcomes{Ran: 10, BothFailed: 1, FailedOnlyOnTarget: 1, OnlyOnTargetBakedIDs: 1}, false},
	} {
		tc.out.SetRates()
		o := &Outcome{Result: &results.Result{Replay: &results.Replay{Outcomes: tc.out}}}
		o.reasons(1)
		if got := o.Has(ReasonErrorRate); got != tc.want {
			t.Errorf("%s: error rate %v (target %.2f%%, gate %.2f%%), want %v", tc.name, got, tc.out.TargetErrorRate, tc.out.GateErrorRate(), tc.want)
		}
	}
}
