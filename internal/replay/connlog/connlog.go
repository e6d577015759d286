// Package connlog describes the connections a replay opened and what it
// sent on each: enough to find each connection's statements in the
// target's own log afterwards (its session id %c is the backend's start
// time in seconds and its pid, in hex) and to check that the log has them
// all, in the order they were sent, without keeping them.
//
// The replay engine (package replay) writes it; package replay/targetlog
// reads it. It sits below both so that neither imports the other. It does
// no I/O.
package connlog

import "hash/maphash"

// Conn is one connection a replay opened.
type Conn struct {
	PID uint32
	// From and To are the unix seconds around the connection's start:
	// its backend's start time is one of them.
	From, To int64
	// Sent counts the execution events sent on it; Order hashes their
	// fingerprints in order (Chain).
	Sent  int64
	Order uint64
}

// orderSeed makes the order hashes of one process comparable.
var orderSeed = maphash.MakeSeed()

// Chain adds a fingerprint to an order hash: equal hashes mean equal
// sequences of fingerprints, with overwhelming probability. Hashes are
// comparable within one process only.
func Chain(h uint64, fp string) uint64 {
	return maphash.String(orderSeed, fp) ^ (h * 0x100000001b3)
}
