package source

import "github.com/pgrehearse/pgrehearse/internal/shard"

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
}

// PlanShard selects shard k of plan p.
func PlanShard(p *shard.Plan, k int) Shard {
	return Shard{K: k, Of: p.Shards, Assign: p.Assign, Plan: p.ID}
}

// Splits reports whether the shard is a part: Of > 1.
func (s Shard) Splits() bool { return s.Of > 1 }

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
