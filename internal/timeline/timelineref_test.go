package timeline

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"
)

// The first timeline, with a map per bucket and float bins, kept as the
// reference the faster one must agree with exactly.

type refBucket struct {
	calls, errors int64
	timed         int64
	bins          map[uint16]int64 // sparse: most buckets see few distinct latencies
}

// refTimeline is not safe for concurrent use; build one per goroutine and
// Merge them.
type refTimeline struct {
	widthUS int64 // bucket width in µs: 1 s times a power of two
	buckets map[int64]*refBucket
}

// New returns an empty refTimeline with one-second buckets.
func newRef() *refTimeline {
	return &refTimeline{widthUS: int64(time.Second / time.Microsecond), buckets: make(map[int64]*refBucket)}
}

// Add counts one statement that started at timeUS (µs since the epoch)
// and took durationUS (negative: not timed).
func (t *refTimeline) Add(timeUS, durationUS int64, failed bool) {
	b := t.bucket(refFloorDiv(timeUS, t.widthUS))
	b.calls++
	if failed {
		b.errors++
	}
	if durationUS >= 0 {
		b.timed++
		b.bins[refBin(durationUS)]++
	}
	for t.span() > MaxBuckets {
		t.widen(t.widthUS * 2)
	}
}

// span is how many buckets there are from the first to the last.
func (t *refTimeline) span() int64 {
	if len(t.buckets) == 0 {
		return 0
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range t.buckets {
		lo, hi = min(lo, i), max(hi, i)
	}
	return hi - lo + 1
}

func (t *refTimeline) bucket(i int64) *refBucket {
	b := t.buckets[i]
	if b == nil {
		b = &refBucket{bins: make(map[uint16]int64)}
		t.buckets[i] = b
	}
	return b
}

// widen re-buckets t to width w, a multiple of its current width.
func (t *refTimeline) widen(w int64) {
	old := t.buckets
	f := w / t.widthUS
	t.widthUS, t.buckets = w, make(map[int64]*refBucket, len(old)/int(f)+1)
	for i, b := range old {
		t.addBucket(refFloorDiv(i, f), b)
	}
}

func (t *refTimeline) addBucket(i int64, o *refBucket) {
	b := t.bucket(i)
	b.calls += o.calls
	b.errors += o.errors
	b.timed += o.timed
	for k, v := range o.bins {
		b.bins[k] += v
	}
}

// Merge adds o's counts to t. The result is the same as adding every
// statement of both to one refTimeline.
func (t *refTimeline) Merge(o *refTimeline) {
	w := max(t.widthUS, o.widthUS)
	if t.widthUS < w {
		t.widen(w)
	}
	f := w / o.widthUS
	for i, b := range o.buckets {
		t.addBucket(refFloorDiv(i, f), b)
	}
	for t.span() > MaxBuckets {
		t.widen(t.widthUS * 2)
	}
}

// JSON returns the dense form of t, or nil when it is empty.
func (t *refTimeline) JSON() *JSON {
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
func (b *refBucket) quantileMS(q float64) float64 {
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
			mid := math.Sqrt(refBinLow(k) * refBinLow(k+1))
			return math.Round(mid) / 1000
		}
	}
	return 0
}

// bin returns the latency bin of d µs.
func refBin(d int64) uint16 {
	if d < 1 {
		return 0
	}
	e := 63 - bits.LeadingZeros64(uint64(d)) // 2^e <= d < 2^(e+1)
	// position within the doubling, in binsPerDoubling steps
	frac := float64(d)/float64(int64(1)<<e) - 1
	i := e*binsPerDoubling + int(frac*binsPerDoubling)
	return uint16(min(i, numBins-1))
}

func refBinLow(i uint16) float64 {
	e := int(i) / binsPerDoubling
	return float64(int64(1)<<e) * (1 + float64(int(i)%binsPerDoubling)/binsPerDoubling)
}

func refFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// TestMatchesReference: the same statements, added and merged in the
// same way, give the same JSON as the reference, p95 included.
func TestMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := int64(1_700_000_000) * sec
	for _, spread := range []int64{10 * sec, int64(3*MaxBuckets) * sec} {
		parts, refParts := []*Timeline{New(), New(), New()}, []*refTimeline{newRef(), newRef(), newRef()}
		ts := base
		for i := range 50000 {
			// Mostly advancing, sometimes back across a boundary, as
			// start times computed from end times do.
			ts += r.Int64N(2*spread/50000 + 1)
			at := ts - r.Int64N(sec)
			d := int64(r.ExpFloat64() * 3000)
			switch r.IntN(20) {
			case 0:
				d = -1
			case 1:
				d = r.Int64N(1 << 45)
			case 2:
				d = 0
			}
			failed := r.IntN(13) == 0
			parts[i%3].Add(at, d, failed)
			refParts[i%3].Add(at, d, failed)
		}
		for i := range parts {
			if got, want := withoutBins(parts[i].JSON()), refParts[i].JSON(); !reflect.DeepEqual(got, want) {
				t.Fatalf("spread %d, part %d: %+v, want %+v", spread, i, got, want)
			}
		}
		parts[0].Merge(parts[1])
		parts[0].Merge(parts[2])
		refParts[0].Merge(refParts[1])
		refParts[0].Merge(refParts[2])
		if got, want := withoutBins(parts[0].JSON()), refParts[0].JSON(); !reflect.DeepEqual(got, want) {
			t.Fatalf("spread %d, merged: %+v, want %+v", spread, got, want)
		}
	}
}

func TestBinMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(d int64) {
		if got, want := bin(d), refBin(d); got != want {
			t.Fatalf("bin(%d) = %d, reference %d", d, got, want)
		}
	}
	for d := int64(-2); d < 1<<16; d++ {
		check(d)
	}
	for range 1_000_000 {
		check(r.Int64N(1<<62) >> r.IntN(62))
	}
	check(math.MaxInt64)
}

// BenchmarkAdd adds statements of a log's pace (one every 50 µs, mostly
// in order) with exponential latencies, to this timeline and to the
// reference.
func BenchmarkAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	base := int64(1_700_000_000) * sec
	at, d := make([]int64, 4096), make([]int64, 4096)
	for i := range at {
		at[i] = int64(i)*50 - r.Int64N(200)
		d[i] = int64(r.ExpFloat64() * 500)
	}
	b.Run("dense", func(b *testing.B) {
		tl := New()
		i := 0
		for b.Loop() {
			tl.Add(base+int64(i/4096)*4096*50+at[i%4096], d[i%4096], false)
			i++
		}
	})
	b.Run("reference", func(b *testing.B) {
		tl := newRef()
		i := 0
		for b.Loop() {
			tl.Add(base+int64(i/4096)*4096*50+at[i%4096], d[i%4096], false)
			i++
		}
	})
}

// withoutBins drops the bins, which the reference does not keep: they are
// tested by TestFromJSON.
func withoutBins(j *JSON) *JSON {
	c := *j
	c.Bins = nil
	return &c
}
