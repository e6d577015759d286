package proxy

import (
	"math"
	"sync/atomic"
	"time"
)

// RelayBuckets are the upper bounds of the buckets RelayTimes counts the
// time the proxy adds to a relayed chunk in, from 10µs (a chunk framed
// and forwarded at once) to 100ms (a recorder or a peer holding the relay
// up); a chunk over the last bound is counted in Over.
var RelayBuckets = [...]time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond,
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond,
}

// RelayTimes is a histogram of the time the proxy added to the chunks it
// relayed in one direction: from the return of the read that brought a
// chunk to the end of the write that forwarded it, its framing and
// recording included. A chunk is what one read returned; one that
// completed no message is forwarded with the next and not counted on its
// own, nor are the pieces of a message larger than the relay's buffer,
// which stream through.
type RelayTimes struct {
	// Buckets[i] counts the chunks that took more than RelayBuckets[i-1]
	// and at most RelayBuckets[i] (not cumulative); Over those that took
	// longer than the last bound.
	Buckets [len(RelayBuckets)]int64
	Over    int64
	// Sum is the time added to all the chunks counted.
	Sum time.Duration
}

// Count is how many chunks t counts.
func (t RelayTimes) Count() int64 {
	n := t.Over
	for _, b := range t.Buckets {
		n += b
	}
	return n
}

// Quantile is the bound of the bucket the q-quantile (0 < q <= 1) of the
// time added falls in: the chunks' q-quantile took at most that long.
// ok is false when t counts no chunk or the quantile is over the last
// bound (then the bound says only that it took longer than RelayBuckets'
// last).
func (t RelayTimes) Quantile(q float64) (bound time.Duration, ok bool) {
	n := t.Count()
	if n == 0 {
		return 0, false
	}
	rank := max(int64(math.Ceil(q*float64(n))), 1) // nearest rank
	seen := int64(0)
	for i, b := range t.Buckets {
		if seen += b; seen >= rank {
			return RelayBuckets[i], true
		}
	}
	return RelayBuckets[len(RelayBuckets)-1], false
}

// relayHist is RelayTimes as the relay fills it: an atomic add per chunk
// into a fixed bucket, no lock, no allocation, since it runs once per
// read on the relay's hot path.
type relayHist struct {
	buckets [len(RelayBuckets) + 1]atomic.Int64
	sum     atomic.Int64
}

// observe counts one chunk that took d.
func (h *relayHist) observe(d time.Duration) {
	i := 0
	for i < len(RelayBuckets) && d > RelayBuckets[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(int64(d))
}

// load reads h. The buckets and the sum are read one by one, while
// chunks may be counted: the count is the buckets' sum, so it always
// agrees with them; the sum may be a chunk ahead or behind.
func (h *relayHist) load() RelayTimes {
	var t RelayTimes
	for i := range t.Buckets {
		t.Buckets[i] = h.buckets[i].Load()
	}
	t.Over = h.buckets[len(RelayBuckets)].Load()
	t.Sum = time.Duration(h.sum.Load())
	return t
}
