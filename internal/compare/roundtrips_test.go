package compare

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results/resultstest"
)

// The tests' replay results: see package resultstest.
var (
	row        = resultstest.Row
	serverRows = resultstest.ServerRows()
	clientRows = resultstest.ClientRows()
)

func replayRun(t *testing.T, name string, extra map[string]any, queries []map[string]any, client []map[string]any) *Run {
	t.Helper()
	return resultstest.Replay(t, name, extra, queries, client)
}

// TestRoundTrips: a replay that kept its client round trips beside
// server-side queries shows them per fingerprint timed on both sides,
// costliest server-side first; anything else shows none.
func TestRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		run  *Run
		want []RoundTrip // nil: no RoundTrips
	}{
		{"target-log replay", replayRun(t, "r.json", nil, serverRows, clientRows), []RoundTrip{
			{Fingerprint: "busy", Query: "SELECT busy", Calls: 500, ClientCalls: 500, ServerTotalMS: 100, ServerMeanMS: 0.2, ServerP95MS: 0.4, ClientMeanMS: 0.7, ClientP95MS: 1.5, OverheadMS: 0.5},
			{Fingerprint: "slow", Query: "SELECT slow", Calls: 20, ClientCalls: 20, ServerTotalMS: 200, ServerMeanMS: 10, ServerP95MS: 14, ClientMeanMS: 10.5, ClientP95MS: 15, OverheadMS: 0.5},
			{Fingerprint: "rare", Query: "SELECT rare", Calls: 3, ClientCalls: 3, ServerTotalMS: 3, ServerMeanMS: 1, ServerP95MS: 1, ClientMeanMS: 0.99, ClientP95MS: 1, OverheadMS: -0.01},
		}},
		{"plain replay (client round trips are its queries)", replayRun(t, "r.json", nil, clientRows, nil), nil},
		{"client latency with client_queries", replayRun(t, "r.json", map[string]any{"latency_source": "client"}, serverRows, clientRows), nil},
		{"empty client_queries", replayRun(t, "r.json", map[string]any{"client_queries": []any{}}, serverRows, clientRows), nil},
		{"no fingerprint on both sides", replayRun(t, "r.json", nil, serverRows[3:4], clientRows[3:4]), nil},
		{"analysis", makeRun(t, "analysis", false, 1, q{fp: "a", n: 100, meanUS: 1000}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Summarize(tt.run)
			if tt.want == nil {
				if rep.ClientRoundTrips != nil {
					t.Errorf("round trips %+v, want none", rep.ClientRoundTrips)
				}
				return
			}
			if len(rep.ClientRoundTrips) != 1 {
				t.Fatalf("%d round-trip tables, want 1", len(rep.ClientRoundTrips))
			}
			rt := rep.ClientRoundTrips[0]
			// slow costs 200 ms server-side, busy 100: slow first.
			tt.want[0], tt.want[1] = tt.want[1], tt.want[0]
			for i := range rt.Queries {
				rt.Queries[i].OverheadMS = round6(rt.Queries[i].OverheadMS)
			}
			if !reflect.DeepEqual(rt.Queries, tt.want) {
				t.Errorf("rows\n%+v\nwant\n%+v", rt.Queries, tt.want)
			}
			// (100+200+3) ms over 523 calls, (350+210+2.97) over 523.
			if rt.Run != "baseline" || rt.File != "r.json" || rt.Fingerprints != 3 ||
				round6(rt.ServerMeanMS) != round6(303.0/523) || round6(rt.ClientMeanMS) != round6(562.97/523) ||
				round6(rt.OverheadMS) != round6(259.97/523) {
				t.Errorf("table %+v", rt)
			}
		})
	}
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// TestRoundTripsNeverCompared: client round trips, however slow, change
// nothing in the comparison; each run that kept them gets its own table,
// capped at RoundTripsTop.
func TestRoundTripsNeverCompared(t *testing.T) {
	var many, slowClient []map[string]any
	for i := range RoundTripsTop + 5 {
		many = append(many, row(fmt.Sprintf("q%02d", i), 100, float64(i+1), float64(2*i+2)))
		slowClient = append(slowClient, row(fmt.Sprintf("q%02d", i), 100, float64(100*(i+1)), float64(200*i+200)))
	}
	base := replayRun(t, "b.json", nil, many, nil)
	base.LatencySource = LatencyServerLog
	// Another run's wall time: not the same result twice.
	other := map[string]any{"wall_seconds": 11}
	plain := replayRun(t, "c.json", other, many, nil)
	plain.LatencySource = LatencyServerLog
	withClient := replayRun(t, "c.json", other, many, slowClient)
	rules, err := parseRules([]string{"mean>+10%"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Compare(base, plain, Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Compare(base, withClient, Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Queries, want.Queries) || !reflect.DeepEqual(got.Verdict, want.Verdict) || got.Candidate.MeanMS != want.Candidate.MeanMS {
		t.Errorf("client round trips changed the comparison: verdict %+v, want %+v", got.Verdict, want.Verdict)
	}
	if got.Verdict.Status != "pass" || want.ClientRoundTrips != nil {
		t.Errorf("verdict %+v, round trips without client_queries %+v", got.Verdict, want.ClientRoundTrips)
	}
	if len(got.ClientRoundTrips) != 1 {
		t.Fatalf("%d round-trip tables, want 1 (the candidate's)", len(got.ClientRoundTrips))
	}
	rt := got.ClientRoundTrips[0]
	if rt.Run != "candidate" || rt.Fingerprints != RoundTripsTop+5 || len(rt.Queries) != RoundTripsTop || rt.Queries[0].Fingerprint != "q24" {
		t.Errorf("candidate's table: run %s, %d fingerprints, %d rows, first %s", rt.Run, rt.Fingerprints, len(rt.Queries), rt.Queries[0].Fingerprint)
	}

	both, err := Compare(withClient, replayRun(t, "d.json", map[string]any{"wall_seconds": 12}, many, slowClient), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, rt := range both.ClientRoundTrips {
		runs = append(runs, rt.Run)
	}
	if !reflect.DeepEqual(runs, []string{"baseline", "candidate"}) {
		t.Errorf("two replays with round trips: tables for %v", runs)
	}
}
