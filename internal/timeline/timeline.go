// Package timeline counts a workload's activity over time: statements,
// errors and an approximate p95 latency per time bucket, for the "over
// time" charts of a report.
//
// Buckets start one second wide and double in width whenever there would
// be more than MaxBuckets of them, so memory stays bounded on logs of any
// length. Bucket boundaries are multiples of the width counted from the
// Unix epoch, which makes timelines of the same data built on several
// goroutines merge exactly. Latencies are kept in logarithmic bins (about
// 9% wide), good enough for a chart and a few hundred bytes per bucket.
package timeline

import (
	"math"
	"math/bits"
	"sort"
	"time"
)

// MaxBuckets bounds the number of buckets a Timeline keeps.
const MaxBuckets = 4096

// latency bins: bin i holds durations in [binLow(i), binLow(i+1)) µs,
// 8 bins per doubling from 1 µs to about 2^40 µs (12 days).
const (
	binsPerDoubling = 8
	numBins         = 40 * binsPerDoubling
)

type bucket struct {
	calls, errors int64
	timed         int64
	bins          map[uint16]int64 // sparse: most buckets see few distinct latencies
}

// Timeline is not safe for concurrent use; build one per goroutine and
// Merge them.
type Timeline struct {
	widthUS int64 // bucket width in µs: 1 s times a power of two
	buckets map[int64]*bucket
}

// New returns an empty Timeline with one-second buckets.
func New() *Timeline {
	return &Timeline{widthUS: int64(time.Second / time.Microsecond), buckets: make(map[int64]*bucket)}
}

// Add counts one statement that started at timeUS (µs since the epoch)
// and took durationUS (negative: not timed).
func (t *Timeline) Add(timeUS, durationUS int64, failed bool) {
	b := t.bucket(floorDiv(timeUS, t.widthUS))
	b.calls++
	if failed {
		b.errors++
	}
	if durationUS >= 0 {
		b.timed++
		b.bins[bin(durationUS)]++
	}
	for len(t.buckets) > MaxBuckets {
		t.widen(t.widthUS * 2)
	}
}

func (t *Timeline) bucket(i int64) *bucket {
	b := t.buckets[i]
	if b == nil {
		b = &bucket{bins: make(map[uint16]int64)}
		t.buckets[i] = b
	}
	return b
}

// widen re-buckets t to width w, a multiple of its current width.
func (t *Timeline) widen(w int64) {
	old := t.buckets
	f := w / t.widthUS
	t.widthUS, t.buckets = w, make(map[int64]*bucket, len(old)/int(f)+1)
	for i, b := range old {
		t.addBucket(floorDiv(i, f), b)
	}
}

func (t *Timeline) addBucket(i int64, o *bucket) {
	b := t.bucket(i)
	b.calls += o.calls
	b.errors += o.errors
	b.timed += o.timed
	for k, v := range o.bins {
		b.bins[k] += v
	}
}

// Merge adds o's counts to t. The result is the same as adding every
// statement of both to one Timeline.
func (t *Timeline) Merge(o *Timeline) {
	w := max(t.widthUS, o.widthUS)
	if t.widthUS < w {
		t.widen(w)
	}
	f := w / o.widthUS
	for i, b := range o.buckets {
		t.addBucket(floorDiv(i, f), b)
	}
	for len(t.buckets) > MaxBuckets {
		t.widen(t.widthUS * 2)
	}
}

// JSON is a Timeline as results carry it: dense arrays from the first to
// the last bucket that saw a statement.
type JSON struct {
	Start    string    `json:"start"`
	BucketMS int64     `json:"bucket_ms"`
	Calls    []int64   `json:"calls"`
	Errors   []int64   `json:"errors"`
	P95MS    []float64 `json:"p95_ms"`
}

// TimeLayout is how Start is written.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// JSON returns the dense form of t, or nil when it is empty.
func (t *Timeline) JSON() *JSON {
	if len(t.buckets) == 0 {
		return nil
	}
	idx := make([]int64, 0, len(t.buckets))
	for i := range t.buckets {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	first, last := idx[0], idx[len(idx)-1]
	n := last - first + 1
	j := &JSON{
		Start:    time.UnixMicro(first * t.widthUS).UTC().Format(TimeLayout),
		BucketMS: t.widthUS / 1000,
		Calls:    make([]int64, n),
		Errors:   make([]int64, n),
		P95MS:    make([]float64, n),
	}
	for _, i := range idx {
		b := t.buckets[i]
		k := i - first
		j.Calls[k], j.Errors[k] = b.calls, b.errors
		j.P95MS[k] = b.quantileMS(0.95)
	}
	return j
}

// quantileMS returns the q-quantile of the bucket's timed statements, in
// ms, as the middle of the bin that holds it; 0 with none.
func (b *bucket) quantileMS(q float64) float64 {
	if b.timed == 0 {
		return 0
	}
	keys := make([]uint16, 0, len(b.bins))
	for k := range b.bins {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, c int) bool { return keys[a] < keys[c] })
	rank := int64(math.Ceil(q * float64(b.timed)))
	var seen int64
	for _, k := range keys {
		if seen += b.bins[k]; seen >= rank {
			mid := math.Sqrt(binLow(k) * binLow(k+1))
			return math.Round(mid) / 1000
		}
	}
	return 0
}

// bin returns the latency bin of d µs.
func bin(d int64) uint16 {
	if d < 1 {
		return 0
	}
	e := 63 - bits.LeadingZeros64(uint64(d)) // 2^e <= d < 2^(e+1)
	// position within the doubling, in binsPerDoubling steps
	frac := float64(d)/float64(int64(1)<<e) - 1
	i := e*binsPerDoubling + int(frac*binsPerDoubling)
	return uint16(min(i, numBins-1))
}

func binLow(i uint16) float64 {
	e := int(i) / binsPerDoubling
	return float64(int64(1)<<e) * (1 + float64(int(i)%binsPerDoubling)/binsPerDoubling)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
