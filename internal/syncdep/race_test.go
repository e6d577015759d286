package syncdep

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// TestRaced: a statement races with another session's transaction when
// that transaction wrote a relation the statement touches and ended
// (committed or rolled back) while the statement ran; not when it ended
// before the statement started, wrote another relation, or was the
// statement's own session's.
func TestRaced(t *testing.T) {
	tr := newShop(Object)
	a, b, c := tr.Session("shop", "a"), tr.Session("shop", "b"), tr.Session("shop", "c")
	run(a, ms(1), ms(1), "BEGIN")
	run(a, ms(2), ms(2), "DELETE FROM public.orders WHERE id = 7")
	run(a, ms(3), ms(3), "INSERT INTO public.orders (id) VALUES (7)")
	// b's UPDATE started before a's COMMIT and was logged after it: it
	// waited for a's row lock in the original.
	run(a, ms(5), ms(5), "COMMIT")
	if st := run(b, ms(4), ms(6), "UPDATE public.orders SET id = 7 WHERE id = 7"); !st.Raced() {
		t.Error("an UPDATE that ran across another session's commit of its table did not race")
	}
	// Started after the commit: ordered, no race.
	if st := run(b, ms(7), ms(8), "UPDATE public.orders SET id = 7 WHERE id = 7"); st.Raced() {
		t.Error("an UPDATE after the commit raced")
	}
	// Another table: no race.
	run(a, ms(9), ms(9), "BEGIN")
	run(a, ms(10), ms(10), "DELETE FROM shipments WHERE order_id = 7")
	run(a, ms(12), ms(12), "COMMIT")
	if st := run(c, ms(11), ms(13), "SELECT * FROM archive.orders"); st.Raced() {
		t.Error("a statement on another relation raced")
	}
	// A rollback ends a transaction too; an autocommit write is its own
	// transaction.
	run(a, ms(14), ms(14), "BEGIN")
	run(a, ms(15), ms(15), "INSERT INTO public.orders (id) VALUES (8)")
	run(a, ms(17), ms(17), "ROLLBACK")
	run(c, ms(18), ms(19), "INSERT INTO public.orders (id) VALUES (9)")
	if st := run(b, ms(16), ms(20), "INSERT INTO public.orders (id) VALUES (8)", true); !st.Raced() {
		t.Error("an INSERT that ran across another session's rollback and autocommit INSERT did not race")
	}
	// Its own session's commits are no race.
	run(b, ms(21), ms(21), "BEGIN")
	run(b, ms(22), ms(22), "UPDATE public.orders SET id = 7 WHERE id = 7")
	if st := run(b, ms(21), ms(23), "COMMIT"); st.Raced() {
		t.Error("a COMMIT raced with its own transaction")
	}
	// In a block, what follows a statement that raced races too, up to
	// the block's end: a DELETE that waited for another mover found 0
	// rows, and the INSERT after it a duplicate key.
	run(b, ms(30), ms(30), "BEGIN")
	run(a, ms(31), ms(32), "UPDATE public.orders SET id = 7 WHERE id = 7")
	if st := run(b, ms(31)-500, ms(33), "DELETE FROM public.orders WHERE id = 7"); !st.Raced() {
		t.Error("a DELETE across another session's autocommit UPDATE did not race")
	}
	if st := run(b, ms(34), ms(35), "INSERT INTO public.orders (id) VALUES (7)"); !st.Raced() {
		t.Error("an INSERT after a statement of its block that raced did not race")
	}
	run(b, ms(36), ms(36), "COMMIT")
	if st := run(b, ms(37), ms(38), "INSERT INTO public.orders (id) VALUES (7)"); st.Raced() {
		t.Error("an INSERT after the block that raced ended raced")
	}

	// A commit logged just after the statement whose wait it ended
	// (the server answers the waiter first, as it releases the row
	// locks before it answers the COMMIT) races with it once read, and
	// with what follows it in its block; one logged later than
	// RaceSlack does not, nor one whose transaction began after it.
	run(a, ms(40), ms(40), "BEGIN")
	run(a, ms(41), ms(41), "DELETE FROM public.orders WHERE id = 7")
	run(b, ms(42), ms(42), "BEGIN")
	waiter := run(b, ms(42)+100, ms(43), "DELETE FROM public.orders WHERE id = 7")
	if waiter.Raced() {
		t.Fatal("raced before the commit was read")
	}
	run(a, ms(42)+500, ms(43)+30, "COMMIT")
	if !waiter.Raced() {
		t.Error("a DELETE whose wait a commit logged 30 µs after it ended did not race")
	}
	if st := run(b, ms(44), ms(45), "INSERT INTO public.orders (id) VALUES (7)"); !st.Raced() {
		t.Error("an INSERT after that DELETE in its block did not race")
	}
	run(b, ms(46), ms(46), "COMMIT")
	early := run(c, ms(47), ms(48), "UPDATE public.orders SET id = 7 WHERE id = 7")
	run(a, ms(48)+100, ms(48)+200, "INSERT INTO public.orders (id) VALUES (9)")
	run(a, ms(49), ms(50), "BEGIN")
	run(a, ms(51), ms(52), "INSERT INTO public.orders (id) VALUES (10)")
	run(a, ms(53), ms(53), "COMMIT")
	if early.Raced() {
		t.Error("an UPDATE raced with transactions that began after it ended")
	}
	// The waiter's next statement may be read before the commit too.
	run(b, ms(54), ms(54), "BEGIN")
	run(a, ms(54)+10, ms(54)+20, "BEGIN")
	run(a, ms(54)+30, ms(54)+40, "UPDATE public.orders SET id = 7 WHERE id = 7")
	first := run(b, ms(54)+50, ms(55), "UPDATE public.orders SET id = 7 WHERE id = 7")
	next := run(b, ms(55)+10, ms(55)+20, "SELECT * FROM archive.orders")
	run(a, ms(54)+60, ms(55)+30, "COMMIT")
	if !first.Raced() || !next.Raced() {
		t.Errorf("an UPDATE whose wait a commit logged after its next statement ended raced %v, the next %v: want both", first.Raced(), next.Raced())
	}
	if st := run(b, ms(56), ms(56)+10, "SELECT * FROM archive.orders"); !st.Raced() {
		t.Error("the block's statement after them did not race")
	}
	run(b, ms(57), ms(57), "COMMIT")
	run(a, ms(58), ms(58), "BEGIN")
	run(a, ms(58)+10, ms(58)+20, "DELETE FROM public.orders WHERE id = 8")
	slow := run(c, ms(60), ms(61), "UPDATE public.orders SET id = 7 WHERE id = 7")
	run(a, ms(61)+RaceSlack.Microseconds()+1, ms(61)+RaceSlack.Microseconds()+1, "COMMIT")
	if slow.Raced() {
		t.Error("an UPDATE raced with a commit logged more than RaceSlack after it")
	}

	// The statements of a transaction whose commit another session's
	// statement raced with race too: that statement may run before
	// them on the target.
	run(a, ms(70), ms(70), "BEGIN")
	mine := run(a, ms(71), ms(72), "DELETE FROM public.orders WHERE id = 7")
	run(c, ms(73), ms(75), "DELETE FROM public.orders WHERE id = 7")
	run(a, ms(74), ms(74), "COMMIT")
	if !mine.Raced() {
		t.Error("a DELETE whose transaction's commit another DELETE waited for did not race")
	}
}

// TestRacedRingBounded: the ends kept stay at maxEnds however many
// transactions end.
func TestRacedRingBounded(t *testing.T) {
	tr := newShop(Object)
	a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
	for i := int64(0); i < 3*maxEnds; i++ {
		run(a, ms(10+i), ms(10+i), "UPDATE public.orders SET id = 1 WHERE id = 1")
	}
	if n := len(tr.ends.ends); n != maxEnds {
		t.Fatalf("%d ends kept, want %d", n, maxEnds)
	}
	if st := run(b, ms(10+3*maxEnds-5), ms(10+3*maxEnds), "SELECT * FROM public.orders"); !st.Raced() {
		t.Error("a read across the last commits did not race")
	}
	if st := run(b, ms(10+3*maxEnds+1), ms(10+3*maxEnds+2), "SELECT * FROM public.orders"); st.Raced() {
		t.Error("a read after every commit raced")
	}
}

// TestRacedLoadedCapture: the two races a capture made on a loaded
// machine holds (issue 44, TestCaptureRacesExplained), which a COMMIT's
// end alone missed.
func TestRacedLoadedCapture(t *testing.T) {
	tr := newShop(Object)
	a, b, c := tr.Session("shop", "a"), tr.Session("shop", "b"), tr.Session("shop", "c")
	// b's DELETE waited for a's row lock and found the row gone (0
	// rows): a's COMMIT was sent while it ran, and its answer relayed
	// 19 ms after the DELETE's. The events come in the order of their
	// ends.
	run(a, ms(1), ms(1), "BEGIN")
	run(a, ms(2), ms(2)+600, "DELETE FROM public.orders WHERE id = 1")
	run(a, ms(2)+640, ms(2)+810, "INSERT INTO public.orders (id) VALUES (1)")
	waiter := run(b, ms(2)+820, ms(2)+1750, "DELETE FROM public.orders WHERE id = 1")
	if waiter.Raced() {
		t.Fatal("raced before the commit was read")
	}
	run(a, ms(2)+900, ms(22), "COMMIT")
	// orders has no key in shopCatalog: relation-wide, which a race by
	// row found later may still replace (not settled).
	if waiter.Race.Kind() != RaceRelation {
		t.Error("a DELETE during which another session's COMMIT was sent, answered 19 ms after it, did not race")
	}

	// c's DELETE raced already (with a's autocommit UPDATE) when it
	// waited for b's autocommit UPDATE, whose answer the capture
	// relayed just after the DELETE's: b's UPDATE races too, since the
	// DELETE may run before it on the target (its 1 row was 0 there).
	run(c, ms(30), ms(30), "BEGIN")
	run(a, ms(30)+100, ms(30)+400, "UPDATE public.orders SET id = 3 WHERE id = 3")
	del := run(c, ms(30)+50, ms(34), "DELETE FROM public.orders WHERE id = 3")
	if !del.Raced() {
		t.Fatal("a DELETE across another session's autocommit UPDATE did not race")
	}
	upd := run(b, ms(31), ms(34)+14, "UPDATE public.orders SET id = 3 WHERE id = 3")
	if !upd.Raced() {
		t.Error("an UPDATE whose commit a DELETE, which raced already, waited for did not race")
	}
	run(c, ms(35), ms(35), "COMMIT")

	// A statement across two commits: the statements of both race.
	run(a, ms(40), ms(40), "BEGIN")
	first := run(a, ms(40)+10, ms(40)+20, "UPDATE public.orders SET id = 4 WHERE id = 4")
	run(c, ms(40)+30, ms(40)+40, "BEGIN")
	second := run(c, ms(40)+50, ms(40)+60, "UPDATE public.orders SET id = 5 WHERE id = 5")
	run(a, ms(41), ms(41)+10, "COMMIT")
	run(c, ms(42), ms(42)+10, "COMMIT")
	if !run(b, ms(40)+70, ms(43), "SELECT * FROM public.orders").Raced() {
		t.Fatal("a read across two commits of its table did not race")
	}
	if !first.Raced() || !second.Raced() {
		t.Errorf("the statements of the transactions a read ran across raced: %v and %v, want both", first.Raced(), second.Raced())
	}
}

// TestRaceSettled: a statement's Race is settled once the Tracker no
// longer keeps it for a transaction that ends after it.
func TestRaceSettled(t *testing.T) {
	tr := newShop(Object)
	a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
	st := run(a, ms(1), ms(2), "SELECT * FROM public.orders")
	if st.Race == nil || st.Race.Settled() {
		t.Fatal("a read is settled as soon as read")
	}
	for i := range int64(maxLate) {
		run(b, ms(10+i), ms(10+i), "SELECT * FROM public.orders")
	}
	if !st.Race.Settled() || st.Raced() {
		t.Errorf("settled %v, raced %v after %d later statements: want settled, not raced", st.Race.Settled(), st.Raced(), maxLate)
	}
}

// execText is s's step for sql executed from start to end with the
// parameters given, as text.
func execText(s *Session, start, end int64, sql string, params ...string) Step {
	ps := make([]event.Param, len(params))
	for i, p := range params {
		ps[i] = event.Param{Value: p}
	}
	return s.Event(Exec{Start: start, End: end, Items: cache.Get(sql), Text: sql, Params: ps, ParamState: event.ParamsComplete})
}

// TestRaceKinds: a point statement races by row only with a transaction
// that wrote its key; another key's write is no race at all, and a write
// or read whose rows cannot be bounded (no key in the predicate) races
// relation-wide, counted apart; never merged.
func TestRaceKinds(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", keyedCatalog())
	a, b := tr.Session("db", "a"), tr.Session("db", "b")
	ev := execText
	const upd = "UPDATE public.accounts SET n = n + 1 WHERE id = $1"
	const get = "SELECT n FROM public.accounts WHERE id = $1"
	// a's autocommit UPDATE of key 1 ends while b reads key 1: by row.
	ev(a, ms(1), ms(2), upd, "1")
	if st := ev(b, ms(1)+500, ms(3), get, "1"); st.Race.Kind() != RaceRow {
		t.Errorf("a read of key 1 across a commit that wrote key 1: %v, want RaceRow", st.Race.Kind())
	}
	// A read of another key across a write of key 1: no race.
	ev(a, ms(10), ms(11), upd, "1")
	if st := ev(b, ms(10)+500, ms(12), get, "2"); st.Raced() {
		t.Errorf("a read of key 2 across a commit that wrote only key 1 raced (%v)", st.Race.Kind())
	}
	// A range read of the primary key across a write by key in the
	// range: by row; out of it, no race; across a write by key of a
	// table without an integer key, or a read of a range of another
	// column: relation-wide (ranges.go).
	const rng = "SELECT n FROM public.accounts WHERE id BETWEEN $1 AND $2"
	ev(a, ms(20), ms(21), upd, "1")
	if st := ev(b, ms(20)+500, ms(22), rng, "1", "100"); st.Race.Kind() != RaceRow {
		t.Errorf("a range read across a write by key in it: %v, want RaceRow", st.Race.Kind())
	}
	ev(a, ms(23), ms(24), upd, "101")
	if st := ev(b, ms(23)+500, ms(25), rng, "1", "100"); st.Raced() {
		t.Errorf("a range read across a write by key out of it raced (%v)", st.Race.Kind())
	}
	ev(a, ms(26), ms(27), upd, "150")
	if st := ev(b, ms(26)+500, ms(28), "SELECT n FROM public.accounts WHERE id >= $1", "120"); st.Race.Kind() != RaceRow {
		t.Errorf("a range open above across a write by key in it: %v, want RaceRow", st.Race.Kind())
	}
	ev(a, ms(28)+100, ms(28)+400, upd, "1")
	if st := ev(b, ms(28)+200, ms(29), "SELECT n FROM public.accounts WHERE n BETWEEN $1 AND $2", "1", "100"); st.Race.Kind() != RaceRelation {
		t.Errorf("a range of another column across a write by key: %v, want RaceRelation", st.Race.Kind())
	}
	// A point read across a write without a key: relation-wide.
	ev(a, ms(30), ms(31), "UPDATE public.accounts SET n = 0 WHERE n > $1", "5")
	if st := ev(b, ms(30)+500, ms(32), get, "7"); st.Race.Kind() != RaceRelation {
		t.Errorf("a point read across a write without a key: %v, want RaceRelation", st.Race.Kind())
	}
	// A race relation-wide becomes one by row when a commit logged just
	// after it wrote its key (RaceSlack); the kind never goes back.
	late := ev(b, ms(40), ms(41), get, "9")
	ev(a, ms(40)+100, ms(41)+200, upd, "9")
	if late.Race.Kind() != RaceRow || !late.Race.Settled() {
		t.Errorf("a read whose key a commit logged just after it wrote: %v, settled %v; want RaceRow, settled", late.Race.Kind(), late.Race.Settled())
	}
	ev(a, ms(40)+150, ms(41)+300, "UPDATE public.accounts SET n = 0 WHERE n > $1", "5")
	if late.Race.Kind() != RaceRow {
		t.Errorf("a race by row went back to %v", late.Race.Kind())
	}
}
