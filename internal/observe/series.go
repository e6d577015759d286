package observe

import (
	"slices"
	"time"
)

// maxBuckets bounds the buckets of the over-time series: they start one
// second wide and double in width past it, as timeline's do, so an
// observation of any length stays small.
const maxBuckets = 720

type waitKey struct{ typ, event string }

// bucket is what happened in one time bucket. Everything is a sum, so
// buckets merge by adding (maxConns by max).
type bucket struct {
	rounds                int64 // pg_stat_activity samples
	conns, active, idleTx int64 // summed over rounds
	maxConns              int64
	waits                 map[waitKey]int64
	queries               map[string]int64 // query ref → active samples
	xacts, rollbacks      int64
	xactMS                int64 // time covered by the pg_stat_database deltas
}

func (b *bucket) merge(o *bucket) {
	b.rounds += o.rounds
	b.conns += o.conns
	b.active += o.active
	b.idleTx += o.idleTx
	b.maxConns = max(b.maxConns, o.maxConns)
	for k, v := range o.waits {
		b.waits[k] += v
	}
	for k, v := range o.queries {
		b.queries[k] += v
	}
	b.xacts += o.xacts
	b.rollbacks += o.rollbacks
	b.xactMS += o.xactMS
}

type series struct {
	widthMS int64
	buckets map[int64]*bucket
}

func newSeries() *series { return &series{widthMS: 1000, buckets: map[int64]*bucket{}} }

func (s *series) at(t time.Time) *bucket {
	i := t.UnixMilli() / s.widthMS
	b := s.buckets[i]
	if b == nil {
		for len(s.buckets) >= maxBuckets {
			s.widen()
			i = t.UnixMilli() / s.widthMS
		}
		if b = s.buckets[i]; b == nil {
			b = &bucket{waits: map[waitKey]int64{}, queries: map[string]int64{}}
			s.buckets[i] = b
		}
	}
	return b
}

func (s *series) widen() {
	old := s.buckets
	s.widthMS *= 2
	s.buckets = make(map[int64]*bucket, len(old)/2+1)
	for i, b := range old {
		j := i / 2
		if n := s.buckets[j]; n != nil {
			n.merge(b)
		} else {
			s.buckets[j] = b
		}
	}
}

// span returns the first bucket index and the count of buckets from the
// first to the last, or 0 when empty.
func (s *series) span() (first int64, n int) {
	if len(s.buckets) == 0 {
		return 0, 0
	}
	idx := make([]int64, 0, len(s.buckets))
	for i := range s.buckets {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx[0], int(idx[len(idx)-1]-idx[0]) + 1
}
