package compare

import (
	"reflect"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// TestGaps: a stretch without a statement is a gap; it is a stall when a
// statement that started before it was still running, idle otherwise.
func TestGaps(t *testing.T) {
	const s = int64(1_000_000)
	t0 := int64(1_700_000_000) * s
	tl := timeline.New()
	for i := range int64(3) { // seconds 0-2: short statements
		tl.Add(t0+i*s, 1000, false)
	}
	// Seconds 3-4 idle; at 5 a statement that takes 4 s.
	tl.Add(t0+5*s, 4*s, false)
	// Seconds 6-8 nothing starts while it runs: a stall; at 9 traffic
	// again, then 10 idle, 11 traffic.
	tl.Add(t0+9*s, 1000, false)
	tl.Add(t0+11*s, 1000, false)
	got := gaps(tl.JSON())
	want := []Gap{{FromS: 3, ToS: 5}, {FromS: 6, ToS: 9, Stall: true}, {FromS: 10, ToS: 11}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gaps %+v, want %+v", got, want)
	}
	if gaps(nil) != nil {
		t.Error("gaps of no timeline")
	}
}
