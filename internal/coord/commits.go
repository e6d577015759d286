package coord

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Releaser is a commit that a waiter may wait for: Done releases it.
// syncdep's Txn is one.
type Releaser interface{ Done() }

// ReasonShardLost is the give-up reason of a wait for a commit of a shard
// that was lost: its waiters were released without it.
const ReasonShardLost = results.SyncGiveUpShardLost

// ownState is what this shard has committed: its commits read but not
// yet run, and the ones that ran since the last publication.
type ownState struct {
	pending []ownEntry // in position order, from head
	head    int
	fresh   []int64        // positions that ran since the last publication
	early   map[int64]bool // Ran before Advance registered them
	read    atomic.Int64
	last    int64 // the low last published
}

type ownEntry struct {
	pos int64
	ran bool
}

// low is the position before which every commit of this shard has run:
// its oldest commit not run yet, else the one after the last event read.
// Called under m.mu.
func (o *ownState) low() int64 {
	for o.head < len(o.pending) && o.pending[o.head].ran {
		o.head++
	}
	if o.head == len(o.pending) {
		o.pending, o.head = o.pending[:0], 0
		return o.read.Load() + 1
	}
	if o.head >= 1024 && 2*o.head >= len(o.pending) {
		n := copy(o.pending, o.pending[o.head:])
		o.pending, o.head = o.pending[:n], 0
	}
	return o.pending[o.head].pos
}

// Advance tells the Member that the replay's reader has read the event at
// position pos (its ordinal in the log, the same in every shard), and
// whether it is a commit of this shard's sessions, which Ran will report.
// Positions only grow. It is for the reader's goroutine alone.
//
// Advance should come before the event is handed to its session; a Ran
// that comes first anyway is kept until Advance registers its commit.
func (m *Member) Advance(pos int64, ownCommit bool) {
	if ownCommit {
		m.mu.Lock()
		o := &m.own
		e := ownEntry{pos: pos}
		if o.early[pos] {
			delete(o.early, pos)
			e.ran = true
			o.fresh = append(o.fresh, pos)
		}
		o.pending = append(o.pending, e)
		m.mu.Unlock()
	}
	m.own.read.Store(pos)
}

// Ran tells the Member that this shard's commit at pos has run on the
// target (whatever its outcome: a commit that failed will not come
// later either).
func (m *Member) Ran(pos int64) {
	m.mu.Lock()
	live := m.own.pending[m.own.head:]
	if i, ok := slices.BinarySearchFunc(live, pos, func(e ownEntry, p int64) int { return cmpInt(e.pos, p) }); ok {
		live[i].ran = true
		m.own.fresh = append(m.own.fresh, pos)
	} else if n := len(m.own.pending); n == 0 || pos > m.own.pending[n-1].pos {
		// Not registered yet: Advance will find it.
		if m.own.early == nil {
			m.own.early = map[int64]bool{}
		}
		m.own.early[pos] = true
	}
	m.mu.Unlock()
	select {
	case m.dirty <- struct{}{}:
	default:
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// progress returns what to publish: the low watermark and the commits
// that ran since at or after it.
func (m *Member) progress() (low int64, done []int64, changed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := &m.own
	low = o.low()
	for _, p := range o.fresh {
		if p >= low {
			done = append(done, p)
		}
	}
	o.fresh = o.fresh[:0]
	changed = low != o.last || len(done) > 0
	o.last = low
	slices.Sort(done)
	return low, done, changed
}

// remote is what this shard knows of another.
type remote struct {
	low      int64
	pending  []foreignEntry // in position order, from head
	head     int
	early    map[int64]struct{} // ran, at or after low, not registered here yet
	lost     bool
	peer     *Peer
	released int64
	// progress counts the shard's published moves: its low watermark
	// rose, or a commit position above it was newly said to have run.
	// Heartbeats do not count: a shard whose replay is frozen still
	// beats. Read by Peer.SyncProgress without m.mu.
	progress atomic.Uint64
}

type foreignEntry struct {
	pos int64
	r   Releaser
}

// maxEarly bounds a remote's early positions; past it they are dropped,
// and their commits wait for the low watermark instead.
const maxEarly = 1 << 20

// Foreign registers a commit of shard k's sessions read at position pos:
// r is released once shard k says that commit ran, or at once if it
// already did, or when shard k is lost. It blocks while MaxPending
// commits are held, and returns false if the Member finished meanwhile.
// It is for the reader's goroutine.
func (m *Member) Foreign(k int, pos int64, r Releaser) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.pending >= m.cfg.MaxPending && !m.finished.Load() {
		m.stats.fullWaits.Add(1)
		m.room.Wait()
	}
	if k < 0 || k >= len(m.remotes) || m.remotes[k] == nil {
		panic(fmt.Sprintf("coord: commit of shard %d registered as another shard's in shard %d of %d", k, m.cfg.Shard, m.cfg.Shards))
	}
	rm := m.remotes[k]
	switch {
	case m.finished.Load():
		r.Done()
		return false
	case rm.lost:
		m.stats.releasedLost.Add(1)
		r.Done()
	case pos < rm.low:
		m.stats.released.Add(1)
		r.Done()
	default:
		if _, ok := rm.early[pos]; ok {
			delete(rm.early, pos)
			m.stats.released.Add(1)
			r.Done()
			return true
		}
		rm.pending = append(rm.pending, foreignEntry{pos: pos, r: r})
		m.pending++
		if m.pending > int(m.stats.maxPending.Load()) {
			m.stats.maxPending.Store(int64(m.pending))
		}
	}
	return true
}

// apply takes shard k's progress: every commit before low ran, and so
// did those at done.
func (m *Member) apply(k int, low int64, done []int64) {
	if k < 0 || k >= len(m.remotes) || m.remotes[k] == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rm := m.remotes[k]
	if rm.lost {
		return
	}
	freed, moved := 0, false
	if low > rm.low {
		rm.low, moved = low, true
		for rm.head < len(rm.pending) && rm.pending[rm.head].pos < low {
			if e := &rm.pending[rm.head]; e.r != nil {
				e.r.Done()
				e.r = nil
				freed++
			}
			rm.head++
		}
		if len(rm.early) > 0 {
			for p := range rm.early {
				if p < low {
					delete(rm.early, p)
				}
			}
		}
	}
	for _, p := range done {
		if p < rm.low {
			continue
		}
		live := rm.pending[rm.head:]
		i, ok := slices.BinarySearchFunc(live, p, func(e foreignEntry, p int64) int { return cmpInt(e.pos, p) })
		if ok {
			if e := &live[i]; e.r != nil {
				e.r.Done()
				e.r = nil
				freed++
				moved = true
			}
			continue
		}
		if rm.early == nil {
			rm.early = map[int64]struct{}{}
		}
		if _, known := rm.early[p]; !known && len(rm.early) < maxEarly {
			rm.early[p] = struct{}{}
			moved = true
		}
	}
	if moved {
		rm.progress.Add(1)
	}
	rm.compact()
	m.released(freed)
}

// compact drops released entries from the front and, now and then, the
// released ones in the middle.
func (rm *remote) compact() {
	for rm.head < len(rm.pending) && rm.pending[rm.head].r == nil {
		rm.head++
	}
	if rm.head == len(rm.pending) {
		rm.pending, rm.head = rm.pending[:0], 0
		if cap(rm.pending) > 1<<16 {
			rm.pending = nil
		}
		return
	}
	if rm.head >= 1024 && 2*rm.head >= len(rm.pending) {
		kept := rm.pending[:0]
		for _, e := range rm.pending[rm.head:] {
			if e.r != nil {
				kept = append(kept, e)
			}
		}
		clear(rm.pending[len(kept):])
		rm.pending, rm.head = kept, 0
	}
}

// released counts n commits released by progress, under m.mu.
func (m *Member) released(n int) {
	if n == 0 {
		return
	}
	m.pending -= n
	m.stats.released.Add(int64(n))
	m.room.Broadcast()
}

// lose releases every commit of shard k that is held, and every one
// registered later: k is gone and they will not run.
func (m *Member) lose(k int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rm := m.remotes[k]
	if rm == nil || rm.lost {
		return
	}
	rm.lost = true
	n := 0
	for _, e := range rm.pending[rm.head:] {
		if e.r != nil {
			e.r.Done()
			n++
		}
	}
	rm.pending, rm.head, rm.early = nil, 0, nil
	m.pending -= n
	m.stats.releasedLost.Add(int64(n))
	m.room.Broadcast()
}

// Peer stands for another shard in the replay: the owner of its
// sessions' commits. A wait that ended because its commit was released
// asks it why; a wait still going on asks it whether the shard made
// progress (SyncProgress).
type Peer struct {
	m        *Member
	k        int
	progress *atomic.Uint64
}

// Peer returns the Peer of shard k (not this one).
func (m *Member) Peer(k int) *Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	rm := m.remotes[k]
	if rm == nil {
		return nil
	}
	if rm.peer == nil {
		rm.peer = &Peer{m: m, k: k, progress: &rm.progress}
	}
	return rm.peer
}

// Shard is the peer's shard number.
func (p *Peer) Shard() int { return p.k }

// SyncGiveUp returns ReasonShardLost once the peer is lost (its commits
// are released without having run), "" while it is not.
func (p *Peer) SyncGiveUp() results.SyncGiveUp {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.m.remotes[p.k].lost {
		return ReasonShardLost
	}
	return ""
}

// SyncProgress counts the moves the peer's shard published (its low
// watermark rose, or a commit of it above the watermark ran), as they
// reached this shard: a wait for one of its commits is not given up
// while the count moves (the replay's SyncProgressor). Any goroutine.
func (p *Peer) SyncProgress() uint64 { return p.progress.Load() }

// noLow is the low watermark of a shard that is done: every commit of it
// ran, or never will.
const noLow = math.MaxInt64
