package judge

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// TestParsePairRule reads the rules on two sides users write
// (METRIC>THRESHOLD), and says why a bad one is refused.
func TestParsePairRule(t *testing.T) {
	tests := []struct {
		in      string
		want    PairRule
		wantErr string
	}{
		{"p95>+20%", PairRule{Text: "p95>+20%", Metric: compare.MetricP95, Unit: compare.UnitPercent, Value: 20}, ""},
		{" mean > 2x ", PairRule{Text: "mean>2x", Metric: compare.MetricMean, Unit: compare.UnitFactor, Value: 2}, ""},
		{"p99_ms>+50ms", PairRule{Text: "p99_ms>+50ms", Metric: compare.MetricP99, Unit: compare.UnitMS, Value: 50}, ""},
		{"errors>+1pp", PairRule{Text: "errors>+1pp", Metric: compare.MetricErrors, Unit: compare.UnitPP, Value: 1}, ""},
		{"total_ms>+10%", PairRule{Text: "total_ms>+10%", Metric: compare.MetricTotal, Unit: compare.UnitPercent, Value: 10}, ""},
		{"P50>+0.5%", PairRule{Text: "P50>+0.5%", Metric: compare.MetricP50, Unit: compare.UnitPercent, Value: 0.5}, ""},
		{"p95<+20%", PairRule{}, "no '>'"},
		{"p90>+20%", PairRule{}, "unknown metric"},
		{"p95>20%", PairRule{}, "starts with '+'"},
		{"p95>+20", PairRule{}, "needs a unit"},
		{"p95>+x%", PairRule{}, "not a non-negative number"},
		{"mean>+2x", PairRule{}, "no '+'"},
		{"mean>0.5x", PairRule{}, "above 1"},
		{"errors>+5%", PairRule{}, "percentage points"},
		{"p95>+1pp", PairRule{}, "errors only"},
		{"wal>+50%", PairRule{Text: "wal>+50%", Metric: compare.MetricWALBytes, Unit: compare.UnitPercent, Value: 50}, ""},
		{"WAL_bytes>1.5x", PairRule{Text: "WAL_bytes>1.5x", Metric: compare.MetricWALBytes, Unit: compare.UnitFactor, Value: 1.5}, ""},
		{"dirtied>2x", PairRule{Text: "dirtied>2x", Metric: compare.MetricDirtied, Unit: compare.UnitFactor, Value: 2}, ""},
		{"shared_blks_dirtied>+30%", PairRule{Text: "shared_blks_dirtied>+30%", Metric: compare.MetricDirtied, Unit: compare.UnitPercent, Value: 30}, ""},
		{"wal_fpi>+50%", PairRule{}, "never judged"},
		{"wal>+1ms", PairRule{}, "relative threshold"},
		{"dirtied>+1pp", PairRule{}, "errors only"},
	}
	for _, tt := range tests {
		got, err := ParsePairRule(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParsePairRulesCommasAndRepeats(t *testing.T) {
	rules, err := ParsePairRules([]string{"p95>+20%, mean>+50%", "errors>+1pp,"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.Text)
	}
	if want := []string{"p95>+20%", "mean>+50%", "errors>+1pp"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if _, err := ParsePairRules([]string{"p95>+20%,bogus"}); err == nil {
		t.Error("a bad rule among good ones was accepted")
	}
}
