package coord

import (
	"sync/atomic"
	"time"
)

type statCounters struct {
	published, publishedBytes, received, polls atomic.Int64
	released, releasedLost, fullWaits          atomic.Int64
	maxPending                                 atomic.Int64
}

// Stats is what the coordination did, for a shard's result.
type Stats struct {
	Shard, Shards int
	// Clock is the shard's clock against the coordination server; Start
	// the start the barrier fixed, on this machine's clock.
	Clock Clock
	Start time.Time
	// Published counts the notifications sent and their bytes; Received
	// those read; Polls the reads of the shards' rows.
	Published, PublishedBytes, Received, Polls int64
	// Released counts other shards' commits released because they ran;
	// ReleasedLost those released because their shard was lost.
	Released, ReleasedLost int64
	// MaxPending is the most commits of other shards held at once;
	// FullWaits how often the reader waited because MaxPending were.
	MaxPending int64
	FullWaits  int64
	// Lost lists the shards lost during the run.
	Lost []int
	// Err is the last error of the coordination connection, if any.
	Err string
}

// Stats returns what the coordination did so far.
func (m *Member) Stats() Stats {
	s := &m.stats
	st := Stats{Shard: m.cfg.Shard, Shards: m.cfg.Shards, Clock: m.clock, Start: m.start,
		Published: s.published.Load(), PublishedBytes: s.publishedBytes.Load(), Received: s.received.Load(),
		Polls: s.polls.Load(), Released: s.released.Load(), ReleasedLost: s.releasedLost.Load(),
		MaxPending: s.maxPending.Load(), FullWaits: s.fullWaits.Load()}
	m.mu.Lock()
	for k, rm := range m.remotes {
		if rm != nil && rm.lost {
			st.Lost = append(st.Lost, k)
		}
	}
	m.mu.Unlock()
	m.errMu.Lock()
	if m.err != nil {
		st.Err = m.err.Error()
	}
	m.errMu.Unlock()
	return st
}
