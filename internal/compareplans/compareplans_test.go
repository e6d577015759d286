package compareplans

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/plan"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestStatements: the latency regressions first, then the work
// regressions, then the divergent queries, then the top by time added,
// each once; samples from the baseline before the candidate; the
// baseline's logged plan.
func TestStatements(t *testing.T) {
	f := &compare.Figures{}
	rep := &compare.Report{
		Queries: []compare.QueryDiff{
			{Fingerprint: "reg", Query: "Q reg", Status: compare.StatusRegressed, AddedMS: 50, Baseline: f, Candidate: f},
			{Fingerprint: "big", Query: "Q big", Status: compare.StatusSmallChange, AddedMS: 900, Baseline: f, Candidate: f},
			{Fingerprint: "mid", Query: "Q mid", Status: compare.StatusUnchanged, AddedMS: 10, Baseline: f, Candidate: f},
			{Fingerprint: "faster", Query: "Q faster", Status: compare.StatusImproved, AddedMS: -5, Baseline: f, Candidate: f},
			{Fingerprint: "new", Query: "Q new", Status: compare.StatusOnlyCandidate, AddedMS: 70, Candidate: f},
			{Fingerprint: "wal", Query: "UPDATE t SET v = v + $1 WHERE id = $2", Status: compare.StatusMoreWork, AddedMS: 1, Baseline: f, Candidate: f},
		},
		RegressionsByAddedTime: []string{"reg"},
		MoreWork:               []string{"wal"},
		Divergence:             []compare.Divergence{{Fingerprint: "div", Query: "Q div"}, {Fingerprint: "reg", Query: "Q reg"}},
	}
	p := &plan.Plan{Root: &plan.Node{Type: "Seq Scan", Relation: "t"}}
	base := &results.Result{
		Samples:     []results.QuerySamples{{Fingerprint: "reg", Samples: []results.Sample{{Role: results.SampleSlowest, Query: "base"}}}},
		LoggedPlans: []results.LoggedPlan{{Fingerprint: "mid", Plan: p}},
	}
	cand := &results.Result{Samples: []results.QuerySamples{
		{Fingerprint: "reg", Samples: []results.Sample{{Role: results.SampleSlowest, Query: "cand"}}},
		{Fingerprint: "big", Samples: []results.Sample{{Role: results.SampleSlowest, Query: "cand"}}},
	}}
	in := Input{Report: rep, Baseline: []*results.Result{base}, Candidate: []*results.Result{cand}}
	got := Statements(in, 1)
	var fps []string
	for _, st := range got {
		fps = append(fps, st.Fingerprint)
	}
	if want := "reg wal div big"; join(fps) != want {
		t.Errorf("top 1: %q, want %q", join(fps), want)
	}
	if got[0].Query != "Q reg" || got[2].Query != "Q div" || got[0].Samples[0].Query != "base" || got[3].Samples[0].Query != "cand" || got[2].Samples != nil {
		t.Errorf("statements: %+v", got)
	}
	all := Statements(in, 0)
	if len(all) != 5 || all[4].Fingerprint != "mid" || all[4].Logged != p {
		t.Errorf("default top: %+v", all)
	}
	if n := len(Statements(in, -1)); n != 3 {
		t.Errorf("no top: %d statements", n)
	}
	if s := Flagged(rep); len(s) != 2 || s["reg"] != compare.StatusRegressed || s["wal"] != compare.StatusMoreWork {
		t.Errorf("flagged: %v", s)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
