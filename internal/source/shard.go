package source

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard selects the sessions of one shard of a workload split by session
// across several replayers (or analyses): shard K of Of, 0 <= K < Of.
// Every session is in exactly one shard, whichever process asks, so that
// the shards' results merge into the whole's.
type Shard struct {
	K, Of int
	// Assign, when set, places sessions (a shard plan balanced by their
	// work); a session it does not place (ok false) is placed by the
	// stable hash.
	Assign func(session string) (shard int, ok bool)
	// Plan names the plan Assign follows, for the result's part.
	Plan string
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
	return ShardOf(session, s.Of) == s.K
}

// ShardOf is the shard, of n, of a session by the stable hash of its id:
// 64-bit FNV-1a, the same in every process and on every machine. Events
// without a session (id "") go to shard 0.
func ShardOf(session string, n int) int {
	if n <= 1 || session == "" {
		return 0
	}
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(session); i++ {
		h ^= uint64(session[i])
		h *= prime
	}
	return int(h % uint64(n))
}

// ParseShard reads "K/N" (0 <= K < N).
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q is not K/N", s)
	}
	var sh Shard
	var err error
	if sh.K, err = strconv.Atoi(strings.TrimSpace(k)); err != nil {
		return Shard{}, fmt.Errorf("shard %q: K is not a number", s)
	}
	if sh.Of, err = strconv.Atoi(strings.TrimSpace(n)); err != nil {
		return Shard{}, fmt.Errorf("shard %q: N is not a number", s)
	}
	if sh.Of < 1 || sh.K < 0 || sh.K >= sh.Of {
		return Shard{}, fmt.Errorf("shard %q: want 0 <= K < N", s)
	}
	return sh, nil
}
