package compare

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// withConnections gives each run n connections whose setup took about
// baseUS µs (uniform within +25%), plus addUS.
func withConnections(t *testing.T, runs []*Run, seed uint64, n int, baseUS, addUS int64) []*Run {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]*Run, len(runs))
	for i, run := range runs {
		c := *run
		c.Replay = &results.Replay{}
		if run.Replay != nil {
			rp := *run.Replay
			c.Replay = &rp
		}
		if n == 0 {
			out[i] = &c
			continue
		}
		rec := results.NewRecorder()
		for range n {
			rec.Record(baseUS + r.Int64N(baseUS/4) + addUS)
		}
		conns, err := results.ConnectionsOf(rec, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Connections = conns
		out[i] = &c
	}
	return out
}

// TestConnectionSetupRow: three runs a side whose connections take 15 ms
// more on the candidate and whose queries do not change: the
// connection setup is a row of its own (typed, not a query), slower
// beyond noise over the runs' interval, labelled a regression by a
// query's rules; the verdict and the queries' figures are those of the
// same runs without connections timed. A run with fewer than
// MinConnections leaves no row.
func TestConnectionSetupRow(t *testing.T) {
	base := sideRuns(t, "A", 1, 3, 0.03, runsMeans, nil, nil)
	cand := sideRuns(t, "B", 2, 3, 0.03, runsMeans, nil, nil)
	opts := Options{Rules: mustRules(t, "mean>+20%")}
	plain, err := Runs(withConnections(t, base, 1, 0, 0, 0), withConnections(t, cand, 1, 0, 0, 0), opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Runs(withConnections(t, base, 1, 40, 2000, 0), withConnections(t, cand, 2, 40, 2000, 15000), opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := rep.ConnectionSetup
	if cs == nil {
		t.Fatal("no connection setup row")
	}
	if cs.Kind != RowConnectionSetup || cs.Fingerprint != "" || cs.Status != StatusRegressed || cs.Effects == nil {
		t.Fatalf("connection setup row %+v", cs)
	}
	if m := cs.Effects.Mean; m.Interval != IntervalRuns || m.Low < 5 || m.High > 10 || m.Ratio < 5 || cs.Baseline.Calls != 40 || len(cs.Candidate.Runs) != 3 {
		t.Errorf("connection setup mean %+v, baseline %+v", m, cs.Baseline)
	}
	if cs.Levels == nil || cs.Levels.Judged != LevelApplication || cs.Levels.Application == nil {
		t.Errorf("connection setup levels %+v", cs.Levels)
	}
	if !reflect.DeepEqual(rep.Verdict, plain.Verdict) || len(rep.Queries) != len(plain.Queries) {
		t.Errorf("verdict with connections %+v, without %+v", rep.Verdict, plain.Verdict)
	}
	for i := range rep.Queries {
		if q, p := rep.Queries[i], plain.Queries[i]; q.Fingerprint != p.Fingerprint || q.Status != p.Status || !reflect.DeepEqual(q.Effects, p.Effects) {
			t.Errorf("query %s: %s with connections, %s without", q.Fingerprint, q.Status, p.Status)
		}
	}
	few := withConnections(t, cand, 2, 40, 2000, 15000)
	few[1] = withConnections(t, cand[1:2], 3, MinConnections-1, 2000, 15000)[0]
	if rep, err := Runs(withConnections(t, base, 1, 40, 2000, 0), few, opts); err != nil || rep.ConnectionSetup != nil {
		t.Errorf("a run of %d connections: row %+v, %v", MinConnections-1, rep.ConnectionSetup, err)
	}
	if plain.ConnectionSetup != nil {
		t.Errorf("runs without connections timed have a row %+v", plain.ConnectionSetup)
	}
}
