package explain

import (
	"slices"
	"testing"
)

// TestStatisticsCauses: extended statistics built on one side only are
// a cause when the plan changed, with the definition of the side that
// has them (and the other's, unbuilt); a column's statistics target that
// differs is one when the query names the column, with both targets.
func TestStatisticsCauses(t *testing.T) {
	ab := ExtStat{Schema: "public", Name: "t_ab", Kinds: []string{"f"}, Def: "CREATE STATISTICS t_ab (dependencies) ON a, b FROM t", Built: true}
	cd := ExtStat{Schema: "public", Name: "t_cd", Kinds: []string{"d"}, Def: "CREATE STATISTICS t_cd (ndistinct) ON c, d FROM t", Built: true}
	unbuilt := cd
	unbuilt.Built = false
	ctl := &Snapshot{Relations: map[string]*Relation{"t": {Name: "t", Tuples: 100, ColumnStats: true, ExtStats: []ExtStat{ab, unbuilt},
		StatisticsTargets: map[string]int{"a": 1000, "z": 500}}}}
	cand := &Snapshot{Relations: map[string]*Relation{"t": {Name: "t", Tuples: 100, ColumnStats: true, ExtStats: []ExtStat{cd},
		StatisticsTargets: map[string]int{"B": 10, "z": 500}}}}

	got := statisticsCauses([]string{"t"}, ctl, cand, true, true)
	if len(got) != 2 {
		t.Fatalf("causes %+v, want t_ab on the control only, t_cd built on the candidate only", got)
	}
	if c := got[0]; c.Kind != CauseExtendedStatistics || c.Side != Candidate || c.Setting != "t_ab" || c.Control != ab.Def || c.Candidate != "" ||
		c.Statistics == nil || c.Statistics.Def != ab.Def {
		t.Errorf("control only: %+v", c)
	}
	if c := got[1]; c.Kind != CauseExtendedStatistics || c.Side != Control || c.Setting != "t_cd" || c.Candidate != cd.Def || c.Control != unbuilt.Def ||
		c.Statistics == nil || c.Statistics.Schema != "public" {
		t.Errorf("candidate only: %+v", c)
	}
	if same := statisticsCauses([]string{"t"}, ctl, cand, false, false); len(same) != 0 {
		t.Errorf("the same plan: %+v", same)
	}

	// a: 1000 on the control; "B" (quoted): 10 on the candidate; z the
	// same on both; b unquoted is not "B".
	got = targetCauses(`SELECT v FROM t WHERE a = $1 AND "B" = $2 AND z = $3 AND b = $4`, []string{"t", "t"}, ctl, cand)
	var cols []string
	for _, c := range got {
		cols = append(cols, c.Columns...)
		if c.Kind != CauseStatisticsTarget || c.Relation != "t" || c.Target == nil || c.Target.Column != c.Columns[0] {
			t.Errorf("cause %+v", c)
		}
	}
	if !slices.Equal(cols, []string{"B", "a"}) {
		t.Fatalf("columns %v, want B and a", cols)
	}
	if c := got[1]; c.Control != "1000" || c.Candidate != "default" || *c.Target != (StatisticsTarget{Column: "a", Control: 1000, Candidate: DefaultTarget}) {
		t.Errorf("a: %+v", c)
	}
	if c := got[0]; c.Control != "default" || c.Candidate != "10" {
		t.Errorf("B: %+v", c)
	}
	if none := targetCauses("SELECT v FROM t WHERE c = $1", []string{"t"}, ctl, cand); len(none) != 0 {
		t.Errorf("columns the query does not name: %+v", none)
	}
}
