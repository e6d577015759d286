package judge

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// The judge's rules come in three kinds, each named for what it judges:
//
//   - a PairRule is a threshold on two sides compared, a control and a
//     candidate (METRIC>THRESHOLD: p95>+20%, mean>2x, errors>+1pp,
//     wal>+50%), which compare checks query by query (PairRules,
//     ParsePairRules; its metrics are PairMetric, compare's);
//   - an SLORule bounds one target at a load factor against itself at
//     k = 1 (METRIC<LIMIT: p95<+50%, errors<+0.1pp), for headroom's
//     steps and levels (SLO, ParseSLO; its metrics are SLOMetric);
//   - a CurveRule says where a step curve (a sweep's) falls off its
//     peak: the cliff (CurveRule.Cliff).
//
// The judge owns the grammar users write them in: ParsePairRules and
// ParseSLO.

type (
	// PairRule is one threshold on two sides compared, whose breaking
	// fails a comparison (compare checks it).
	PairRule = compare.Rule
	// PairMetric is what a PairRule measures.
	PairMetric = compare.Metric
)

// PairRules are the rules on two sides whose breaking fails a
// comparison, parsed once so that a mistake is said before any work is
// done.
type PairRules []PairRule

// pairMetricNames are the names a PairRule's metric may be written by.
var pairMetricNames = map[string]PairMetric{
	"mean": compare.MetricMean, "mean_ms": compare.MetricMean,
	"p50": compare.MetricP50, "p50_ms": compare.MetricP50, "median": compare.MetricP50,
	"p95": compare.MetricP95, "p95_ms": compare.MetricP95,
	"p99": compare.MetricP99, "p99_ms": compare.MetricP99,
	"total": compare.MetricTotal, "total_ms": compare.MetricTotal,
	"errors": compare.MetricErrors,
	"wal":    compare.MetricWALBytes, "wal_bytes": compare.MetricWALBytes,
	"dirtied": compare.MetricDirtied, "blks_dirtied": compare.MetricDirtied, "shared_blks_dirtied": compare.MetricDirtied,
	"wal_fpi": compare.MetricWALFPI,
}

// ParsePairRules parses rules on two sides from a command's values, each
// of which may hold several rules separated by commas
// (METRIC>THRESHOLD, ParsePairRule).
func ParsePairRules(values []string) (PairRules, error) {
	var rules PairRules
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			r, err := ParsePairRule(part)
			if err != nil {
				return nil, err
			}
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// ParsePairRule parses one rule on two sides, such as "p95>+20%".
func ParsePairRule(s string) (PairRule, error) {
	text := strings.Join(strings.Fields(s), "")
	bad := func(why string) (PairRule, error) {
		return PairRule{}, fmt.Errorf("rule %q: %s (want METRIC>THRESHOLD such as p95>+20%%, mean>2x, p99>+50ms, errors>+1pp, wal>+50%%)", s, why)
	}
	name, thr, ok := strings.Cut(text, ">")
	if !ok {
		return bad("no '>'")
	}
	m, ok := pairMetricNames[strings.ToLower(name)]
	if !ok {
		return bad(fmt.Sprintf("unknown metric %q (want mean, p50, p95, p99, total_ms, errors, wal or dirtied)", name))
	}
	if m == compare.MetricWALFPI {
		return bad("full-page images are shown, never judged: how many a call writes depends on when the last checkpoint was (use wal or dirtied)")
	}
	r := PairRule{Text: text, Metric: m}
	plus := strings.HasPrefix(thr, "+")
	thr = strings.TrimPrefix(thr, "+")
	lower := strings.ToLower(thr)
	switch {
	case strings.HasSuffix(lower, "pp"):
		r.Unit, thr = compare.UnitPP, thr[:len(thr)-2]
	case strings.HasSuffix(lower, "ms"):
		r.Unit, thr = compare.UnitMS, thr[:len(thr)-2]
	case strings.HasSuffix(lower, "%"):
		r.Unit, thr = compare.UnitPercent, thr[:len(thr)-1]
	case strings.HasSuffix(lower, "x"):
		r.Unit, thr = compare.UnitFactor, thr[:len(thr)-1]
	default:
		return bad("threshold needs a unit: %, x, ms or pp")
	}
	v, err := strconv.ParseFloat(thr, 64)
	if err != nil || v < 0 {
		return bad(fmt.Sprintf("threshold %q is not a non-negative number", thr))
	}
	r.Value = v
	switch {
	case r.Unit != compare.UnitFactor && !plus:
		return bad("a growth threshold starts with '+'")
	case r.Unit == compare.UnitFactor && plus:
		return bad("a factor has no '+' (write mean>2x)")
	case r.Unit == compare.UnitFactor && v <= 1:
		return bad("a factor must be above 1")
	case m == compare.MetricErrors && r.Unit != compare.UnitPP:
		return bad("errors take a threshold in percentage points (+Npp)")
	case m != compare.MetricErrors && r.Unit == compare.UnitPP:
		return bad("pp applies to errors only")
	case compare.WorkRule(m) && r.Unit == compare.UnitMS:
		return bad("server work per call takes a relative threshold (+N% or Nx)")
	}
	return r, nil
}
