package judge

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// SLOMetric is what a rule of an SLO bounds.
type SLOMetric string

// Metrics.
const (
	SLOMetricP50    SLOMetric = "p50"
	SLOMetricP95    SLOMetric = "p95"
	SLOMetricP99    SLOMetric = "p99"
	SLOMetricMean   SLOMetric = "mean"
	SLOMetricErrors SLOMetric = "errors"
	// SLOMetricLag is the replay's schedule lag (SLO.MaxLag), a rule of
	// every SLO.
	SLOMetricLag SLOMetric = "lag"
)

// SLORule bounds one metric relative to the same target at k = 1: a latency
// metric (each judged query's) may be at most Ratio times its k = 1
// figure; the error rate at most PP percentage points above it.
type SLORule struct {
	Metric SLOMetric `json:"metric"`
	Ratio  float64   `json:"ratio,omitempty"`
	PP     float64   `json:"pp,omitempty"`
}

func (r SLORule) String() string {
	if r.Metric == SLOMetricErrors {
		return fmt.Sprintf("errors<+%gpp", r.PP)
	}
	return fmt.Sprintf("%s<+%g%%", r.Metric, roundPct((r.Ratio-1)*100))
}

func roundPct(p float64) float64 { return float64(int64(p*10+0.5)) / 10 }

// SLO is what a target must keep at a load factor to hold it.
type SLO struct {
	Rules []SLORule `json:"rules"`
	// MaxLag fails a step whose schedule lag p99 is beyond it, over the
	// lag p99 at 1x, when the target is why (its sessions waited on their
	// previous statement and latency grew); 0: lag is not judged.
	MaxLag time.Duration `json:"max_lag_ns"`
	// MinEffectMS is the fewest milliseconds a latency must grow by to
	// break a rule, so that a query of microseconds does not break on
	// noise. A rule's limit also grows by the spread of the query's
	// figure between the 1x rounds (Query.Spread).
	MinEffectMS float64 `json:"min_effect_ms"`
	// MinCalls is the fewest timed calls a query needs, at k = 1 and in
	// the step, to be judged; MinShare the least share of the baseline's
	// time (0.05: 5%) it must take.
	MinCalls int64   `json:"min_calls"`
	MinShare float64 `json:"min_share"`
}

// DefaultSLO is the SLO of ParseSLO's default text.
const DefaultSLO = "p95<+50%,errors<+0.1pp"

// Defaults of the SLO's other bounds.
const (
	// DefaultMaxLag is the replay's own threshold of doubtful timings.
	DefaultMaxLag      = results.DefaultMaxLag
	DefaultMinEffectMS = 0.2
	DefaultMinCalls    = 50
	DefaultMinShare    = 0.05
)

// ParseSLO reads an SLO such as "p95<+50%,errors<+0.1pp": latency rules
// (p50, p95, p99, mean) as "<+N%" or "<Nx", error rules as "<+Npp". The
// other bounds take their defaults.
func ParseSLO(s string) (SLO, error) {
	slo := SLO{MaxLag: DefaultMaxLag, MinEffectMS: DefaultMinEffectMS, MinCalls: DefaultMinCalls, MinShare: DefaultMinShare}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, limit, ok := strings.Cut(part, "<")
		if !ok {
			return SLO{}, fmt.Errorf("SLO rule %q: want METRIC<LIMIT, such as p95<+50%% or errors<+0.1pp", part)
		}
		m := SLOMetric(strings.ToLower(strings.TrimSpace(name)))
		limit = strings.TrimSpace(limit)
		var r SLORule
		switch m {
		case SLOMetricP50, SLOMetricP95, SLOMetricP99, SLOMetricMean:
			ratio, err := parseRatio(limit)
			if err != nil {
				return SLO{}, fmt.Errorf("SLO rule %q: %w", part, err)
			}
			r = SLORule{Metric: m, Ratio: ratio}
		case SLOMetricErrors:
			v, ok := strings.CutSuffix(limit, "pp")
			if !ok {
				return SLO{}, fmt.Errorf("SLO rule %q: an errors limit is in percentage points, such as +0.1pp", part)
			}
			pp, err := strconv.ParseFloat(strings.TrimPrefix(v, "+"), 64)
			if err != nil || pp < 0 {
				return SLO{}, fmt.Errorf("SLO rule %q: %q is not a number of percentage points", part, v)
			}
			r = SLORule{Metric: m, PP: pp}
		default:
			return SLO{}, fmt.Errorf("SLO rule %q: unknown metric %q (p50, p95, p99, mean or errors)", part, name)
		}
		for _, o := range slo.Rules {
			if o.Metric == r.Metric {
				return SLO{}, fmt.Errorf("SLO: %s given twice", r.Metric)
			}
		}
		slo.Rules = append(slo.Rules, r)
	}
	if len(slo.Rules) == 0 {
		return SLO{}, fmt.Errorf("SLO %q: no rule", s)
	}
	return slo, nil
}

// parseRatio reads "+50%" (1.5) or "2x" (2).
func parseRatio(s string) (float64, error) {
	if v, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimPrefix(v, "+"), 64)
		if err != nil || p <= 0 {
			return 0, fmt.Errorf("%q is not a growth above 0%%", s)
		}
		return 1 + p/100, nil
	}
	if v, ok := strings.CutSuffix(s, "x"); ok {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x <= 1 {
			return 0, fmt.Errorf("%q is not a factor above 1x", s)
		}
		return x, nil
	}
	return 0, fmt.Errorf("%q: want a growth such as +50%% or a factor such as 2x", s)
}

// String is the SLO's rules as ParseSLO reads them.
func (s SLO) String() string {
	parts := make([]string, len(s.Rules))
	for i, r := range s.Rules {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}
