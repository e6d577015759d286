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

// histCache is Buckets memoized by the histogram's text for one
// comparison: its checks, its summaries, the noise pooling, every look's
// evidence and the resolution read the same runs' histograms, and
// decoding them is most of a comparison's time. A nil histCache decodes
// every time.
type histCache map[string][]Bucket

// buckets is Buckets(hist), decoded once per cache.
func (h histCache) buckets(hist string) ([]Bucket, error) {
	if bs, ok := h[hist]; ok {
		return bs, nil
	}
	bs, err := Buckets(hist)
	if err == nil && h != nil {
		h[hist] = bs
	}
	return bs, err
}

// buckets is Buckets of q's histogram through the comparison's cache.
func (c *comparer) buckets(q *Query) ([]Bucket, error) { return c.hist.buckets(q.Hist) }
