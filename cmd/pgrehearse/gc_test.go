package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestLimitFor(t *testing.T) {
	for _, tc := range []struct {
		m    memory
		want int64
	}{
		{memory{live: 3 << 20, nonHeap: 5 << 20}, memFloor},
		{memory{live: 30 << 20, nonHeap: 4 << 20}, memFloor},
		{memory{live: 300 << 20, nonHeap: 80 << 20}, 680 << 20},
		{memory{live: 10 << 20, nonHeap: 90 << 20}, 110 << 20},
	} {
		if got := limitFor(tc.m); got != tc.want {
			t.Errorf("limitFor(%+v) = %d MiB, want %d MiB", tc.m, got>>20, tc.want>>20)
		}
	}
}

// TestLimitFollowsLiveHeap: with 256 MiB live, the limit moves above it
// after a collection, so a large live heap is never collected without end;
// once it is freed the limit comes back down to the floor.
func TestLimitFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memFloor))
	armLimitFollower()

	live := make([]byte, 256<<20)
	for i := range live {
		live[i] = byte(i)
	}
	if !waitLimit(func(l int64) bool { return l >= 512<<20 }) {
		t.Fatalf("limit %d MiB with 256 MiB live, want at least 512 MiB", debug.SetMemoryLimit(-1)>>20)
	}
	runtime.KeepAlive(live)
	live = nil
	if !waitLimit(func(l int64) bool { return l < 128<<20 }) {
		t.Fatalf("limit %d MiB once the 256 MiB were freed, want it back near the floor", debug.SetMemoryLimit(-1)>>20)
	}
}

// waitLimit collects until ok holds for the memory limit, which the
// finalizer of a collection moves, or gives up after many collections.
func waitLimit(ok func(int64) bool) bool {
	for range 200 {
		runtime.GC()
		runtime.Gosched()
		if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 && ok(l) {
			return true
		}
	}
	return false
}
