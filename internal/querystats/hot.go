package querystats

import (
	"math"
	"math/bits"
)

// Recording a duration in a sparse HDR histogram is a binary search among
// its populated buckets, and then often an insertion: a good part of the
// cost of a call when a log is analyzed. A fingerprint called often gets
// dense counts, indexed like the histogram's buckets, for its durations
// under hotMax µs; they are added to the histogram (fold) before anything
// reads it. The histogram ends up with the same count in every bucket as
// if each duration had been recorded in it.
const (
	// hotAfter is the number of timed calls after which a fingerprint
	// gets dense counts.
	hotAfter = 512
	// hotLen is the number of buckets counted densely, the first ones:
	// durations under hotMax µs.
	hotLen = 8192
	hotMax = 131072
	// maxHot bounds the fingerprints of a Set with dense counts, 16 KB
	// each.
	maxHot = 64
)

// The geometry of the histograms (histLowest 1, histDigits 3): buckets of
// 1,024 sub-buckets, of which the first covers 0-2047 µs one by one.
const (
	subBucketHalfMag = 10
	subBucketMask    = 1<<(subBucketHalfMag+1) - 1
)

// hdrIndex is the histogram's bucket index of v, 0 <= v < hotMax.
func hdrIndex(v int64) int {
	b := 64 - bits.LeadingZeros64(uint64(v)|subBucketMask) - (subBucketHalfMag + 1)
	return (b+1)<<subBucketHalfMag + int(v>>b) - 1<<subBucketHalfMag
}

// hdrValue is the lowest value of bucket index i.
func hdrValue(i int) int64 {
	b := max(i>>subBucketHalfMag-1, 0)
	return int64(i-(b+1)<<subBucketHalfMag+1<<subBucketHalfMag) << b
}

// recordHot counts d in the dense counts when it is in their range.
func (s *Stats) recordHot(d int64) bool {
	if d >= hotMax {
		return false
	}
	i := hdrIndex(d)
	s.hotN++
	if s.hot[i]++; s.hot[i] == math.MaxUint16 {
		_ = s.hist.RecordValues(hdrValue(i), math.MaxUint16)
		s.hot[i] = 0
		s.hotN -= math.MaxUint16
	}
	return true
}

// fold adds the dense counts to the histogram.
func (s *Stats) fold() {
	if s.hotN == 0 {
		return
	}
	for i, n := range s.hot {
		if n != 0 {
			_ = s.hist.RecordValues(hdrValue(i), int64(n))
			s.hot[i] = 0
		}
	}
	s.hotN = 0
}

// makeHot gives st dense counts if the Set has room for them.
func (s *Set) makeHot(st *Stats) {
	if len(s.hot) < maxHot {
		st.hot = make([]uint16, hotLen)
		s.hot = append(s.hot, st)
	}
}

// fold folds the dense counts of every Stats of s into their histograms:
// every method that hands out Stats or reads histograms calls it first.
func (s *Set) fold() {
	for _, st := range s.hot {
		st.fold()
	}
}
