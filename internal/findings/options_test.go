package findings

import (
	"context"
	"encoding/json"
	"testing"
)

// TestThresholds: zero Options mean the defaults, a set one wins, and the
// report lists every threshold under "options" as before they were fixed.
func TestThresholds(t *testing.T) {
	if got := (Options{}).thresholds(); got != defaults {
		t.Errorf("zero Options: %+v, want the defaults %+v", got, defaults)
	}
	th := Options{IndexMinRows: 5, IndexMaxSelectivity: 1, HotCallsPerCore: 50, KeyMinRows: 1000}.thresholds()
	if th.IndexMinRows != 5 || th.IndexMaxSelectivity != 1 || th.HotCallsPerCore != 50 || th.KeyMinRows != 1000 {
		t.Errorf("Options not applied: %+v", th)
	}
	if th.BatchMinCalls != defaults.BatchMinCalls || th.ErrorCriticalPct != defaults.ErrorCriticalPct {
		t.Errorf("fixed thresholds changed: %+v", th)
	}

	b, err := json.Marshal(evaluate(t, context.Background(), Input{}, Options{HotCallsPerCore: 50}))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Options map[string]float64 `json:"options"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Options) != 16 || rep.Options["hot_calls_per_core"] != 50 || rep.Options["batch_min_calls"] != 500 {
		t.Errorf("report options: %v", rep.Options)
	}
}

// TestSeverityFollowsShare: a finding on under 1% of the workload's time
// is info, whatever its rule would make it, and says why; one above keeps
// its severity.
func TestSeverityFollowsShare(t *testing.T) {
	for _, tc := range []struct {
		share float64
		sev   Severity
		want  Severity
	}{
		{0.2, Warning, Info},
		{0.99, Critical, Info},
		{1, Warning, Warning},
		{60, Critical, Critical},
	} {
		e := &eval{report: &Report{}}
		f := Finding{ID: IDBatchInserts, Severity: tc.sev}
		f.Evidence.Figures = append(f.Evidence.Figures, fig("share_of_total_time_pct", tc.share, "%"))
		e.add(f)
		got := e.report.Findings[0]
		if got.Severity != tc.want {
			t.Errorf("share %v%%, %s: %s, want %s", tc.share, tc.sev, got.Severity, tc.want)
		}
		if (tc.want != tc.sev) != (len(got.Evidence.Notes) == 1) {
			t.Errorf("share %v%%: notes %q", tc.share, got.Evidence.Notes)
		}
	}
}
