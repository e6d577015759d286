package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Metric is what a rule measures.
type Metric string

// Metrics of rules.
const (
	MetricMean   Metric = "mean"
	MetricP50    Metric = "p50"
	MetricP95    Metric = "p95"
	MetricP99    Metric = "p99"
	MetricTotal  Metric = "total_ms"
	MetricErrors Metric = "errors"
)

// Unit is how a rule's threshold reads.
type Unit string

// Units of thresholds.
const (
	UnitPercent Unit = "%"  // relative growth, in percent
	UnitFactor  Unit = "x"  // ratio candidate/baseline
	UnitMS      Unit = "ms" // absolute growth in milliseconds
	UnitPP      Unit = "pp" // growth of a rate in percentage points
)

// Rule is one threshold a comparison fails on.
type Rule struct {
	Text   string  `json:"rule"`
	Metric Metric  `json:"metric"`
	Unit   Unit    `json:"unit"`
	Value  float64 `json:"value"`
}

var metricNames = map[string]Metric{
	"mean": MetricMean, "mean_ms": MetricMean,
	"p50": MetricP50, "p50_ms": MetricP50, "median": MetricP50,
	"p95": MetricP95, "p95_ms": MetricP95,
	"p99": MetricP99, "p99_ms": MetricP99,
	"total": MetricTotal, "total_ms": MetricTotal,
	"errors": MetricErrors,
}

// ParseRules parses rules from flag values, each of which may hold several
// comma-separated rules.
func ParseRules(values []string) ([]Rule, error) {
	var rules []Rule
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			r, err := ParseRule(part)
			if err != nil {
				return nil, err
			}
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// ParseRule parses one rule such as "p95>+20%".
func ParseRule(s string) (Rule, error) {
	text := strings.Join(strings.Fields(s), "")
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("rule %q: %s (want METRIC>THRESHOLD such as p95>+20%%, mean>2x, p99>+50ms, errors>+1pp)", s, why)
	}
	name, thr, ok := strings.Cut(text, ">")
	if !ok {
		return bad("no '>'")
	}
	m, ok := metricNames[strings.ToLower(name)]
	if !ok {
		return bad(fmt.Sprintf("unknown metric %q (want mean, p50, p95, p99, total_ms or errors)", name))
	}
	r := Rule{Text: text, Metric: m}
	plus := strings.HasPrefix(thr, "+")
	thr = strings.TrimPrefix(thr, "+")
	lower := strings.ToLower(thr)
	switch {
	case strings.HasSuffix(lower, "pp"):
		r.Unit, thr = UnitPP, thr[:len(thr)-2]
	case strings.HasSuffix(lower, "ms"):
		r.Unit, thr = UnitMS, thr[:len(thr)-2]
	case strings.HasSuffix(lower, "%"):
		r.Unit, thr = UnitPercent, thr[:len(thr)-1]
	case strings.HasSuffix(lower, "x"):
		r.Unit, thr = UnitFactor, thr[:len(thr)-1]
	default:
		return bad("threshold needs a unit: %, x, ms or pp")
	}
	v, err := strconv.ParseFloat(thr, 64)
	if err != nil || v < 0 {
		return bad(fmt.Sprintf("threshold %q is not a non-negative number", thr))
	}
	r.Value = v
	switch {
	case r.Unit != UnitFactor && !plus:
		return bad("a growth threshold starts with '+'")
	case r.Unit == UnitFactor && plus:
		return bad("a factor has no '+' (write mean>2x)")
	case r.Unit == UnitFactor && v <= 1:
		return bad("a factor must be above 1")
	case m == MetricErrors && r.Unit != UnitPP:
		return bad("errors take a threshold in percentage points (+Npp)")
	case m != MetricErrors && r.Unit == UnitPP:
		return bad("pp applies to errors only")
	case m == MetricTotal && r.Unit == UnitMS:
		// Allowed: total time added, in ms.
	}
	return r, nil
}

// Broken is a rule broken by a query.
type Broken struct {
	Rule        string  `json:"rule"`
	Fingerprint string  `json:"fingerprint"`
	Baseline    float64 `json:"baseline"`
	Candidate   float64 `json:"candidate"`
	// Detail says it for a person: "p95 1.20 ms -> 4.80 ms (4.00x)".
	Detail string `json:"detail"`
}

// check returns how q breaks r, if it does.
func (r Rule) check(q *QueryDiff) (Broken, bool) {
	if q.Baseline == nil || q.Candidate == nil || q.Significance == nil {
		return Broken{}, false
	}
	b, c := q.Baseline, q.Candidate
	if r.Metric == MetricErrors {
		if q.ErrorsP >= errorAlpha || q.Baseline.Calls < minErrorCalls || c.Calls < minErrorCalls {
			return Broken{}, false
		}
		if c.ErrorRatePct-b.ErrorRatePct <= r.Value {
			return Broken{}, false
		}
		return Broken{Rule: r.Text, Fingerprint: q.Fingerprint, Baseline: b.ErrorRatePct, Candidate: c.ErrorRatePct,
			Detail: fmt.Sprintf("error rate %.2f%% -> %.2f%% (%+.2f pp)", b.ErrorRatePct, c.ErrorRatePct, c.ErrorRatePct-b.ErrorRatePct)}, true
	}
	if !q.Significance.Significant || q.Significance.Direction <= 0 || q.belowMinEffectMS {
		return Broken{}, false
	}
	var bv, cv float64
	switch r.Metric {
	case MetricMean:
		bv, cv = b.MeanMS, c.MeanMS
	case MetricP50:
		bv, cv = b.P50MS, c.P50MS
	case MetricP95:
		bv, cv = b.P95MS, c.P95MS
	case MetricP99:
		bv, cv = b.P99MS, c.P99MS
	case MetricTotal:
		bv, cv = b.TotalMS, c.TotalMS
	}
	var broken bool
	switch r.Unit {
	case UnitPercent:
		broken = cv > bv*(1+r.Value/100)
	case UnitFactor:
		broken = cv > bv*r.Value
	case UnitMS:
		broken = cv-bv > r.Value
	}
	if !broken {
		return Broken{}, false
	}
	return Broken{Rule: r.Text, Fingerprint: q.Fingerprint, Baseline: bv, Candidate: cv,
		Detail: fmt.Sprintf("%s %s ms -> %s ms (%s)", r.Metric, FormatMS(bv), FormatMS(cv), FormatFactor(ratio(cv, bv)))}, true
}

// FormatMS formats milliseconds with about three significant digits.
func FormatMS(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// FormatSignedMS formats a difference in ms with its sign: "+0.158",
// "-1.20"; what rounds to zero is "+0.000", never "-0.000".
func FormatSignedMS(v float64) string {
	s := FormatMS(math.Abs(v))
	if v < 0 && strings.Trim(s, "0.") != "" {
		return "-" + s
	}
	return "+" + s
}

// FormatTotal formats a total time given in ms: "850 ms", "14.75 s".
func FormatTotal(ms float64) string {
	if ms >= 1000 || ms <= -1000 {
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	}
	return FormatMS(ms) + " ms"
}

// FormatFactor formats a ratio as "4.00x"; "-" when undefined.
func FormatFactor(r float64) string {
	if r <= 0 {
		return "-"
	}
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64) + "x"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "x"
}
