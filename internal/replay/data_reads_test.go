package replay

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestDataReadsSplit: executions the target's data would explain are the
// target's data only when the same rows were read differently more than
// once; once, they are suspect (issue 77). The counts add up, by table,
// and the kept answers read once are marked suspect.
func TestDataReadsSplit(t *testing.T) {
	q := func(query string, params ...string) string {
		ev := &event.Event{Database: "db", Query: query}
		for _, p := range params {
			ev.Params = append(ev.Params, event.Param{Value: p})
		}
		return readKey(ev, synced{})
	}
	if q("SELECT v FROM t WHERE id = $1", "1") == q("SELECT v FROM t WHERE id = $1", "2") || q("SELECT 1") != q("SELECT 1") {
		t.Fatal("readKey: the same statement with other values reads other rows; the same, the same")
	}
	var d dataReads
	d.add(q("SELECT v FROM t WHERE id = $1", "1"), []string{"public.t"}, 0)
	d.add(q("SELECT v FROM t WHERE id = $1", "2"), []string{"public.t"}, 1)
	d.add(q("SELECT v FROM t WHERE id = $1", "1"), []string{"public.t"}, 2)
	d.add(q("SELECT * FROM t JOIN u USING (id)"), []string{"public.t", "public.u"}, -1)
	data, dataBy, suspect, suspectBy := d.split()
	if data != 2 || dataBy["public.t"] != 2 || len(dataBy) != 1 || suspect != 2 || suspectBy["public.t"] != 2 || suspectBy["public.u"] != 1 {
		t.Errorf("split: data %d %v, suspect %d %v; want data 2 (public.t 2), suspect 2 (public.t 2, public.u 1)", data, dataBy, suspect, suspectBy)
	}
	kept := make([]results.DifferingAnswer, 3)
	for i := range kept {
		kept[i].Cause = querystats.CauseTargetData
	}
	d.mark(kept)
	if kept[0].Cause != querystats.CauseTargetData || kept[1].Cause != querystats.CauseSuspectData || kept[2].Cause != querystats.CauseTargetData {
		t.Errorf("marked %+v: want the answer read once suspect, the others the target's data", kept)
	}
	var none dataReads
	if a, b, c, e := none.split(); a != 0 || b != nil || c != 0 || e != nil {
		t.Errorf("split of none: %d %v %d %v", a, b, c, e)
	}
}

// Tables the start's digests proved equal on the target never count as
// the target's data, however often their rows are read differently; a
// read that also touches a table no digest proved still does.
func TestDataReadsProvenByDigest(t *testing.T) {
	key := func(id string) string {
		return readKey(&event.Event{Database: "db", Query: "SELECT v FROM t WHERE id = $1", Params: []event.Param{{Value: id}}}, synced{})
	}
	var d dataReads
	d.setProven([]string{"public.t"})
	d.add(key("1"), []string{"public.t"}, 0)
	d.add(key("1"), []string{"public.t"}, 1)
	d.add(key("2"), []string{"public.t", "public.u"}, 2)
	d.add(key("2"), []string{"public.t", "public.u"}, 3)
	data, dataBy, suspect, suspectBy := d.split()
	if data != 2 || dataBy["public.u"] != 2 || suspect != 2 || suspectBy["public.t"] != 2 || len(suspectBy) != 1 {
		t.Errorf("split: data %d %v, suspect %d %v; want the proven table's recurring reads suspect (2), the join with an unproven table the target's data (2)", data, dataBy, suspect, suspectBy)
	}
	kept := make([]results.DifferingAnswer, 4)
	for i := range kept {
		kept[i].Cause = querystats.CauseTargetData
	}
	d.mark(kept)
	if kept[0].Cause != querystats.CauseSuspectData || kept[1].Cause != querystats.CauseSuspectData || kept[2].Cause != querystats.CauseTargetData {
		t.Errorf("marked %+v: want the proven table's answers suspect", kept)
	}
}
