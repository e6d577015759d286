package replay

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestTaintAfterDivergence: on a synthetic log replayed in Answers mode,
// a delete-and-reinsert of stock row 1 races with another session's
// update of that row (both overlap the other's commit), so the replay
// may leave the row with another value than the original's. A later
// read of that row that differs, by key, or by a range over it with
// another row count, follows that divergence (after_divergence), never
// the target's data; a range over it whose values only differ is still
// the target's data (a range of many rows owes that to the data more
// often: syncdep.Taint.Affects); a read
// of a row no divergence touched that differs is still the target's
// data, by key, by range, and in a table the race never wrote; a whole
// table read meets the taint relation-wide only, whether its row count
// or its values alone differ (issue 59 item 3; issue 77: which row of an
// aggregate differs is not known). The
// same holds when the read's race is decided late (settleRaces).
func TestTaintAfterDivergence(t *testing.T) {
	tr := syncdep.NewTracker(syncdep.Answers)
	tr.SetCatalog("db", &syncdep.Catalog{
		Relations: []syncdep.Relation{{OID: 1, Schema: "public", Name: "stock", Kind: 'r'}, {OID: 2, Schema: "public", Name: "other", Kind: 'r'}},
		Indexes: []syncdep.Index{{Rel: 1, Primary: true, Columns: []syncdep.IndexColumn{{Name: "id", Type: 23, Deterministic: true}}},
			{Rel: 2, Primary: true, Columns: []syncdep.IndexColumn{{Name: "id", Type: 23, Deterministic: true}}}},
	})
	const t0 = int64(1_772_359_200_000_007)
	exec := func(s *syncdep.Session, from, to int64, sql string) syncdep.Step {
		return track(s, t0+from, t0+to, sql)
	}
	a, b, c := tr.Session("db", "a"), tr.Session("db", "b"), tr.Session("db", "c")
	exec(a, 1000, 1010, "BEGIN")
	del := exec(a, 1100, 1200, "DELETE FROM stock WHERE id = 1")
	ins := exec(a, 1300, 1400, "INSERT INTO stock (id, v) VALUES (1, 5)")
	// b's update of the same row was sent before a's COMMIT ended and
	// answered after it was sent: unordered, it races.
	up := exec(b, 1450, 1700, "UPDATE stock SET v = v + 1 WHERE id = 1")
	commit := exec(a, 1500, 1600, "COMMIT")
	// Long after, with nothing concurrent.
	reads := map[string]syncdep.Step{}
	for i, q := range []string{
		"SELECT v FROM stock WHERE id = 1", "SELECT v FROM stock WHERE id = 2",
		"SELECT v FROM stock WHERE id BETWEEN 1 AND 10", "SELECT v FROM stock WHERE id BETWEEN 2 AND 10",
		"SELECT v FROM other WHERE id = 1", "SELECT sum(v) FROM stock",
	} {
		reads[q] = exec(c, 100_000+int64(i)*1000, 100_500+int64(i)*1000, q)
	}
	// The log read well past them: every race settled.
	for i := int64(0); i < 1100; i++ {
		exec(c, 200_000+i*10, 200_005+i*10, "SELECT v FROM other WHERE id = 99")
	}
	if up.Race.Kind() != syncdep.RaceRow || !up.Race.Settled() {
		t.Fatalf("the update that overlapped the COMMIT raced %v (settled %v), want by row", up.Race.Kind(), up.Race.Settled())
	}
	if !del.Raced() || !ins.Raced() || !del.Reach.Writes() || !ins.Reach.Writes() {
		t.Fatalf("the delete-and-reinsert raced %v/%v, writes %v/%v: want raced, writing", del.Raced(), ins.Raced(), del.Reach.Writes(), ins.Reach.Writes())
	}
	_ = commit
	for q, st := range reads {
		if st.Raced() || st.Reach == nil {
			t.Fatalf("%s raced %v, reach %v: want not raced, with a reach", q, st.Raced(), st.Reach)
		}
	}

	r := &Replayer{opts: Options{Sync: syncdep.Answers}, taint: syncdep.NewTaint()}
	if !r.blamesData() {
		t.Fatal("Answers mode does not blame the data")
	}
	// Before the race is taken in, the read of row 1 is the data's:
	// the taint is what changes it.
	s := &session{r: r}
	differs := func(q string, d querystats.AnswerDiff) querystats.AnswerCause {
		st := reads[q]
		items := trackCache.Get(q)
		sy := synced{race: st.Race, tables: st.Tables, reach: st.Reach}
		cause, _ := s.differsBecause(d, &event.Event{Query: q}, &event.Answer{}, 0, items[0], nil, sy, targetError{})
		return cause
	}
	because := func(q string) querystats.AnswerCause { return differs(q, querystats.AnswerValues) }
	if got := because("SELECT v FROM stock WHERE id = 1"); got != querystats.CauseTargetData {
		t.Fatalf("with nothing tainted, a differing read of row 1 is %q, want the target's data", got)
	}
	// The replay ran the raced statements: what they wrote is tainted.
	for _, st := range []syncdep.Step{del, ins, up} {
		if !taints(synced{race: st.Race}, false) {
			t.Fatalf("a raced statement does not taint")
		}
		r.taint.Add(st.Reach)
	}
	want := map[string]querystats.AnswerCause{
		"SELECT v FROM stock WHERE id = 1":              querystats.CauseAfterDivergence,
		"SELECT v FROM stock WHERE id BETWEEN 1 AND 10": querystats.CauseTargetData, // values: see below
		"SELECT v FROM stock WHERE id = 2":              querystats.CauseTargetData,
		"SELECT v FROM stock WHERE id BETWEEN 2 AND 10": querystats.CauseTargetData,
		"SELECT v FROM other WHERE id = 1":              querystats.CauseTargetData,
		// A read of the tainted table whole: which row differs is not
		// known, the replay's own divergence may be it (issue 77).
		"SELECT sum(v) FROM stock": querystats.CauseAfterDivergenceRelation,
	}
	for q, w := range want {
		if got := because(q); got != w {
			t.Errorf("%s differing: %q, want %q", q, got, w)
		}
	}
	// A range over the tainted row meets it when its row count differs
	// (the row missing mid delete-and-reinsert), not when only values
	// do: a range of many rows owes that to the target's data more
	// often (syncdep.Taint.Affects).
	if got := differs("SELECT v FROM stock WHERE id BETWEEN 1 AND 10", querystats.AnswerRows); got != querystats.CauseAfterDivergence {
		t.Errorf("a range over the tainted row with another row count: %q, want %q", got, querystats.CauseAfterDivergence)
	}
	if got := differs("SELECT sum(v) FROM stock", querystats.AnswerRows); got != querystats.CauseAfterDivergenceRelation {
		t.Errorf("a whole-table read with another row count: %q, want %q", got, querystats.CauseAfterDivergenceRelation)
	}
	if got := differs("SELECT v FROM stock WHERE id BETWEEN 2 AND 10", querystats.AnswerRows); got != querystats.CauseTargetData {
		t.Errorf("a range without the tainted row with another row count: %q, want the target's data", got)
	}
	if taints(synced{race: reads["SELECT v FROM stock WHERE id = 2"].Race}, false) {
		t.Error("a read that kept the original's order taints")
	}

	// Decided late (settleRaces): the same answers.
	sh := newShard()
	pend := func(q string, wide bool) {
		st := reads[q]
		slot := sh.set.Slot(q, q)
		slot.RecordAnswer(querystats.AnswerValues)
		sh.races = append(sh.races, pendingRace{race: st.Race, stats: []*querystats.Stats{slot}, cause: querystats.CauseRaced, tables: st.Tables, reach: st.Reach, wide: wide})
	}
	for q := range want {
		pend(q, false)
	}
	pend("SELECT v FROM stock WHERE id BETWEEN 1 AND 10", true)
	pend("SELECT sum(v) FROM stock", true)
	sh.settleRaces(r, true)
	if row, rel, data, unexplained := r.c.answerCause(querystats.CauseAfterDivergence).Load(), r.c.answerCause(querystats.CauseAfterDivergenceRelation).Load(), r.c.answerTargetData.Load(), r.c.answerUnexplained.Load(); row != 2 || rel != 2 || data != 4 || unexplained != 0 {
		t.Errorf("settled: %d after a divergence by row, %d relation-wide, %d the target's data, %d unexplained; want 2, 2, 4, 0", row, rel, data, unexplained)
	}
	if got := r.c.targetDataTables.counts(); got["public.stock"] != 3 || got["public.other"] != 1 {
		t.Errorf("the target's data by table %v, want public.stock 3, public.other 1", got)
	}
	if r.taint.FellBack() {
		t.Error("a few rows fell back to the relation")
	}
	oneRowOfRange(t, r, reads["SELECT v FROM stock WHERE id BETWEEN 1 AND 10"], trackCache)
}

// oneRowOfRange: a read of stock rows 1 to 10 (st), row 1 tainted in r,
// whose values alone differ from the original's: in row 1 alone, it
// follows the replay's own divergence (after_divergence), decided at once
// and late; in row 2 alone, or in rows 1 and 2, it is the target's data
// (which rows differ is known only when one does: rowdigest.
// OneRowDiffers), and so it is in row 2 alone when that row now holds 1,
// the tainted key, in another column than the key (a column whose values
// are not all within the range is not the key's). The original's rows
// are (id, id + 100); the target's rows come as the replay reads them
// (rowDigests), in text and in binary (int4), as a client's result
// formats give them (issue 59).
func oneRowOfRange(t *testing.T, r *Replayer, st syncdep.Step, cache *fingerprint.Cache) {
	t.Helper()
	const q = "SELECT v FROM stock WHERE id BETWEEN 1 AND 10"
	text := func(n int) []byte { return []byte(strconv.Itoa(n)) }
	binary4 := func(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	items := cache.Get(q)
	sy := synced{race: st.Race, tables: st.Tables, reach: st.Reach}
	for _, format := range []func(int) []byte{text, binary4} {
		var orig rowdigest.Digest
		for id := 1; id <= 10; id++ {
			orig.AddVersion(rowdigest.Current, rowdigest.Values(nil, [][]byte{format(id), format(id + 100)}))
		}
		ev := &event.Event{Query: q}
		ev.SetAnswer(&event.Answer{Rows: []int64{10}, Digests: []rowdigest.Digest{orig}, DigestVersion: rowdigest.Current})
		for name, want := range map[string]querystats.AnswerCause{"1": querystats.CauseAfterDivergence, "2": querystats.CauseTargetData, "1,2": querystats.CauseTargetData,
			"2 holding 1": querystats.CauseTargetData} {
			s := &session{r: r}
			s.w.digests.start(ev)
			s.w.digests.keep = true
			for id := 1; id <= 10; id++ {
				v := id + 100
				switch {
				case name == "2 holding 1" && id == 2:
					v = 1
				case strings.Contains(","+name+",", ","+strconv.Itoa(id)+","):
					v += 1000
				}
				s.w.digests.row(&pgproto3.DataRow{Values: [][]byte{format(id), format(v)}})
			}
			s.w.digests.completed()
			if !valuesDiffer(ev.Answer(), s.w.digests.done, 0, items[0], q) {
				t.Fatalf("row %s differing: the digests do not differ", name)
			}
			cause, _ := s.differsBecause(querystats.AnswerValues, ev, ev.Answer(), 0, items[0], nil, sy, targetError{})
			if cause != want {
				t.Errorf("a range whose values differ in row %s (%d-byte keys): %q, want %q", name, len(format(1)), cause, want)
			}
			// Decided late: as settleRaces takes it.
			after, data := r.c.answerCause(querystats.CauseAfterDivergence).Load(), r.c.answerTargetData.Load()
			sh := newShard()
			slot := sh.set.Slot(q, q)
			slot.RecordAnswer(querystats.AnswerValues)
			sh.races = append(sh.races, pendingRace{race: st.Race, stats: []*querystats.Stats{slot}, cause: querystats.CauseRaced, tables: st.Tables, reach: st.Reach,
				row: s.differingRow(querystats.AnswerValues, ev.Answer(), 0, sy)})
			sh.settleRaces(r, true)
			var got querystats.AnswerCause
			switch {
			case r.c.answerCause(querystats.CauseAfterDivergence).Load() == after+1 && r.c.answerTargetData.Load() == data:
				got = querystats.CauseAfterDivergence
			case r.c.answerTargetData.Load() == data+1 && r.c.answerCause(querystats.CauseAfterDivergence).Load() == after:
				got = querystats.CauseTargetData
			}
			if got != want {
				t.Errorf("settled late, a range whose values differ in row %s: %q, want %q", name, got, want)
			}
		}
	}
}

// TestTaintBlockRolledBack: a statement that fails on the target but not
// in the original aborts its block there, which rolls back what the
// block wrote before it although the original committed it: those rows
// are tainted (noteBlock). A block that commits on the target taints
// nothing.
func TestTaintBlockRolledBack(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, c, "postgres", "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL); INSERT INTO items VALUES (1, 1), (2, 2)")
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	tr := syncdep.NewTracker(syncdep.Answers)
	tr.SetCatalog("db", &syncdep.Catalog{
		Relations: []syncdep.Relation{{OID: 1, Schema: "public", Name: "items", Kind: 'r'}},
		Indexes:   []syncdep.Index{{Rel: 1, Primary: true, Columns: []syncdep.IndexColumn{{Name: "id", Type: 23, Deterministic: true}}}},
	})
	ls := tr.Session("db", "a")
	at := int64(1_772_359_200_000_007)
	step := func(sql string) syncdep.Step {
		at += 1000
		return track(ls, at, at+100, sql)
	}
	r := &Replayer{opts: Options{Sync: syncdep.Answers}, taint: syncdep.NewTaint()}
	s := &session{r: r, conn: conn}
	// run sends sql to the target and notes it as the replay does; it
	// reports whether it failed there.
	run := func(sql string, failsInOriginal bool) syncdep.Step {
		st := step(sql)
		_, err := conn.Exec(ctx, sql).ReadAll()
		s.noteBlock(st.Reach, err != nil && !failsInOriginal)
		return st
	}
	read := func(id int) *syncdep.Reach {
		return step(fmt.Sprintf("SELECT v FROM items WHERE id = %d", id)).Reach
	}

	run("BEGIN", false)
	run("UPDATE items SET v = v - 1 WHERE id = 1", false)
	run("COMMIT", false)
	if k := r.taint.Affects(read(1), false); k != syncdep.RaceNone {
		t.Fatalf("a block that committed on the target tainted its row: %v", k)
	}
	run("BEGIN", false)
	run("UPDATE items SET v = v - 1 WHERE id = 1", false)
	run("INSERT INTO items VALUES (2, 0)", false) // a duplicate key only here
	run("COMMIT", false)
	if k := r.taint.Affects(read(1), false); k != syncdep.RaceRow {
		t.Errorf("the row a block rolled back on the target wrote: %v, want tainted by row", k)
	}
	if k := r.taint.Affects(read(2), false); k != syncdep.RaceNone {
		t.Errorf("a row the block did not write: %v, want untainted", k)
	}
	// Failed in the original too: the block was rolled back there as
	// well, nothing to taint.
	r.taint = syncdep.NewTaint()
	run("BEGIN", false)
	run("UPDATE items SET v = v - 1 WHERE id = 1", false)
	run("INSERT INTO items VALUES (2, 0)", true)
	run("ROLLBACK", false)
	if k := r.taint.Affects(read(1), false); k != syncdep.RaceNone {
		t.Errorf("a block that failed in the original too tainted its row: %v", k)
	}
}

// TestAfterDivergenceWords: what names an answer that met the replay's
// taint, by how it met it.
func TestAfterDivergenceWords(t *testing.T) {
	for _, c := range []struct {
		k     syncdep.RaceKind
		on    [2]string
		cause querystats.AnswerCause
		what  string
	}{
		{syncdep.RaceRow, taintedRead, querystats.CauseAfterDivergence, "an earlier divergence of the replay on a row it reads"},
		{syncdep.RaceRelation, taintedRead, querystats.CauseAfterDivergenceRelation, "an earlier divergence of the replay on a table it reads (relation-wide)"},
		{syncdep.RaceRow, taintedRow, querystats.CauseAfterDivergence, "an earlier divergence of the replay on the one row whose values differ"},
		{syncdep.RaceRelation, taintedRow, querystats.CauseAfterDivergenceRelation, "an earlier divergence of the replay on the table of the one row whose values differ (relation-wide)"},
		{syncdep.RaceNone, taintedRow, "", ""},
	} {
		if cause, what := afterDivergence(c.k, c.on); cause != c.cause || what != c.what {
			t.Errorf("afterDivergence(%v, %q) = %q, %q; want %q, %q", c.k, c.on, cause, what, c.cause, c.what)
		}
	}
}

// TestSkipLockedRaced: a read that skips locked rows (a job queue's
// poll) whose answer differs, with no commit of another session inside
// its interval, is raced relation-wide: which rows it found locked
// depends on the transactions open in other sessions then, an order the
// replay does not keep. The same read waiting for locked rows is the
// target's data (issue 77's queue workload replayed onto an identical
// copy: 29 polls of 1,000 were so, and the replay exited 6).
func TestSkipLockedRaced(t *testing.T) {
	tr := syncdep.NewTracker(syncdep.Answers)
	tr.SetCatalog("db", &syncdep.Catalog{
		Relations: []syncdep.Relation{{OID: 1, Schema: "public", Name: "jobs", Kind: 'r'}},
		Indexes:   []syncdep.Index{{Rel: 1, Primary: true, Columns: []syncdep.IndexColumn{{Name: "id", Type: 23, Deterministic: true}}}},
	})
	const t0 = int64(1_772_359_200_000_007)
	a := tr.Session("db", "a")
	polls := map[string]querystats.AnswerCause{
		"SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED": querystats.CauseRacedRelation,
		"SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 3 FOR UPDATE":             querystats.CauseTargetData,
	}
	steps := map[string]syncdep.Step{}
	i := int64(0)
	for q := range polls {
		steps[q] = track(a, t0+1000+i*1000, t0+1500+i*1000, q)
		i++
	}
	for i := int64(0); i < 1100; i++ {
		track(a, t0+200_000+i*10, t0+200_005+i*10, "SELECT id FROM jobs WHERE id = 99")
	}
	r := &Replayer{opts: Options{Sync: syncdep.Answers}, taint: syncdep.NewTaint()}
	s := &session{r: r}
	for q, want := range polls {
		st := steps[q]
		if st.Raced() || !st.Race.Settled() {
			t.Fatalf("%s: raced %v, settled %v: want settled, not raced", q, st.Raced(), st.Race.Settled())
		}
		sy := synced{race: st.Race, tables: st.Tables, reach: st.Reach}
		for _, d := range []querystats.AnswerDiff{querystats.AnswerValues, querystats.AnswerRows} {
			if got, _ := s.differsBecause(d, &event.Event{Query: q}, &event.Answer{}, 0, trackCache.Get(q)[0], nil, sy, targetError{}); got != want {
				t.Errorf("%s differing (%v): %q, want %q", q, d, got, want)
			}
		}
	}
}
