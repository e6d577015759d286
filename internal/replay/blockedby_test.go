package replay

import (
	"maps"
	"slices"
	"testing"
)

// TestBlockedBy: the backends waiting on a backend's locks, through
// chains of any length, and none that wait on another backend.
func TestBlockedBy(t *testing.T) {
	// 2 waits on 1, 3 on 2, 4 on 3 and 9, 8 on 9 only.
	edges := map[uint32][]uint32{2: {1}, 3: {2}, 4: {9, 3}, 8: {9}}
	got := slices.Sorted(maps.Keys(blockedBy(1, edges)))
	if want := []uint32{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("blockedBy(1) = %v, want %v", got, want)
	}
	if got := blockedBy(8, edges); len(got) != 1 || !got[8] {
		t.Errorf("blockedBy(8) = %v, want only 8", got)
	}
}
