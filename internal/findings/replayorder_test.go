package findings

import (
	"context"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"strings"
	"testing"
)

// TestReplayOrder: a replay whose statements failed only on the target
// with errors of ordering (foreign keys, aborted transactions after them)
// gets a finding that attributes them to the replay and names
// synchronized replay, and no finding that tells the user to fix them;
// errors of other codes are still the target's.
func TestReplayOrder(t *testing.T) {
	replayOf := func(codes map[string]int64, onlyOnTarget int64, sync results.SyncMode) *Workload {
		w := &Workload{Name: "replay.json", Kind: "replay", Statements: 1000, ErrorsBySQLState: codes, LockWaitLines: -1,
			Replay: &ReplayFacts{FailedOnlyOnTarget: onlyOnTarget, Sync: sync}}
		var failed int64
		for code, n := range codes {
			failed += n
			w.Queries = append(w.Queries, Query{Fingerprint: "fp" + code, Query: "INSERT INTO shipments VALUES ($1)", Calls: 100,
				Errors: n, ErrorsBySQLState: map[string]int64{code: n}})
		}
		w.Failed = failed
		return w
	}
	ctx := context.Background()
	rep := evaluate(t, ctx, Input{Workload: replayOf(map[string]int64{"23503": 30, "25P02": 5}, 35, results.SyncOff)}, Options{})
	order := only(rep, IDReplayOrder)
	if len(order) != 1 || !strings.Contains(order[0].Recommendation, "sync mode answers") ||
		!strings.Contains(order[0].Summary, "35 statements that succeeded in the original") ||
		!strings.Contains(order[0].Summary, "ran without synchronization") {
		t.Fatalf("replay order: %+v", order)
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Recommendation, "Fix the failing statements") {
			t.Errorf("%s tells the user to fix statements that succeeded in the original: %s", f.ID, f.Summary)
		}
	}

	// A replay that was synchronized is never told to synchronize: the
	// advice follows what it really ran with and what went wrong.
	for _, tc := range []struct {
		facts ReplayFacts
		want  string
	}{
		{ReplayFacts{FailedOnlyOnTarget: 35, Sync: results.SyncObject}, "sync mode commit"},
		{ReplayFacts{FailedOnlyOnTarget: 35, Sync: results.SyncCommit}, "already synchronized by commit"},
		{ReplayFacts{FailedOnlyOnTarget: 35, Sync: results.SyncObject, SyncTimeouts: 4, SyncTimeoutSeconds: 10}, "longer sync timeout"},
		{ReplayFacts{FailedOnlyOnTarget: 35, Sync: results.SyncObject, LostTransactions: 2, Reconnects: 5}, "without the faults"},
	} {
		w := replayOf(map[string]int64{"23503": 30, "25P02": 5}, 35, tc.facts.Sync)
		w.Replay = &tc.facts
		order := only(evaluate(t, ctx, Input{Workload: w}, Options{}), IDReplayOrder)
		if len(order) != 1 || strings.Contains(order[0].Recommendation, "sync mode object") || !strings.Contains(order[0].Recommendation, tc.want) ||
			!strings.Contains(order[0].Summary, "were synchronized ("+string(tc.facts.Sync)+" mode)") {
			t.Errorf("%+v: %+v", tc.facts, order)
		}
	}

	// Other errors stay the target's; ordering errors the original had
	// too are not the replay's.
	rep = evaluate(t, ctx, Input{Workload: replayOf(map[string]int64{"23503": 30, "42P01": 7}, 37, results.SyncObject)}, Options{})
	if len(only(rep, IDReplayOrder)) != 1 || len(only(rep, IDErrors)) != 1 {
		t.Errorf("mixed errors: %+v", rep.Findings)
	}
	base := replayOf(map[string]int64{"23503": 30}, 0, "")
	base.Kind, base.Replay = "analysis", nil
	rep = evaluate(t, ctx, Input{Workload: replayOf(map[string]int64{"23503": 30}, 30, results.SyncObject), Baseline: base}, Options{})
	if len(only(rep, IDReplayOrder)) != 0 {
		t.Errorf("ordering errors the original had too were attributed to the replay: %+v", only(rep, IDReplayOrder))
	}
	// An analysis has no replay to blame.
	rep = evaluate(t, ctx, Input{Workload: base}, Options{})
	if len(only(rep, IDReplayOrder)) != 0 || len(only(rep, IDErrors)) != 1 {
		t.Errorf("analysis: %+v", rep.Findings)
	}
}
