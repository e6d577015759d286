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

// TestTaintWholeReadValues: a read of a table whole (an aggregate, every
// row) whose values alone differ meets a taint of any row of that table
// relation-wide, as nothing tells which row differs; a range read or a
// read by another key whose values alone differ does not (judged by the
// row that differs, or by its key), and a whole read of an untainted
// table does not either.
func TestTaintWholeReadValues(t *testing.T) {
	tr := NewTracker(Answers)
	tr.SetCatalog("db", keyedCatalog())
	s := tr.Session("db", "a")
	write := exec(s, us(1000), us(1100), keyWrite) // plain, id = 5
	agg := exec(s, us(2000), us(2100), "SELECT count(*), sum(v) FROM plain")
	every := exec(s, us(3000), us(3100), "SELECT id, v FROM plain ORDER BY id")
	other := exec(s, us(4000), us(4100), keyRead) // plain, id = 7
	rng := exec(s, us(5000), us(5100), "SELECT * FROM plain WHERE id BETWEEN 1 AND 9")
	ta := NewTaint()
	for name, r := range map[string]*Reach{"aggregate": agg.Reach, "every row": every.Reach} {
		if k := ta.Affects(r, false); k != RaceNone {
			t.Errorf("%s before any taint: %v", name, k)
		}
	}
	ta.Add(write.Reach)
	for name, r := range map[string]*Reach{"aggregate": agg.Reach, "every row": every.Reach} {
		if k := ta.Affects(r, false); k != RaceRelation {
			t.Errorf("%s of a tainted table, values alone: %v, want relation-wide", name, k)
		}
	}
	for name, r := range map[string]*Reach{"another key": other.Reach, "range": rng.Reach} {
		if k := ta.Affects(r, false); k != RaceNone {
			t.Errorf("%s, values alone: %v, want none (judged by its row)", name, k)
		}
	}
}
