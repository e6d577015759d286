package timeline

import (
	"errors"
	"fmt"
	"time"
)

// encodeBins returns the bucket's latency bins as JSON.Bins holds them:
// (index, count) pairs of the bins that are not empty. A bucket's
// latencies are spread over a few dozen bins at most, often far apart
// (a fast query and a slow one), which pairs hold more compactly than a
// dense run.
func (b *bucket) encodeBins() []int64 {
	out := []int64{}
	for j, v := range b.bins {
		if v != 0 {
			out = append(out, int64(b.lo)+int64(j), v)
		}
	}
	return out
}

// ErrNoBins is returned by FromJSON for a timeline written without its
// latency bins (by pgrehearse before results version 2): its calls and
// errors are known but its latencies cannot be merged.
var ErrNoBins = errors.New("the timeline has no latency bins (written by an older pgrehearse)")

// FromJSON rebuilds a Timeline from its JSON form, to merge timelines of
// several results: Merge(FromJSON(a.JSON()), FromJSON(b.JSON())) gives
// the timeline of every statement of both. Buckets are aligned on wall
// time (their boundaries are multiples of the width from the Unix epoch),
// so timelines of different runs or parts merge wherever they overlap.
func FromJSON(j *JSON) (*Timeline, error) {
	t := New()
	if j == nil {
		return t, nil
	}
	if j.BucketMS <= 0 || j.BucketMS*1000%t.widthUS != 0 {
		return nil, fmt.Errorf("timeline: bucket_ms %d is not a whole number of seconds", j.BucketMS)
	}
	start, err := time.Parse(time.RFC3339Nano, j.Start)
	if err != nil {
		return nil, fmt.Errorf("timeline: start: %w", err)
	}
	n := len(j.Calls)
	if len(j.Errors) != n || (len(j.Bins) != n && n > 0) {
		if len(j.Bins) == 0 {
			return nil, ErrNoBins
		}
		return nil, fmt.Errorf("timeline: %d calls, %d errors and %d bins: the arrays must be as long", n, len(j.Errors), len(j.Bins))
	}
	t.widthUS = j.BucketMS * 1000
	startUS := start.UnixMicro()
	if startUS%t.widthUS != 0 {
		return nil, fmt.Errorf("timeline: start %s is not on a bucket boundary", j.Start)
	}
	first := startUS / t.widthUS
	for k := range n {
		bins := j.Bins[k]
		if j.Calls[k] == 0 && j.Errors[k] == 0 && len(bins) == 0 {
			continue
		}
		b := t.bucket(first + int64(k))
		b.calls, b.errors = j.Calls[k], j.Errors[k]
		if len(bins) == 0 {
			continue
		}
		if len(bins)%2 != 0 {
			return nil, fmt.Errorf("timeline: bucket %d: bins must be (index, count) pairs", k)
		}
		for i := 0; i < len(bins); i += 2 {
			bin, v := bins[i], bins[i+1]
			if bin < 0 || bin >= numBins || v <= 0 {
				return nil, fmt.Errorf("timeline: bucket %d: bin %d with count %d is out of range", k, bin, v)
			}
			b.add(uint16(bin), v)
			b.timed += v
		}
	}
	for len(t.buckets) > MaxBuckets {
		t.widen(t.widthUS * 2)
	}
	return t, nil
}

// BinLowUS is the lowest duration, in µs, of the latency bin of index i
// as JSON.Bins writes it: what a reader of the JSON knows of the longest
// statement of a bucket.
func BinLowUS(i int64) float64 {
	if i < 0 || i >= numBins {
		return 0
	}
	return binLow(uint16(i))
}
