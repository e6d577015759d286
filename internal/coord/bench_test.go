package coord

import (
	"slices"
	"sync"
	"testing"
	"time"
)

type chanReleaser chan struct{}

func (c chanReleaser) Done() { close(c) }

// BenchmarkCrossShardRelease measures the latency a cross-shard commit
// adds to its waiter: from the owner shard's Ran to the waiting shard's
// release, through the coordination database. Sequential: one commit in
// flight (the latency alone); burst: 64 at once (with batching).
func BenchmarkCrossShardRelease(b *testing.B) {
	for _, c := range []struct {
		name   string
		burst  int
		listen bool
	}{{"sequential", 1, true}, {"burst64", 64, true}, {"sequential-poll-only", 1, false}} {
		b.Run(c.name, func(b *testing.B) {
			ms := benchGroup(b, c.listen)
			a, w := ms[0], ms[1]
			var lat []time.Duration
			pos := int64(0)
			b.ResetTimer()
			for i := 0; i < b.N; i += c.burst {
				rs := make([]chanReleaser, c.burst)
				ps := make([]int64, c.burst)
				for j := range rs {
					pos += 2
					a.Advance(pos-1, false)
					a.Advance(pos, true)
					rs[j], ps[j] = make(chanReleaser), pos
					w.Foreign(0, pos, rs[j])
				}
				began := time.Now()
				for _, p := range ps {
					a.Ran(p)
				}
				for _, r := range rs {
					<-r
					lat = append(lat, time.Since(began))
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(a.Stats().PublishedBytes)/float64(len(lat)), "notify-bytes/commit")
		})
	}
}

func benchGroup(b *testing.B, listen bool) []*Member {
	run := newRun(b)
	ms := make([]*Member, 2)
	for k := range ms {
		ms[k] = join(b, Config{DSN: dsn(b), Run: run, Shard: k, Shards: 2, Lead: 10 * time.Millisecond,
			NoListen: !listen, Poll: 20 * time.Millisecond})
	}
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			if _, err := m.Barrier(b.Context(), time.Minute); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return ms
}
