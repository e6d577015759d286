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
