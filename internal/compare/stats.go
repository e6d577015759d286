package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Bucket is a histogram bucket: durations equivalent to ValueUS (within
// the histogram's precision) occurred Count times.
type Bucket struct {
	ValueUS int64
	Count   int64
}

// Buckets decodes a row's histogram (HdrHistogram V2, base64) into its
// populated buckets, by increasing value.
func Buckets(hist string) ([]Bucket, error) {
	h, err := hdrhistogram.DecodePacked([]byte(hist))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	var out []Bucket
	for v, c := range h.ForEachBucket {
		if c > 0 {
			out = append(out, Bucket{v, c})
		}
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Compare(a.ValueUS, b.ValueUS) })
	return out, nil
}

// TestResult is what the two distribution tests found.
type TestResult struct {
	// PMannWhitney is the two-sided p-value of the Mann-Whitney U test.
	PMannWhitney float64
	// PKS is the p-value of the two-sample Kolmogorov-Smirnov test.
	PKS float64
	// ProbSlower is P(a candidate call is slower than a baseline call),
	// ties counted half: 0.5 means no shift.
	ProbSlower float64
	// D is the Kolmogorov-Smirnov distance, the largest gap between the
	// two cumulative distributions.
	D float64
}

// testBuckets runs both tests on grouped data. Equal values are ties,
// which the Mann-Whitney variance corrects for and which make KS
// conservative.
func testBuckets(base, cand []Bucket) TestResult {
	var n1, n2 float64
	for _, b := range base {
		n1 += float64(b.Count)
	}
	for _, b := range cand {
		n2 += float64(b.Count)
	}
	if n1 == 0 || n2 == 0 {
		return TestResult{PMannWhitney: 1, PKS: 1, ProbSlower: 0.5}
	}
	n := n1 + n2
	var (
		i, j          int
		below         float64 // observations of both below the current value
		r2            float64 // rank sum of the candidate
		tieCorr       float64 // Σ t³ - t
		cum1, cum2, d float64
	)
	for i < len(base) || j < len(cand) {
		var a, b float64
		switch {
		case j == len(cand) || (i < len(base) && base[i].ValueUS < cand[j].ValueUS):
			a = float64(base[i].Count)
			i++
		case i == len(base) || cand[j].ValueUS < base[i].ValueUS:
			b = float64(cand[j].Count)
			j++
		default:
			a, b = float64(base[i].Count), float64(cand[j].Count)
			i++
			j++
		}
		t := a + b
		r2 += b * (below + (t+1)/2)
		tieCorr += t*t*t - t
		below += t
		cum1 += a
		cum2 += b
		d = max(d, math.Abs(cum1/n1-cum2/n2))
	}
	u2 := r2 - n2*(n2+1)/2
	res := TestResult{ProbSlower: u2 / (n1 * n2), D: d, PMannWhitney: 1}
	mu := n1 * n2 / 2
	sigma := math.Sqrt(n1 * n2 / 12 * ((n + 1) - tieCorr/(n*(n-1))))
	if sigma > 0 {
		z := max(math.Abs(u2-mu)-0.5, 0) / sigma // continuity correction
		res.PMannWhitney = math.Erfc(z / math.Sqrt2)
	}
	res.PKS = ksPValue(d, n1, n2)
	return res
}

// ksPValue is the asymptotic p-value of a KS distance d between samples of
// n1 and n2, with Stephens' small-sample correction.
func ksPValue(d, n1, n2 float64) float64 {
	if d <= 0 {
		return 1
	}
	en := math.Sqrt(n1 * n2 / (n1 + n2))
	lambda := (en + 0.12 + 0.11/en) * d
	if lambda < 0.2 {
		return 1
	}
	var sum, sign float64 = 0, 1
	for k := 1; k <= 100; k++ {
		term := sign * 2 * math.Exp(-2*float64(k*k)*lambda*lambda)
		sum += term
		if math.Abs(term) < 1e-12 {
			break
		}
		sign = -sign
	}
	return min(max(sum, 0), 1)
}

// proportionIncrease is the one-sided p-value that the error rate e2/c2 is
// higher than e1/c1 (a pooled two-proportion z-test).
func proportionIncrease(e1, c1, e2, c2 int64) float64 {
	if c1 == 0 || c2 == 0 {
		return 1
	}
	p1, p2 := float64(e1)/float64(c1), float64(e2)/float64(c2)
	p := float64(e1+e2) / float64(c1+c2)
	se := math.Sqrt(p * (1 - p) * (1/float64(c1) + 1/float64(c2)))
	if se == 0 {
		return 1
	}
	return math.Erfc((p2-p1)/se/math.Sqrt2) / 2
}

// summaryTest is the rule used when a histogram is missing: only p50, p95
// and p99 are known, not the spread around them, so a difference counts
// only when most calls of one run lie in the other's tail: the
// candidate's p50 above the baseline's p95, or its p95 above the
// baseline's p99 with the median not lower. It returns +1 (candidate
// slower), -1 (faster) or 0 (cannot tell). Identical summaries give 0.
func summaryTest(b, c *Figures) int {
	slower := func(x, y *Figures) bool {
		return y.P50MS > x.P95MS || (y.P95MS > x.P99MS && y.P50MS >= x.P50MS)
	}
	switch {
	case slower(b, c) && !slower(c, b):
		return 1
	case slower(c, b) && !slower(b, c):
		return -1
	}
	return 0
}
