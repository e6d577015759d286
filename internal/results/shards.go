package results

import (
	"cmp"
	"slices"
)

// SyncScope is how far a shard's synchronization reached: across every
// shard of the replay, or within its own sessions only.
type SyncScope string

// Sync scopes, as Sync.Scope writes them. A replay that was not split
// has none.
const (
	// SyncAcrossShards: a statement also waited for the commits it
	// depended on that other shards replayed (through the coordination
	// database).
	SyncAcrossShards SyncScope = "across_shards"
	// SyncWithinShard: a statement waited only for its own shard's
	// commits; those of other shards' sessions were not waited for, so
	// a statement may have run before what it depended on.
	SyncWithinShard SyncScope = "within_shard"
)

// SyncGiveUp is why a sync wait ended without its commit having run,
// besides the replay's own timeouts and deadlocks.
type SyncGiveUp string

// Give-up reasons that cross packages.
const (
	// SyncGiveUpShardLost: the awaited commit was another shard's, and
	// that shard was lost (it failed or was killed): its commits were
	// released without having run. Counted in Sync.ShardLost.
	SyncGiveUpShardLost SyncGiveUp = "shard_lost"
)

// ShardRun is what one shard of a replay split by session did, kept
// apart in the result of its merge: which shard's machine was short of
// CPU, behind its schedule, or off the others' clock.
type ShardRun struct {
	Shard int    `json:"shard"`
	Host  string `json:"host,omitempty"`
	// Statements counts the shard's statements (Statements.Total).
	Statements int64 `json:"statements"`
	// WallSeconds and CPUSeconds are the shard's replay's; Cores the
	// CPUs its machine had.
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds,omitempty"`
	Cores       int     `json:"cores,omitempty"`
	// MaxRSSBytes is the most memory the shard's process held.
	MaxRSSBytes int64 `json:"max_rss_bytes,omitempty"`
	// LagP99MS is the shard's schedule lag p99, nil at speed 0;
	// LagSources splits its lateness by side.
	LagP99MS   *float64    `json:"lag_p99_ms,omitempty"`
	LagSources *LagSources `json:"lag_sources,omitempty"`
	// ReplayerBound: the shard fell behind its schedule (lag p99 above
	// the warning's bound) mostly with its sessions free on the target,
	// while its CPU was saturated (ReplayerBoundCPU of its cores): its
	// replayer, not the target, was the bottleneck.
	ReplayerBound bool `json:"replayer_bound"`
	// Clock is the shard's clock against the coordination server; nil
	// without one.
	Clock *ShardClock `json:"clock,omitempty"`
	// Incomplete lists why the shard's own result is incomplete.
	Incomplete []IncompleteReason `json:"incomplete,omitempty"`
	// LostShards lists the other shards this one saw lost.
	LostShards []int `json:"lost_shards,omitempty"`
}

// ShardClock is a shard's clock offset against the coordination server
// (the server's time minus the shard's, measured on the sample of least
// round trip and corrected by half of it), known to within RTTMS/2.
type ShardClock struct {
	OffsetMS float64 `json:"offset_ms"`
	RTTMS    float64 `json:"rtt_ms"`
}

// ReplayerBoundCPU is the share of its cores a shard's replayer must
// have used, while it fell behind, to be named the bottleneck.
const ReplayerBoundCPU = 0.8

// IsReplayerBound reports whether a shard's replayer was its bottleneck:
// lag p99 above maxLagMS, more of its lateness with the sessions free on
// the target than waiting on it, and its CPU at ReplayerBoundCPU of its
// cores or more.
func (s *ShardRun) IsReplayerBound(maxLagMS float64) bool {
	if s.LagP99MS == nil || maxLagMS <= 0 || *s.LagP99MS <= maxLagMS || s.LagSources == nil ||
		s.LagSources.ReplayerMS <= s.LagSources.TargetMS || s.WallSeconds <= 0 || s.Cores <= 0 {
		return false
	}
	return s.CPUSeconds/s.WallSeconds >= ReplayerBoundCPU*float64(s.Cores)
}

// ClockSpreadMS is the spread of the shards' clock offsets (the largest
// less the smallest), and how uncertain it is (the largest half round
// trip); ok false when fewer than two shards measured theirs.
func (r *Replay) ClockSpreadMS() (spread, within float64, ok bool) {
	n := 0
	var lo, hi float64
	for _, s := range r.Shards {
		if s.Clock == nil {
			continue
		}
		if n == 0 || s.Clock.OffsetMS < lo {
			lo = s.Clock.OffsetMS
		}
		if n == 0 || s.Clock.OffsetMS > hi {
			hi = s.Clock.OffsetMS
		}
		within = max(within, s.Clock.RTTMS/2)
		n++
	}
	return hi - lo, within, n >= 2
}

// mergeShardRuns lists both parts' shards, in shard order.
func mergeShardRuns(x, y []ShardRun) []ShardRun {
	if x == nil && y == nil {
		return nil
	}
	out := slices.Concat(x, y)
	slices.SortStableFunc(out, func(a, b ShardRun) int { return cmp.Compare(a.Shard, b.Shard) })
	return out
}

// ShardFailure is a shard of a merge that did not replay its whole part.
type ShardFailure struct {
	Shard int
	// Missing: no result of it was merged; LostBy lists the shards that
	// saw it lost during the run (it failed or was killed).
	Missing bool
	LostBy  []int
	// Incomplete are the reasons its own result gave.
	Incomplete []IncompleteReason
}

// ShardFailures lists the shards of r's split input that are missing
// from r or failed, in shard order; nil for a whole input or one whose
// every shard finished.
func (r *Result) ShardFailures() []ShardFailure {
	p := r.Part
	if !p.Sharded() {
		return nil
	}
	lostBy := map[int][]int{}
	if r.Replay != nil {
		for _, s := range r.Shards {
			for _, k := range s.LostShards {
				lostBy[k] = append(lostBy[k], s.Shard)
			}
		}
	}
	var out []ShardFailure
	for k := range p.Of {
		f := ShardFailure{Shard: k, Missing: !slices.Contains(p.Shards, k), LostBy: lostBy[k]}
		if r.Replay != nil {
			for _, s := range r.Shards {
				if s.Shard == k {
					f.Incomplete = s.Incomplete
				}
			}
		}
		if f.Missing || len(f.LostBy) > 0 || len(f.Incomplete) > 0 {
			out = append(out, f)
		}
	}
	return out
}
