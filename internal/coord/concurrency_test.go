package coord

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestThreeShardsConcurrently: three shards read the same log of 6,000
// events, a third of them commits, each owned by the shard of its
// position. Each shard registers the others' commits as it reads, while
// four goroutines per shard run its own commits in random order. Every
// commit must be released in every other shard, none before it ran.
func TestThreeShardsConcurrently(t *testing.T) {
	const n, events = 3, 6000
	ms := group(t, n, func(c *Config) { c.Poll = 50 * time.Millisecond; c.MaxPending = 500 })
	var ran sync.Map
	var bad atomic.Int64
	owner := func(pos int64) int { return int(pos/3) % n }
	isCommit := func(pos int64) bool { return pos%3 == 0 }
	type reg struct{ rs []*releaser }
	regs := make([]reg, n)
	var readers, runners sync.WaitGroup
	for k, m := range ms {
		own := make(chan int64, events)
		readers.Go(func() {
			defer close(own)
			for pos := int64(1); pos <= events; pos++ {
				commit := isCommit(pos)
				if commit && owner(pos) != k {
					r := newReleaser(pos, &ran, &bad)
					regs[k].rs = append(regs[k].rs, r)
					if !m.Foreign(owner(pos), pos, r) {
						t.Errorf("shard %d: Foreign refused", k)
						return
					}
				}
				m.Advance(pos, commit && owner(pos) == k)
				if commit && owner(pos) == k {
					own <- pos
				}
			}
		})
		for range 4 {
			runners.Go(func() {
				for pos := range own {
					if rand.IntN(8) == 0 {
						time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
					}
					ran.Store(pos, true)
					m.Ran(pos)
				}
			})
		}
	}
	readers.Wait()
	runners.Wait()
	deadline := time.After(60 * time.Second)
	for k := range ms {
		for _, r := range regs[k].rs {
			select {
			case <-r.done:
			case <-deadline:
				t.Fatalf("shard %d: commit at %d of shard %d never released (%+v)", k, r.pos, owner(r.pos), ms[k].Stats())
			}
		}
	}
	if bad.Load() != 0 {
		t.Errorf("%d commits released before they ran", bad.Load())
	}
	for k, m := range ms {
		// The count follows the releases it counts.
		pollUntil(5*time.Second, func() bool { return m.Stats().Released >= int64(len(regs[k].rs)) })
		st := m.Stats()
		if st.Released != int64(len(regs[k].rs)) || st.MaxPending > 500 || len(st.Lost) != 0 {
			t.Errorf("shard %d: %+v: want %d released, at most 500 held, none lost", k, st, len(regs[k].rs))
		}
	}
}
