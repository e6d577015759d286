package results

import "testing"

// TestMergeLeftovers: the parts of a replay keep what each left.
func TestMergeLeftovers(t *testing.T) {
	a := &Leftovers{Prepared: []LeftoverPrepared{{Gid: "g1", Reason: LeftoverStillPrepared}}}
	b := &Leftovers{AdvisoryLocks: []LeftoverAdvisory{{Key: "7", Reason: LeftoverHeldAtSessionEnd}}}
	if m := mergeLeftovers(nil, nil); m != nil {
		t.Errorf("nothing left: %+v", m)
	}
	if m := mergeLeftovers(a, nil); m != a {
		t.Errorf("one part: %+v", m)
	}
	m := mergeLeftovers(a, b)
	if len(m.Prepared) != 1 || m.Prepared[0].Gid != "g1" || len(m.AdvisoryLocks) != 1 || m.AdvisoryLocks[0].Key != "7" {
		t.Errorf("merged %+v", m)
	}
	m = mergeLeftovers(m, a)
	if len(m.Prepared) != 2 || len(a.Prepared) != 1 {
		t.Errorf("merged again %+v, a %+v", m, a)
	}
}
