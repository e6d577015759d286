package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// Of returns the shard, from 0 to n-1, of the session whose log session
// id is sessionID, when sessions are split by hash rather than by a plan.
// It is the 64-bit FNV-1a hash of the id's bytes, modulo n: stable across
// processes, machines and versions (a change would split one replay
// differently in two shards), and cheap enough to run for every event a
// shard reads. n < 1 counts as 1. Events without a session (id "") go to
// shard 0.
//
// Every part of pgrehearse that splits sessions by hash calls Of; nothing
// else may compute a shard.
func Of(sessionID string, n int) int {
	if n <= 1 || sessionID == "" {
		return 0
	}
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(sessionID); i++ {
		h ^= uint64(sessionID[i])
		h *= prime64
	}
	return int(h % uint64(n))
}

// Spec is shard K of N, K counted from 0 as Kubernetes counts the
// completion index of an Indexed Job.
type Spec struct {
	K, N int
}

// IndexEnv is the variable in which Kubernetes gives each pod of an
// Indexed Job its completion index: the K of a shard started without one.
const IndexEnv = "JOB_COMPLETION_INDEX"

// String is "K/N".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Valid reports whether 0 <= K < N.
func (s Spec) Valid() error {
	if s.N < 1 {
		return fmt.Errorf("shard count %d: it must be at least 1", s.N)
	}
	if s.K < 0 || s.K >= s.N {
		return fmt.Errorf("shard %d of %d: shards are numbered from 0 to %d", s.K, s.N, s.N-1)
	}
	return nil
}

// ParseSpec reads "K/N".
func ParseSpec(text string) (Spec, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(text), "/")
	if !ok {
		return Spec{}, fmt.Errorf("shard %q: write it K/N, such as 0/3 (shards are numbered from 0)", text)
	}
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("shard %q: write it K/N with whole numbers, such as 0/3", text)
	}
	s := Spec{K: ki, N: ni}
	return s, s.Valid()
}

// SpecFromIndex is shard index of n, index read from IndexEnv's value.
func SpecFromIndex(index string, n int) (Spec, error) {
	if index == "" {
		return Spec{}, fmt.Errorf("no shard index: %s is not set (Kubernetes sets it in the pods of an Indexed Job)", IndexEnv)
	}
	k, err := strconv.Atoi(strings.TrimSpace(index))
	if err != nil {
		return Spec{}, fmt.Errorf("%s=%q is not a number", IndexEnv, index)
	}
	s := Spec{K: k, N: n}
	return s, s.Valid()
}
