package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Reading a log allocates fast (every event and the text it points into)
// while what stays live is small: a few read buffers and the per-query
// statistics. Collecting at 5× the live heap (GOGC=400) instead of 2×
// doubles the reading speed; a soft memory limit then keeps the peak
// small where a small live heap would let it grow past what the reading
// needs (100 MB RSS on a 1 GB log with GOGC=400 alone). The limit follows
// the live heap, so that a run that does hold much (a replay's 10,000
// sessions, an analysis of a million distinct queries) is never squeezed
// into collecting without end.
const (
	gcPercent = 400
	// memFloor is the lowest memory limit: enough for the reader's
	// buffers and an analysis's statistics many times over.
	memFloor = 64 << 20
)

// tuneGC sets the collector up for pgrehearse unless GOGC or GOMEMLIMIT
// say otherwise.
func tuneGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(memFloor)
	armLimitFollower()
}

// armLimitFollower moves the memory limit after the next collection, and
// again after each one: a finalizer runs once per cycle that frees its
// object.
func armLimitFollower() {
	runtime.SetFinalizer(new([16]byte), func(*[16]byte) {
		debug.SetMemoryLimit(limitFor(readMemory()))
		armLimitFollower()
	})
}

// memory is what the limit is computed from, in bytes.
type memory struct {
	live    uint64 // heap objects marked live by the last collection
	nonHeap uint64 // stacks, runtime metadata and other memory not in the heap
}

var memorySamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
}

func readMemory() memory {
	metrics.Read(memorySamples)
	v := func(i int) uint64 {
		if memorySamples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return memorySamples[i].Value.Uint64()
	}
	heap := v(2) + v(3) + v(4) + v(5)
	m := memory{live: v(0)}
	if total := v(1); total > heap {
		m.nonHeap = total - heap
	}
	return m
}

// limitFor is the memory limit for m: room for the live heap twice over
// (as GOGC=100 would give) besides what is not heap, never below memFloor.
func limitFor(m memory) int64 {
	return int64(max(memFloor, 2*m.live+m.nonHeap))
}
