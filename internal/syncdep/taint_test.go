package syncdep

import "testing"

// TestTaintFallsBack: a Taint that outgrew MaxTaintRows taints the
// relation of a row it can no longer keep, so a later read of another
// key of it meets the taint relation-wide (never not at all), and says
// it fell back; before that, a read of another key does not meet it.
func TestTaintFallsBack(t *testing.T) {
	tr := NewTracker(Answers)
	tr.SetCatalog("db", keyedCatalog())
	s := tr.Session("db", "a")
	write := exec(s, us(1000), us(1100), keyWrite) // plain, id = 5
	other := exec(s, us(2000), us(2100), keyRead)  // plain, id = 7
	rng := exec(s, us(3000), us(3100), "SELECT * FROM plain WHERE id BETWEEN 6 AND 9")
	if !write.Reach.Writes() || other.Reach == nil || rng.Reach == nil {
		t.Fatalf("reaches: write %+v, read %+v, range %+v", write.Reach, other.Reach, rng.Reach)
	}
	ta := NewTaint()
	ta.Add(write.Reach)
	if k := ta.Affects(other.Reach, true); k != RaceNone {
		t.Errorf("a read of another key meets a taint by key: %v", k)
	}
	if k := ta.Affects(rng.Reach, true); k != RaceNone {
		t.Errorf("a range without the tainted key meets it: %v", k)
	}
	if k := ta.Affects(write.Reach, true); k != RaceRow {
		t.Errorf("the tainted row itself: %v, want by row", k)
	}
	ta.n = MaxTaintRows // full
	ta.Add(write.Reach)
	if !ta.FellBack() {
		t.Fatal("a full taint did not fall back")
	}
	for name, r := range map[string]*Reach{"key": other.Reach, "range": rng.Reach} {
		if k := ta.Affects(r, true); k != RaceRelation {
			t.Errorf("after falling back, a read of the table by %s meets the taint %v, want relation-wide", name, k)
		}
	}
}
