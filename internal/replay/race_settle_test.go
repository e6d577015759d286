package replay

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestAnswerRaceDecidedLate: a differing answer compared before the
// tracker read the COMMIT that makes its statement race (answered later
// in the log; on a busy machine the dispatcher may not have read it by
// then) is explained by the race once settled, not counted unexplained
// as it was compared (issue 44: 1 of 2,570 answers of
// TestCaptureRacesExplained); relation-wide here, t having no key. One
// whose statement never races says the target's data differs, naming
// its table (issue 59 item 3).
func TestAnswerRaceDecidedLate(t *testing.T) {
	functionalCase(t)
	tr := syncdep.NewTracker(syncdep.Object)
	tr.SetCatalog("db", &syncdep.Catalog{Relations: []syncdep.Relation{{OID: 1, Schema: "public", Name: "t", Kind: 'r'}}})
	a, b, c := tr.Session("db", "a"), tr.Session("db", "b"), tr.Session("db", "c")
	// Before any write: it never races.
	alone := track(c, 100, 200, "SELECT * FROM t")
	track(a, 1000, 1000, "BEGIN")
	track(a, 2000, 2600, "DELETE FROM t WHERE id = 1")
	waiter := track(b, 2700, 3000, "DELETE FROM t WHERE id = 1")
	if waiter.Race.Settled() || alone.Race.Settled() {
		t.Fatalf("settled before the COMMIT was read: %v %v", waiter.Race, alone.Race)
	}
	r := &Replayer{}
	sh := newShard()
	del, sel := sh.set.Slot("del", "DELETE FROM t WHERE id = $1"), sh.set.Slot("sel", "SELECT * FROM t")
	for _, x := range []struct {
		st   *querystats.Stats
		race *syncdep.Race
		tabs []string
	}{{del, waiter.Race, waiter.Tables}, {sel, alone.Race, alone.Tables}} {
		x.st.RecordAnswer(querystats.AnswerRows)
		var tally answerTally
		tally.add(x.st, "", x.race)
		if len(tally.undecided) != 1 || tally.explained != "" || tally.ifRaced != querystats.CauseRaced {
			t.Fatalf("tally %+v: want the answer undecided", tally)
		}
		sh.addPendingRace(r, pendingRace{race: x.race, stats: tally.undecided, cause: tally.ifRaced, tables: x.tabs})
	}
	// The COMMIT, sent while the waiter's DELETE ran, answered 19 ms
	// after it.
	track(a, 2800, 22000, "COMMIT")
	sh.settleRaces(r, true)
	if row, rel, data, unexplained := r.c.answerCause(querystats.CauseRaced).Load(), r.c.answerCause(querystats.CauseRacedRelation).Load(), r.c.answerTargetData.Load(), r.c.answerUnexplained.Load(); row != 0 || rel != 1 || data != 1 || unexplained != 0 {
		t.Errorf("%d explained by a race by row, %d relation-wide, %d target data, %d unexplained: want 0, 1, 1, 0", row, rel, data, unexplained)
	}
	if n, cause := del.AnswerExplained(); n != 1 || cause != string(querystats.CauseRacedRelation)+": a concurrent transaction that wrote a table it reads (relation-wide)" {
		t.Errorf("the DELETE's differing answer: %d explained (%q), want 1 by the race", n, cause)
	}
	if n, _ := sel.AnswerExplained(); n != 0 {
		t.Errorf("the SELECT's differing answer was explained %d times, want not (the target's data)", n)
	}
	if got := r.c.targetDataTables.counts(); len(got) != 1 || got[alone.Tables[0]] != 1 {
		t.Errorf("target data by table %v (tables %v), want the SELECT's table once", got, alone.Tables)
	}
	if len(sh.races) != 0 {
		t.Errorf("%d races left pending", len(sh.races))
	}
}
