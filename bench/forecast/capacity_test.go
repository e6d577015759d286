package main

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
)

// TestHeld: a step falls behind when it processed less than 90% of the
// transactions asked or its mean schedule lag passed 100 ms.
func TestHeld(t *testing.T) {
	for _, c := range []struct {
		asked, tps, lag float64
		want            bool
	}{
		{1000, 995, 2, true},
		{1000, 900, 100, true},
		{1000, 899, 2, false},
		{1000, 1000, 100.5, false},
	} {
		if got := held(c.asked, c.tps, c.lag); got != c.want {
			t.Errorf("held(%v, %v, %v) = %v, want %v", c.asked, c.tps, c.lag, got, c.want)
		}
	}
	// The mean lag weighs each transaction type by its count.
	if got := meanLag(map[string]float64{"a": 10, "b": 1}, map[string]int64{"a": 1, "b": 9}); got != 1.9 {
		t.Errorf("meanLag = %v, want 1.9", got)
	}
	if got := meanLag(nil, nil); got != 0 {
		t.Errorf("meanLag of nothing = %v", got)
	}
}

// TestCapacityLines: the truth's held and broken k beside headroom's
// answer, an answer that never broke as "at least", none as none.
func TestCapacityLines(t *testing.T) {
	r := capacityResult{Sides: []capacitySide{
		{Side: sideControl, HeldK: 3, BrokeK: 4, Headroom: &headroom.Answer{Holds: 2.8, Lo: 2.5, Hi: 3.1}},
		{Side: sideCand, HeldK: 8, Headroom: &headroom.Answer{Lo: 7.6, AtLeast: true}},
		{Side: "other", HeldK: 0, BrokeK: 1},
	}}
	got := strings.Join(r.lines(), "\n")
	for _, want := range []string{
		"capacity, control (times the application's rate): true held 3x, fell behind at 4x; headroom 2.80x (2.50x-3.10x)",
		"capacity, candidate (times the application's rate): true held 8x (the largest tried); headroom at least 7.60x",
		"capacity, other (times the application's rate): true fell behind at 1x; headroom none",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lines lack %q:\n%s", want, got)
		}
	}
}
