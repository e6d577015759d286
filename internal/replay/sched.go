package replay

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedLatency reads the Go runtime's histogram of the time goroutines
// waited to run after they were ready: the replayer's own scheduling
// delay (CPU starved, or too many goroutines for its threads).
func schedLatency() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// schedP99 is the 99th percentile of the scheduling delays between two
// reads of schedLatency, 0 when unknown or none.
func schedP99(before, after *metrics.Float64Histogram) time.Duration {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return 0
	}
	var total uint64
	delta := make([]uint64, len(after.Counts))
	for i := range after.Counts {
		delta[i] = after.Counts[i] - before.Counts[i]
		total += delta[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(0.99 * float64(total)))
	var n uint64
	for i, c := range delta {
		n += c
		if n >= want {
			// The bucket's upper bound (Buckets has one more entry).
			hi := after.Buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = after.Buckets[i]
			}
			return time.Duration(hi * float64(time.Second))
		}
	}
	return 0
}
