// Package timeline counts a workload's activity over time: statements,
// errors and an approximate p95 latency per time bucket, for the "over
// time" charts of a report.
//
// Buckets start one second wide and double in width whenever the span
// from the first to the last would take more than MaxBuckets of them, so
// memory and the dense JSON stay bounded on logs of any length: a
// 185-day log gets some 500 nine-hour buckets, not 16 million seconds. Bucket boundaries are multiples of the width counted from the
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

// MaxBuckets bounds the buckets from the first to the last: ten minutes
// of one-second buckets, and a few hundred for any longer span.
const MaxBuckets = 600

// latency bins: bin i holds durations in [binLow(i), binLow(i+1)) µs,
// 8 bins per doubling from 1 µs to about 2^40 µs (12 days).
const (
	binsPerDoubling = 8
	numBins         = 40 * binsPerDoubling
)

type bucket struct {
	calls, errors int64
	timed         int64
	// bins counts timed statements by latency bin, densely from bin lo:
	// a bucket's latencies span a limited range of bins, and a slice
	// costs an index where a map costs a hash and a probe.
	lo   uint16
	bins []int64
}

// Timeline is not safe for concurrent use; build one per goroutine and
// Merge them.
type Timeline struct {
	widthUS int64 // bucket width in µs: 1 s times a power of two
	buckets map[int64]*bucket
	// last is the bucket of the previous Add, for times in [lastFrom,
	// lastTo): a log's times mostly advance, so most statements fall in
	// the same bucket as the one before.
	last             *bucket
	lastFrom, lastTo int64
	// lo and hi are the first and last bucket indexes, when there are
	// buckets: the span JSON writes densely.
	lo, hi int64
}

// New returns an empty Timeline with one-second buckets.
func New() *Timeline {
	return &Timeline{widthUS: int64(time.Second / time.Microsecond), buckets: make(map[int64]*bucket)}
}

// Add counts one statement that started at timeUS (µs since the epoch)
// and took durationUS (negative: not timed).
func (t *Timeline) Add(timeUS, durationUS int64, failed bool) {
	b := t.last
	if b == nil || timeUS < t.lastFrom || timeUS >= t.lastTo {
		b = t.find(timeUS)
	}
	b.calls++
	if failed {
		b.errors++
	}
	if durationUS >= 0 {
		b.timed++
		b.add(bin(durationUS), 1)
	}
}

// find returns the bucket of timeUS, widening the buckets first if a new
// one would make too many, and remembers it as the last one.
func (t *Timeline) find(timeUS int64) *bucket {
	i := floorDiv(timeUS, t.widthUS)
	b := t.buckets[i]
	for b == nil && len(t.buckets) > 0 && max(t.hi, i)-min(t.lo, i) >= MaxBuckets {
		// Widening first gives the same buckets as adding first and
		// widening after: bucket boundaries are multiples of the width.
		t.widen(t.widthUS * 2)
		i = floorDiv(timeUS, t.widthUS)
		b = t.buckets[i]
	}
	if b == nil {
		b = t.bucket(i)
	}
	t.last = nil
	// Remember the bucket unless its bounds are beyond int64 (times
	// far from any log's).
	if from := i * t.widthUS; from <= timeUS && from+t.widthUS > timeUS {
		t.last, t.lastFrom, t.lastTo = b, from, from+t.widthUS
	}
	return b
}

func (t *Timeline) bucket(i int64) *bucket {
	b := t.buckets[i]
	if b == nil {
		b = &bucket{}
		if len(t.buckets) == 0 {
			t.lo, t.hi = i, i
		}
		t.lo, t.hi = min(t.lo, i), max(t.hi, i)
		t.buckets[i] = b
	}
	return b
}

// add counts n statements in latency bin k.
func (b *bucket) add(k uint16, n int64) {
	if j := int(k) - int(b.lo); j >= 0 && j < len(b.bins) {
		b.bins[j] += n
		return
	}
	b.grow(k)
	b.bins[int(k)-int(b.lo)] += n
}

// grow extends bins to hold bin k, with room for a few more bins on the
// side that grew so that a spreading range does not copy on every new
// bin.
func (b *bucket) grow(k uint16) {
	const slack = 4
	lo, hi := int(k), int(k)+1
	if len(b.bins) > 0 {
		lo, hi = min(lo, int(b.lo)), max(hi, int(b.lo)+len(b.bins))
		if lo < int(b.lo) {
			lo = max(lo-slack, 0)
		} else {
			hi = min(hi+slack, numBins)
		}
	}
	bins := make([]int64, hi-lo)
	if len(b.bins) > 0 {
		copy(bins[int(b.lo)-lo:], b.bins)
	}
	b.lo, b.bins = uint16(lo), bins
}

// widen re-buckets t to width w, a multiple of its current width.
func (t *Timeline) widen(w int64) {
	old := t.buckets
	f := w / t.widthUS
	t.widthUS, t.buckets = w, make(map[int64]*bucket, len(old)/int(f)+1)
	t.last = nil
	for i, b := range old {
		t.addBucket(floorDiv(i, f), b)
	}
}

// span is how many buckets JSON writes: from the first to the last.
func (t *Timeline) span() int64 {
	if len(t.buckets) == 0 {
		return 0
	}
	return t.hi - t.lo + 1
}

func (t *Timeline) addBucket(i int64, o *bucket) {
	b := t.bucket(i)
	b.calls += o.calls
	b.errors += o.errors
	b.timed += o.timed
	for j, v := range o.bins {
		if v != 0 {
			b.add(o.lo+uint16(j), v)
		}
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
	for t.span() > MaxBuckets {
		t.widen(t.widthUS * 2)
	}
	t.last = nil
}

// JSON is a Timeline as results carry it: dense arrays from the first to
// the last bucket that saw a statement.
type JSON struct {
	Start    string    `json:"start"`
	BucketMS int64     `json:"bucket_ms"`
	Calls    []int64   `json:"calls"`
	Errors   []int64   `json:"errors"`
	P95MS    []float64 `json:"p95_ms"`
	// Bins are each bucket's latency bins, for merging timelines
	// exactly (see FromJSON): pairs of a bin's index and its count, for
	// the bins that counted a statement; empty for a bucket without a
	// timed call.
	Bins [][]int64 `json:"bins,omitempty"`
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
		Bins:     make([][]int64, n),
	}
	for _, i := range idx {
		b := t.buckets[i]
		k := i - first
		j.Calls[k], j.Errors[k] = b.calls, b.errors
		j.P95MS[k] = b.quantileMS(0.95)
		j.Bins[k] = b.encodeBins()
	}
	return j
}

// quantileMS returns the q-quantile of the bucket's timed statements, in
// ms, as the middle of the bin that holds it; 0 with none.
func (b *bucket) quantileMS(q float64) float64 {
	if b.timed == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(b.timed)))
	var seen int64
	for j, v := range b.bins {
		if seen += v; seen >= rank {
			k := b.lo + uint16(j)
			mid := math.Sqrt(binLow(k) * binLow(k+1))
			return math.Round(mid) / 1000
		}
	}
	return 0
}

// bin returns the latency bin of d µs: the doubling it is in, and which
// eighth of it, from the three bits after its leading one.
func bin(d int64) uint16 {
	if d < 1 {
		return 0
	}
	e := 63 - bits.LeadingZeros64(uint64(d)) // 2^e <= d < 2^(e+1)
	var f int64
	if e >= 3 {
		f = d >> (e - 3) & (binsPerDoubling - 1)
	} else {
		f = d << (3 - e) & (binsPerDoubling - 1)
	}
	return uint16(min(e*binsPerDoubling+int(f), numBins-1))
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
