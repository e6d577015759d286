package replayrun

import (
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// TestLoadRounds checks the load axis: by speed one replay at Speed × K;
// by fold above 1x one replay of the log folded in K whole slices, or,
// split in shards, one replay per slice's window; each with the level's
// load in its part, and none at 1x.
func TestLoadRounds(t *testing.T) {
	functionalCase(t)
	const first = int64(1_000_000)
	span := 60 * time.Second
	base := Round{Target: "host=t", Part: &results.Part{Round: 2, Side: results.SideControl}}

	rs := Load{By: results.LoadBySpeed, K: 3, Speed: 2}.Rounds(base, first, span)
	if len(rs) != 1 || rs[0].Speed != 6 || rs[0].Fold != nil || rs[0].Window.Start != 0 {
		t.Fatalf("by speed at 3x: %+v", rs)
	}
	if l := rs[0].Part.Load; l == nil || l.By != results.LoadBySpeed || l.K != 3 || rs[0].Part.Round != 2 {
		t.Errorf("by speed at 3x: part %+v", rs[0].Part)
	}
	if base.Part.Load != nil {
		t.Error("Rounds changed the round's part")
	}
	for _, by := range []results.LoadBy{results.LoadBySpeed, results.LoadByFold} {
		rs := Load{By: by, K: 1, Speed: 2, Shards: 2}.Rounds(base, first, span)
		if len(rs) != 1 || rs[0].Speed != 2 || rs[0].Fold != nil || rs[0].Part.Load != nil {
			t.Errorf("by %s at 1x: %+v", by, rs)
		}
	}

	width := int64(span/time.Microsecond)/3 + 1
	rs = Load{By: results.LoadByFold, K: 3, Speed: 1}.Rounds(base, first, span)
	if len(rs) != 1 || rs[0].Speed != 1 || rs[0].Fold == nil || *rs[0].Fold != (Fold{K: 3, First: first, Width: width}) {
		t.Fatalf("by fold at 3x: %+v", rs)
	}
	cfg := Config{Input: source.Paths{"a.log"}}.Round(rs[0])
	if f, ok := cfg.Input.(source.Fold); !ok || f.K != 3 || f.Width != width {
		t.Errorf("the folded round's input: %#v", cfg.Input)
	}

	rs = Load{By: results.LoadByFold, K: 3, Speed: 1, Shards: 2}.Rounds(base, first, span)
	if len(rs) != 3 {
		t.Fatalf("by fold at 3x in shards: %d replays, want 3", len(rs))
	}
	for i, r := range rs {
		want := source.Selection{Start: first + int64(i)*width, End: first + int64(i+1)*width}
		if r.Window.Start != want.Start || r.Window.End != want.End || r.Fold != nil || r.Speed != 1 || r.Part.Load == nil || r.Part.Load.K != 3 {
			t.Errorf("slice %d: %+v, want the window %+v", i, r, want)
		}
	}
	if d := (Load{K: 3, Speed: 2}).Duration(span); d != 10*time.Second {
		t.Errorf("Duration = %v, want 10s", d)
	}
}
