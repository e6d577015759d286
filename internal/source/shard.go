package source

import (
	"sync/atomic"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/shard"
)

// Shard selects the sessions of one shard of a workload split by session
// across several replayers (or analyses): shard K of Of, 0 <= K < Of.
// Every session is in exactly one shard, whichever process asks, so that
// the shards' results merge into the whole's.
type Shard struct {
	K, Of int
	// Assign, when set, places sessions (a shard plan's Assign, balanced
	// by their work); a session it does not place (ok false) is placed by
	// the stable hash, shard.Of.
	Assign func(session string) (shard int, ok bool)
	// Plan names the plan Assign follows, for the result's part.
	Plan string
	// Foreign, when not nil, is shown every event of the other shards'
	// sessions, in input order, with its position (as event.Event.Pos
	// numbers the shard's own), before it is left out: a synchronized
	// replay follows the other shards' commits through it (package
	// coord). It must not keep ev, which is recycled.
	Foreign func(ev *event.Event, pos int64)
	// First, when not nil, is set to the time of the first event read
	// that has one, whichever shard's: the same in every shard, the
	// origin of a schedule they share.
	First *atomic.Int64
}

// PlanShard selects shard k of plan p.
func PlanShard(p *shard.Plan, k int) Shard {
	return Shard{K: k, Of: p.Shards, Assign: p.Assign, Plan: p.ID}
}

// Splits reports whether the shard is a part: Of > 1.
func (s Shard) Splits() bool { return s.Of > 1 }

// ShardOf returns the shard a session belongs to.
func (s Shard) ShardOf(session string) int {
	if !s.Splits() {
		return 0
	}
	if s.Assign != nil {
		if k, ok := s.Assign(session); ok {
			return k
		}
	}
	return shard.Of(session, s.Of)
}

// Has reports whether session belongs to the shard. Events without a
// session belong to shard 0 only.
func (s Shard) Has(session string) bool {
	if !s.Splits() {
		return true
	}
	if s.Assign != nil {
		if k, ok := s.Assign(session); ok {
			return k == s.K
		}
	}
	return shard.Of(session, s.Of) == s.K
}
