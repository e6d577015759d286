package syncdep

import (
	"testing"
)

// TestLoadMode: in Load mode a statement that only reads waits for no
// commit of data, however it was made (a plain INSERT, a write through a
// trigger), only for those that changed the schema; what would fail or
// be lost otherwise waits as in Object mode: an INSERT whose foreign key
// reads the parent another session committed, an UPDATE by key of a row
// another session inserted, a SELECT FOR UPDATE, a read of large
// objects.
func TestLoadMode(t *testing.T) {
	tr := newShop(Load)
	b := tr.Board()
	prod, cons, reader := tr.Session("shop", "producer"), tr.Session("shop", "consumer"), tr.Session("shop", "reader")

	order := run(prod, ms(1)-100, ms(1), "INSERT INTO orders (id) VALUES (7)").Commit
	audited := run(prod, ms(2)-100, ms(2), "INSERT INTO audited VALUES (1)").Commit
	if order == nil || audited == nil {
		t.Fatal("autocommit INSERTs commit")
	}
	for _, q := range []string{
		"SELECT * FROM orders",
		"SELECT * FROM orders WHERE id = 7",
		"SELECT * FROM open_orders",
		"SELECT order_total(7)", // stable: reads anything
		"SELECT 1",
		"SELECT count(*) FROM orders o JOIN shipments s ON s.order_id = o.id",
	} {
		st := run(reader, ms(10)-100, ms(10), q)
		if got := b.Blocker(st.Wait); got != nil {
			t.Errorf("load mode: the read %q waits for %v", q, got)
		}
		if st.Commit != nil || st.Rows != RowsNone {
			t.Errorf("load mode: the read %q: %+v", q, st)
		}
	}
	// The child row's foreign key reads the parent: it waits, as in
	// Object mode (for the parent's table and, written through a
	// trigger, the commit of unknown effect).
	ship := run(cons, ms(11)-100, ms(11), "INSERT INTO shipments (order_id) VALUES (7)")
	if got := b.Blocker(ship.Wait); got != order {
		t.Fatalf("load mode: the child INSERT waits for %v, want the parent's commit", got)
	}
	// A lock of rows waits as a write does.
	lock := run(reader, ms(12)-100, ms(12), "SELECT * FROM orders FOR UPDATE")
	if got := b.Blocker(lock.Wait); got != order {
		t.Errorf("load mode: SELECT FOR UPDATE waits for %v, want the commit that wrote orders", got)
	}
	// An UPDATE by key of a row another session inserted waits for the
	// insert's commit: run first, it would update nothing.
	upd := run(cons, ms(13)-100, ms(13), "UPDATE orders SET state = 'x' WHERE id = 7")
	if got := b.Blocker(upd.Wait); got != order {
		t.Errorf("load mode: the UPDATE by key waits for %v, want the row's insert", got)
	}
	// Reading a large object another session made: lo_open fails
	// without it.
	lo := run(prod, ms(14)-100, ms(14), "SELECT lo_create(42)").Commit
	if lo == nil {
		t.Fatal("lo_create commits")
	}
	if got := b.Blocker(run(reader, ms(15)-100, ms(15), "SELECT loread(lo_open(42, 262144), 10)").Wait); got == nil {
		t.Error("load mode: a read of large objects waits for nothing")
	}
	order.Done()
	audited.Done()
	lo.Done()

	// DDL may create what a read needs: a read waits for it, and a new
	// session's connection too (its role), but not for a commit of data
	// through a trigger.
	ddl := run(prod, ms(20)-100, ms(20), "CREATE TABLE fresh (id int)").Commit
	trig := run(prod, ms(21)-100, ms(21), "INSERT INTO audited VALUES (2)").Commit
	if ddl == nil || trig == nil {
		t.Fatal("DDL and a write commit")
	}
	read := run(reader, ms(22)-100, ms(22), "SELECT * FROM fresh").Wait
	if got := b.Blocker(read); got != ddl {
		t.Errorf("load mode: a read after DDL waits for %v, want the DDL", got)
	}
	start := tr.Session("shop", "late").Start(ms(23))
	if got := b.Blocker(start); got != ddl {
		t.Errorf("load mode: a session's start waits for %v, want the DDL", got)
	}
	ddl.Done()
	if got := b.Blocker(read); got != nil {
		t.Errorf("load mode: the read waits for %v after the DDL ran, want nothing (the trigger's write is data)", got)
	}
	if got := b.Blocker(start); got != nil {
		t.Errorf("load mode: the session's start waits for %v after the DDL ran", got)
	}
	// In Object mode the same read waits for the trigger's write (of
	// unknown effect).
	ob := newShop(Object)
	w := run(ob.Session("shop", "p"), ms(1)-100, ms(1), "INSERT INTO audited VALUES (1)").Commit
	if got := ob.Board().Blocker(run(ob.Session("shop", "r"), ms(2)-100, ms(2), "SELECT * FROM orders").Wait); got != w {
		t.Errorf("object mode: the read waits for %v, want the write of unknown effect", got)
	}
}

func TestParseModeLoad(t *testing.T) {
	m, err := ParseMode("load")
	if err != nil || m != Load || m.String() != "load" {
		t.Fatalf("ParseMode(load) = %v, %v", m, err)
	}
	if _, err := ParseMode("loud"); err == nil {
		t.Fatal("ParseMode(loud) accepted")
	}
}

// TestLoadFreshInsert: in Load mode an INSERT that gives no column of a
// unique index (its key from a default: a sequence) conflicts with no row
// another session wrote by key, and no write by key of another row
// reaches it: it waits only for the whole relation's writes (a range
// update may have reached it); its commit counts as a write of the whole
// relation, which an UPDATE by key of the row it made waits for. In
// Object mode, and for an insert that gives a unique column, it waits
// for every write of the table.
func TestLoadFreshInsert(t *testing.T) {
	const upd = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	for _, mode := range []Mode{Load, Object} {
		tr := NewTracker(mode)
		tr.SetCatalog("db", keyedCatalog())
		b := tr.Board()
		w, in, later := tr.Session("db", "writer"), tr.Session("db", "inserter"), tr.Session("db", "later")
		byKey := runP(w, ms(1), upd, "5", "7").Commit
		whole := runP(w, ms(2), "UPDATE accounts SET balance = 0 WHERE balance < $1", "0").Commit
		if byKey == nil || whole == nil {
			t.Fatal("autocommit updates commit")
		}
		fresh := runP(in, ms(3), "INSERT INTO accounts (balance) VALUES ($1)", "1")
		named := runP(in, ms(4), "INSERT INTO accounts (email, balance) VALUES ($1, $2)", "a@b", "1")
		want := byKey
		if mode == Load {
			want = whole
		}
		if got := b.Blocker(fresh.Wait); got != want {
			t.Errorf("%s: the insert without a unique column waits for %v, want %v", mode, seqOf(got), seqOf(want))
		}
		if got := b.Blocker(named.Wait); got != byKey {
			t.Errorf("%s: the insert of an email waits for %v, want every write of the table", mode, seqOf(got))
		}
		whole.Done()
		if got := b.Blocker(fresh.Wait); mode == Load && got != nil {
			t.Errorf("load: the insert without a unique column still waits for %v, a write of another row by key", seqOf(got))
		}
		byKey.Done()
		named.Commit.Done()
		// The row it made, by key: waits for its commit.
		if got := b.Blocker(runP(later, ms(5), upd, "1", "8").Wait); got != fresh.Commit {
			t.Errorf("%s: an update by key after the insert waits for %v, want the insert's commit", mode, seqOf(got))
		}
	}
}

// TestPreparedOrder: a COMMIT PREPARED (or ROLLBACK PREPARED) of another
// session waits until the PREPARE TRANSACTION has run on the target: run
// first, it fails (42704). In every synchronized mode: the order is one
// whose absence makes an error.
func TestPreparedOrder(t *testing.T) {
	for _, mode := range []Mode{Load, Object, Commit} {
		tr := newShop(mode)
		a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
		run(a, ms(1), ms(1), "BEGIN")
		run(a, ms(2), ms(2), "SELECT 1")
		prep := run(a, ms(3), ms(3), "PREPARE TRANSACTION 'g1'").Commit
		if prep == nil || prep.Position() != 0 {
			t.Fatalf("%s: PREPARE TRANSACTION: %+v, want a mark of its run, not a commit", mode, prep)
		}
		cp := run(b, ms(5), ms(5), "COMMIT PREPARED 'g1'")
		if got := tr.Board().Blocker(cp.Wait); got != prep {
			t.Errorf("%s: COMMIT PREPARED waits for %v, want its PREPARE", mode, got)
		}
		prep.Done()
		if got := tr.Board().Blocker(cp.Wait); got != nil {
			t.Errorf("%s: COMMIT PREPARED still waits for %v", mode, got)
		}
		// A PREPARE that failed in the original is waited for by
		// nothing; a ROLLBACK PREPARED waits as COMMIT PREPARED does.
		run(a, ms(6), ms(6), "BEGIN")
		failed := a.Event(Exec{Start: ms(7), End: ms(7), Items: cache.Get("PREPARE TRANSACTION 'g2'"), Text: "PREPARE TRANSACTION 'g2'", Failed: true})
		if failed.Commit != nil || !run(b, ms(8), ms(8), "ROLLBACK PREPARED 'g2'").Wait.None() {
			t.Errorf("%s: a failed PREPARE is waited for", mode)
		}
		run(a, ms(9), ms(9), "BEGIN")
		p3 := run(a, ms(10), ms(10), "PREPARE TRANSACTION 'g3'").Commit
		if got := tr.Board().Blocker(run(b, ms(11), ms(11), "ROLLBACK PREPARED 'g3'").Wait); got != p3 || p3 == nil {
			t.Errorf("%s: ROLLBACK PREPARED waits for %v, want its PREPARE", mode, got)
		}
		if f := tr.Footprint(); f.Prepared != 0 {
			t.Errorf("%s: %d prepared transactions kept", mode, f.Prepared)
		}
	}
}

// TestLoadWritesWaitLess: in Load mode a write waits only where running
// first would fail or lose a write the original did not have (issue 58).
// With accounts' key filled by a sequence that had given 100 when the
// catalog was read: fresh inserts wait for no other fresh insert; an
// update by key of a row at or below 100 (there at the start) waits for
// none of them, one above waits for every earlier one (it may be the row
// one made); a write of the whole table waits for them all; an update by
// key of a row another session updated just before in autocommit does not
// wait for it (the server's row lock orders them), but one after the
// row's insert does, an insert after the row's delete, and a write after
// an update or lock held in a block (which could deadlock otherwise). In
// Object mode all of these wait.
func TestLoadWritesWaitLess(t *testing.T) {
	const upd = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	for _, mode := range []Mode{Load, Object} {
		cat := keyedCatalog()
		cat.Sequences = []KeySequence{{Rel: 1, Column: "id", Last: 100}}
		tr := NewTracker(mode)
		tr.SetCatalog("db", cat)
		b := tr.Board()
		a, c, d := tr.Session("db", "a"), tr.Session("db", "c"), tr.Session("db", "d")
		load := mode == Load
		done := func(ts ...*Txn) {
			for _, x := range ts {
				if x != nil {
					x.Done()
				}
			}
		}
		check := func(what string, st Step, want *Txn, loadWaits bool) {
			t.Helper()
			if !load || loadWaits {
				if got := b.Blocker(st.Wait); got != want {
					t.Errorf("%s: %s waits for %v, want %v", mode, what, seqOf(got), seqOf(want))
				}
			} else if got := b.Blocker(st.Wait); got != nil {
				t.Errorf("%s: %s waits for %v, want nothing", mode, what, seqOf(got))
			}
		}
		first := runP(a, ms(1), "INSERT INTO accounts (balance) VALUES ($1)", "1").Commit
		second := runP(c, ms(2), "INSERT INTO accounts (balance) VALUES ($1)", "2")
		check("a fresh insert after another", second, first, false)
		old := runP(d, ms(3), upd, "1", "7")
		check("an update by key of a row there at the start", old, first, false)
		newRow := runP(d, ms(4), upd, "1", "101")
		if got := b.Blocker(newRow.Wait); got != first && got != second.Commit {
			t.Errorf("%s: an update by key above the sequence's start waits for %v, want the fresh inserts", mode, seqOf(got))
		}
		whole := runP(d, ms(5), "UPDATE accounts SET balance = 0 WHERE balance < $1", "0")
		if got := b.Blocker(whole.Wait); got != first && got != second.Commit {
			t.Errorf("%s: an update of the whole table waits for %v, want the fresh inserts", mode, seqOf(got))
		}
		done(first, second.Commit, old.Commit, newRow.Commit, whole.Commit)

		// Row by row: an update after an autocommit update; after an
		// update and a lock held in a block.
		auto := runP(a, ms(9), upd, "1", "8")
		check("an update by key after another session's autocommit update of the row", runP(c, ms(9)+500, upd, "2", "8"), auto.Commit, false)
		done(auto.Commit)
		run(a, ms(10)-100, ms(10)-50, "BEGIN")
		held := runP(a, ms(10), upd, "1", "8")
		check("an update by key after another session's update of the row in a block", runP(c, ms(11), upd, "2", "8"), held.Commit, true)
		done(held.Commit, run(a, ms(12)-100, ms(12), "COMMIT").Commit)
		run(a, ms(13)-100, ms(13)-50, "BEGIN")
		locked := runP(a, ms(13), "SELECT * FROM accounts WHERE id = $1 FOR UPDATE", "9")
		check("an update by key after another session's lock of the row in a block", runP(c, ms(14), upd, "2", "9"), locked.Commit, true)
		done(locked.Commit, run(a, ms(15)-100, ms(15), "COMMIT").Commit)
		// The row's creator before its user, its deleter before its
		// re-inserter: waited for in both modes.
		run(a, ms(20)-100, ms(20)-50, "BEGIN")
		made := runP(a, ms(20), "INSERT INTO accounts (id, balance) VALUES ($1, $2)", "50", "0")
		check("an update by key after another session's insert of the row", runP(c, ms(21), upd, "1", "50"), made.Commit, true)
		done(made.Commit, run(a, ms(22)-100, ms(22), "COMMIT").Commit)
		run(a, ms(23)-100, ms(23)-50, "BEGIN")
		gone := runP(a, ms(23), "DELETE FROM plain WHERE id = $1", "60")
		check("an insert by key after another session's delete of the row", runP(d, ms(24), "INSERT INTO plain (id, v) VALUES ($1, $2)", "60", "0"), gone.Commit, true)
	}
}

// TestLoadFreshInsertRaces: in Load mode a fresh insert writes an id of
// its own (freshKey), and what read the relation as it committed still
// raced with it, as when its commit wrote the whole relation: a point
// read and a range read across it are relation-wide races.
func TestLoadFreshInsertRaces(t *testing.T) {
	cat := keyedCatalog()
	cat.Sequences = []KeySequence{{Rel: 1, Column: "id", Last: 100}}
	tr := NewTracker(Load)
	tr.SetCatalog("db", cat)
	a, b := tr.Session("db", "a"), tr.Session("db", "b")
	ev := execText
	const ins = "INSERT INTO accounts (balance) VALUES ($1)"
	ev(a, ms(1), ms(2), ins, "1")
	if st := ev(b, ms(1)+500, ms(3), "SELECT balance FROM accounts WHERE id = $1", "101"); st.Race.Kind() != RaceRelation {
		t.Errorf("a point read across a fresh insert: %v, want RaceRelation", st.Race.Kind())
	}
	ev(a, ms(10), ms(11), ins, "1")
	if st := ev(b, ms(10)+500, ms(12), "SELECT count(*) FROM accounts WHERE balance > $1", "0"); st.Race.Kind() != RaceRelation {
		t.Errorf("a range read across a fresh insert: %v, want RaceRelation", st.Race.Kind())
	}
}

// TestLoadBlockQueuesOnServer: in Load mode another session's lock or
// write of a row that a transaction block locked first with FOR UPDATE
// waits in the replay only until that first lock ran on the target: the
// block then holds the row, and the server's lock queue orders the two as
// it did for the application (the wait in the statement's time on the
// target, where a busy hour's contention shows). A block's first shared
// lock (FOR SHARE) does not hold others off so, nor does a first lock a
// savepoint came after (ROLLBACK TO lets it go): then the wait is for the
// block's last statement of the row, as in Object mode always.
func TestLoadBlockQueuesOnServer(t *testing.T) {
	const (
		upd    = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
		lockEx = "SELECT * FROM accounts WHERE id = $1 FOR UPDATE"
		lockSh = "SELECT * FROM accounts WHERE id = $1 FOR SHARE"
	)
	cases := []struct {
		name  string
		first string // the block's first lock of the row
		save  bool   // a SAVEPOINT between its first lock and its update
		// wantFirst: the other session's lock waits for the first lock;
		// else for the update.
		wantFirst map[Mode]bool
	}{
		{"FOR UPDATE, then UPDATE", lockEx, false, map[Mode]bool{Load: true, Object: false}},
		{"FOR SHARE, then UPDATE", lockSh, false, map[Mode]bool{Load: false, Object: false}},
		{"FOR UPDATE, SAVEPOINT, then UPDATE", lockEx, true, map[Mode]bool{Load: false, Object: false}},
	}
	for _, c := range cases {
		for _, mode := range []Mode{Load, Object} {
			tr := NewTracker(mode)
			tr.SetCatalog("db", keyedCatalog())
			b := tr.Board()
			a, o := tr.Session("db", "a"), tr.Session("db", "o")
			run(a, ms(1)-100, ms(1)-50, "BEGIN")
			first := runP(a, ms(1), c.first, "9").Commit
			if c.save {
				run(a, ms(2)-100, ms(2)-50, "SAVEPOINT s")
			}
			// The application's think time, then its update, holding the row.
			last := runP(a, ms(5), upd, "1", "9").Commit
			end := run(a, ms(6)-100, ms(6), "COMMIT").Commit
			if first == nil || last == nil {
				t.Fatalf("%s, %s: a block's lock and update of a row are waited for by the row's next", c.name, mode)
			}
			// Logged after the block's COMMIT, its lock wait on the
			// original's server from ms(2).
			other := runP(o, ms(6)+500, lockEx, "9")
			want := last
			if c.wantFirst[mode] {
				want = first
			}
			if got := b.Blocker(other.Wait); got != want {
				t.Errorf("%s, %s: the other session's FOR UPDATE waits for %v, want %v (first lock %v, update %v)",
					c.name, mode, seqOf(got), seqOf(want), seqOf(first), seqOf(last))
			}
			first.Done()
			if got := b.Blocker(other.Wait); c.wantFirst[mode] && got != nil {
				t.Errorf("%s, %s: once the block's first lock ran, the other session waits for %v, want nothing: the server queues it", c.name, mode, seqOf(got))
			}
			last.Done()
			if end != nil {
				end.Done()
			}
		}
	}
}
