package replay

import (
	"slices"
	"testing"
	"time"
)

// deadlines gives back what is due, the earliest first, and nothing
// before its time.
func TestDeadlines(t *testing.T) {
	base := time.Unix(1000, 0)
	var d deadlines[string]
	if _, ok := d.next(); ok || d.due(base.Add(time.Hour)) {
		t.Fatal("an empty heap has a deadline")
	}
	for _, c := range []struct {
		ms int
		v  string
	}{{30, "c"}, {10, "a"}, {50, "e"}, {20, "b"}, {40, "d"}, {20, "b2"}} {
		d.push(base.Add(time.Duration(c.ms)*time.Millisecond), c.v)
	}
	if at, ok := d.next(); !ok || !at.Equal(base.Add(10*time.Millisecond)) {
		t.Fatalf("next: %v %v, want base+10ms", at, ok)
	}
	for _, c := range []struct {
		ms   int
		want []string
	}{
		{5, nil},
		{10, []string{"a"}},
		{25, []string{"b", "b2"}},
		{45, []string{"c", "d"}},
		{45, nil},
		{1000, []string{"e"}},
	} {
		var got []string
		now := base.Add(time.Duration(c.ms) * time.Millisecond)
		for {
			v, ok := d.popDue(now)
			if !ok {
				break
			}
			got = append(got, v)
		}
		// Equal deadlines come in either order.
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("due at +%d ms: %v, want %v", c.ms, got, c.want)
		}
	}
	if _, ok := d.next(); ok {
		t.Error("the heap is not empty after everything was due")
	}
}
