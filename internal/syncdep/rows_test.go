package syncdep

import (
	"fmt"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// runP feeds a session one execution event with bind parameters.
func runP(s *Session, at int64, sql string, params ...string) Step {
	ps := make([]event.Param, len(params))
	for i, p := range params {
		ps[i] = event.Param{Value: p, Null: p == "NULL"}
	}
	return s.Event(Exec{Start: at - 100, End: at, Items: cache.Get(sql), Text: sql, Params: ps})
}

// TestRowOrder: statements that reach a row by its key wait for the
// commits that wrote that row, or the whole table; not for those that
// wrote other rows by key. Statements that reach the table whole wait
// for every write of it, by key or not.
func TestRowOrder(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", keyedCatalog())
	b := tr.Board()
	w, r := tr.Session("db", "writer"), tr.Session("db", "reader")

	const upd = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	c7 := runP(w, ms(1), upd, "5", "7").Commit
	c8 := runP(w, ms(2), upd, "5", "8").Commit
	if c7 == nil || c8 == nil {
		t.Fatal("autocommit updates committed nothing")
	}
	for _, tc := range []struct {
		sql    string
		params []string
		want   *Txn
	}{
		{"SELECT * FROM accounts WHERE id = $1", []string{"7"}, c7},
		{"SELECT * FROM accounts WHERE id = $1", []string{" +8 "}, c8},
		{"SELECT * FROM accounts WHERE id = $1", []string{"9"}, nil},
		// Whole: waits for the first write of the table.
		{"SELECT * FROM accounts WHERE email = $1", []string{"x"}, c7},
		{"SELECT * FROM accounts", nil, c7},
		// The key is a constant of the logged text: read there.
		{"SELECT * FROM accounts WHERE id = 7", nil, c7},
		{"SELECT * FROM accounts WHERE id = 9", nil, nil},
		{"SELECT * FROM accounts WHERE id = '8'::int AND email = $1", []string{"x"}, c8},
		// A constant it does not read, or the parameter is NULL or
		// not a number: the whole table.
		{"SELECT * FROM accounts WHERE id = E'9'", nil, c7},
		{"SELECT * FROM accounts WHERE id = 9.0", nil, c7},
		{"SELECT * FROM accounts WHERE id = $1", []string{"NULL"}, c7},
		{"SELECT * FROM accounts WHERE id = $1", []string{"0x9"}, c7},
		{"SELECT * FROM accounts WHERE id = $1", nil, c7},
	} {
		st := runP(r, ms(3), tc.sql, tc.params...)
		if got := b.Blocker(st.Wait); got != tc.want {
			t.Errorf("%s %v waits for %v, want %v", tc.sql, tc.params, seqOf(got), seqOf(tc.want))
		}
	}
	// A write of the whole table is waited for by reads by key.
	whole := runP(w, ms(4), "UPDATE accounts SET balance = 0 WHERE email = $1", "x").Commit
	c7.Done()
	c8.Done()
	if got := b.Blocker(runP(r, ms(5), "SELECT * FROM accounts WHERE id = $1", "9").Wait); got != whole {
		t.Errorf("a read by key waits for %v, want the whole-table write %v", seqOf(got), seqOf(whole))
	}
	whole.Done()
	// A blind insert (no unique index) waits for nothing of its table;
	// reads of the table wait for it.
	ins := runP(w, ms(6), "INSERT INTO log (a) VALUES ($1)", "1")
	if ins.Commit == nil {
		t.Fatal("a blind insert committed nothing")
	}
	if got := b.Blocker(runP(r, ms(7), "INSERT INTO log (a) VALUES ($1)", "2").Wait); got != nil {
		t.Errorf("a blind insert waits for %v", seqOf(got))
	}
	if got := b.Blocker(runP(r, ms(8), "SELECT * FROM log").Wait); got != ins.Commit {
		t.Errorf("a read of log waits for %v, want the insert", seqOf(got))
	}
	// uuid keys compare by value.
	pu := runP(w, ms(9), "INSERT INTO pairs (a, u) VALUES ($1, $2)", "1", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11").Commit
	if got := b.Blocker(runP(r, ms(10), "SELECT * FROM pairs WHERE a = $1 AND u = $2", "1", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}").Wait); got != pu {
		t.Errorf("a read of the same uuid waits for %v", seqOf(got))
	}
	if st := runP(r, ms(11), "SELECT * FROM accounts WHERE id = $1", "1"); st.Rows != RowsByKey {
		t.Errorf("a read by key: %v", st.Rows)
	}
	if st := runP(r, ms(11), "SELECT * FROM accounts WHERE id = 1"); st.Rows != RowsByKey {
		t.Errorf("a read by a constant key: %v", st.Rows)
	}
	if st := runP(r, ms(11), "SELECT * FROM accounts WHERE id = E'1'"); st.Rows != RowsKeyNotLogged {
		t.Errorf("a read by an escaped constant key: %v", st.Rows)
	}
	if st := runP(r, ms(11), "SELECT * FROM accounts WHERE email = $1", "x"); st.Rows != RowsNone {
		t.Errorf("a read by another column: %v", st.Rows)
	}
}

func seqOf(t *Txn) any {
	if t == nil {
		return "nothing"
	}
	return t.Seq()
}

// TestRowLockCut: a write by key waits, on its row, for the commits
// logged while it ran (whose row locks it may have waited for), and not
// for those on other rows.
func TestRowLockCut(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", keyedCatalog())
	b := tr.Board()
	a, c := tr.Session("db", "a"), tr.Session("db", "c")
	const upd = "UPDATE accounts SET balance = $1 WHERE id = $2"
	// c's update started at 1 ms and was logged at 10 ms; a's commits
	// of rows 1 and 2 were logged in between.
	c1 := runP(a, ms(5), upd, "0", "1").Commit
	c2 := runP(a, ms(6), upd, "0", "2").Commit
	st := c.Event(Exec{Start: ms(1), End: ms(10), Items: cache.Get(upd), Text: upd, Params: []event.Param{{Value: "0"}, {Value: "1"}}})
	if got := b.Blocker(st.Wait); got != c1 {
		t.Errorf("waits for %v, want the commit of row 1", seqOf(got))
	}
	c1.Done()
	if got := b.Blocker(st.Wait); got != nil {
		t.Errorf("waits for %v after row 1's commit (row 2's is %d)", seqOf(got), c2.Seq())
	}
}

// TestRowWriteBeforeCommitLine: PostgreSQL releases a transaction's row
// locks before it logs its COMMIT, so the write that waited for the lock
// can be logged before that COMMIT. The later write must still wait for
// the earlier one to have run, or on the target it could take the row
// first.
func TestRowWriteBeforeCommitLine(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", keyedCatalog())
	b := tr.Board()
	early, late := tr.Session("db", "early"), tr.Session("db", "late")
	const upd = "UPDATE accounts SET balance = balance - $1 WHERE id = $2"
	runP(early, ms(1), "BEGIN")
	w := runP(early, ms(2), upd, "1", "3").Commit
	if w == nil || w.Position() != 0 {
		t.Fatalf("a write by key in a block: %+v", w)
	}
	runP(late, ms(3), "BEGIN")
	// late's UPDATE started at 2.5 ms, blocked on early's lock, and was
	// logged at 4 ms, before early's COMMIT line.
	st := late.Event(Exec{Start: ms(2) + 500, End: ms(4), Items: cache.Get(upd), Text: upd, Params: []event.Param{{Value: "2"}, {Value: "3"}}})
	if got := b.Blocker(st.Wait); got != w {
		t.Errorf("the later write waits for %v, want the earlier write", seqOf(got))
	}
	c := runP(early, ms(5), "COMMIT").Commit
	if c == nil || c.Position() != 1 {
		t.Fatalf("COMMIT: %+v", c)
	}
	// Another row's write does not wait.
	if got := b.Blocker(runP(late, ms(6), upd, "1", "4").Wait); got != nil {
		t.Errorf("a write of row 4 waits for %v", seqOf(got))
	}
	w.Done()
	if got := b.Blocker(st.Wait); got != nil {
		t.Errorf("after the earlier write ran, still waits for %v", seqOf(got))
	}
}

// TestRowLockChain: a write or lock by key waits for the last write or
// lock of its row by another session to have run, not for that
// transaction's commit (the server's row lock orders the two, as in the
// original), except where that transaction inserted the row, which is
// not visible before its commit. Reads by key wait for commits only.
func TestRowLockChain(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", keyedCatalog())
	b := tr.Board()
	a, c, d := tr.Session("db", "a"), tr.Session("db", "c"), tr.Session("db", "d")
	const upd = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	const sel = "SELECT balance FROM accounts WHERE id = $1"

	runP(a, ms(1), "BEGIN")
	wa := runP(a, ms(2), upd, "1", "5").Commit
	if wa == nil || wa.Position() != 0 || wa.Seq() != 0 {
		t.Fatalf("a write by key in a block: %+v", wa)
	}
	// A read of the row does not wait for a write not committed.
	if got := b.Blocker(runP(d, ms(3), sel, "5").Wait); got != nil {
		t.Errorf("a read waits for %v, an uncommitted write", seqOf(got))
	}
	ca := runP(a, ms(4), "COMMIT").Commit
	// c's update of row 5 starts after a's COMMIT line: it waits for
	// a's update to have run, not for the commit.
	runP(c, ms(5), "BEGIN")
	stc := runP(c, ms(6), upd, "2", "5")
	if got := b.Blocker(stc.Wait); got != wa {
		t.Errorf("c's write waits for %v, want a's write", seqOf(got))
	}
	wa.Done()
	if got := b.Blocker(stc.Wait); got != nil {
		t.Errorf("after a's write ran, c's waits for %v (a's commit is %v)", seqOf(got), seqOf(ca))
	}
	// A read does wait for the commit.
	if got := b.Blocker(runP(d, ms(7), sel, "5").Wait); got != ca {
		t.Errorf("a read waits for %v, want a's commit", seqOf(got))
	}
	// d's lock of row 5 waits for c's write only: c's waited for a's.
	runP(d, ms(8), "BEGIN")
	std := runP(d, ms(9), "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", "5")
	if got := b.Blocker(std.Wait); got != stc.Commit || got == nil {
		t.Errorf("d's lock waits for %v, want c's write %p", seqOf(got), stc.Commit)
	}
	stc.Commit.Done()
	if got := b.Blocker(std.Wait); got != nil {
		t.Errorf("d's lock waits for %v after c's write ran", seqOf(got))
	}
	// Its own session's writes are not waited for, nor other rows'.
	if got := b.Blocker(runP(d, ms(10), upd, "1", "5").Wait); got != nil {
		t.Errorf("d's write after its own lock waits for %v", seqOf(got))
	}
	if got := b.Blocker(runP(a, ms(10), upd, "1", "6").Wait); got != nil {
		t.Errorf("a write of row 6 waits for %v", seqOf(got))
	}
	// A write or lock that failed in the original holds nothing.
	runP(c, ms(11), "COMMIT")
	runP(c, ms(12), "BEGIN")
	failed := c.Event(Exec{Start: ms(12), End: ms(13), Items: cache.Get(upd), Text: upd, Failed: true, Params: []event.Param{{Value: "1"}, {Value: "7"}}})
	if failed.Commit != nil {
		t.Errorf("a failed write is waited for: %+v", failed.Commit)
	}

	// An insert by key: the next update of its row waits for its commit.
	const ins = "INSERT INTO plain (id, v) VALUES ($1, $2)"
	const updPlain = "UPDATE plain SET v = $1 WHERE id = $2"
	runP(a, ms(20), "BEGIN")
	wi := runP(a, ms(21), ins, "9", "0").Commit
	ci := runP(a, ms(22), "COMMIT").Commit
	wi.Done()
	stu := runP(c, ms(23), updPlain, "1", "9")
	if got := b.Blocker(stu.Wait); got != ci {
		t.Errorf("an update of an inserted row waits for %v, want the insert's commit %v", seqOf(got), seqOf(ci))
	}
	ca.Done()
	ci.Done()
	if got := b.Blocker(stu.Wait); got != nil {
		t.Errorf("after the insert committed, waits for %v", seqOf(got))
	}
	// An autocommit write by key is its own commit, and the next write of
	// its row waits for it.
	auto := runP(a, ms(24), updPlain, "2", "9").Commit
	if got := b.Blocker(runP(c, ms(25), updPlain, "3", "9").Wait); got != auto {
		t.Errorf("waits for %v, want the autocommit write %v", seqOf(got), seqOf(auto))
	}
}

// TestRowLockChainMany: an event that reaches several rows by key waits
// for the last write of each.
func TestRowLockChainMany(t *testing.T) {
	var w Wait
	b := newBoard()
	x, y := &Txn{b: b}, &Txn{b: b}
	w.addRow(x)
	w.addRow(x)
	w.addRow(y)
	if w.None() || len(w.rows) != 1 {
		t.Fatalf("wait: %+v", w)
	}
	if got := b.Blocker(w); got != x {
		t.Errorf("waits for %p, want %p", got, x)
	}
	x.Done()
	if got := b.Blocker(w); got != y {
		t.Errorf("waits for %p, want %p", got, y)
	}
	select {
	case <-y.Wait():
		t.Fatal("y's channel closed before Done")
	default:
	}
	y.Done()
	<-y.Wait()
	if got := b.Blocker(w); got != nil {
		t.Errorf("waits for %p after both ran", got)
	}
}

// TestRowLastSwept: the last writes by key that ran are let go now and
// then, with what they hold.
func TestRowLastSwept(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", keyedCatalog())
	s := tr.Session("db", "a")
	const upd = "UPDATE accounts SET balance = $1 WHERE id = $2"
	for i := range maxLasts {
		c := runP(s, ms(int64(i+1)), upd, "1", fmt.Sprint(i)).Commit
		if i < maxLasts-1 {
			c.Done()
		}
	}
	if n := len(tr.last); n != 1 {
		t.Errorf("%d entries after the sweep, want the one not run", n)
	}
}

// TestRowOrderBinaryKeys: a key a capture holds as the bytes of a binary
// parameter whose type the Parse left to the server (event.Param.Binary,
// as pgx and asyncpg send them) gives the key its text form gives: an
// int2, int4 or int8 by its value, a uuid by its 16 bytes, a text by its
// bytes. Bytes of no integer's length read as no key: the whole table.
func TestRowOrderBinaryKeys(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", keyedCatalog())
	b := tr.Board()
	w, r := tr.Session("db", "writer"), tr.Session("db", "reader")
	bin := func(n int, v int64) event.Param {
		s := make([]byte, n)
		for i := n - 1; i >= 0; i-- {
			s[i], v = byte(v), v>>8
		}
		return event.Param{Value: string(s), Binary: true}
	}
	run := func(s *Session, at int64, sql string, ps ...event.Param) Step {
		return s.Event(Exec{Start: at - 100, End: at, Items: cache.Get(sql), Text: sql, Params: ps})
	}

	const upd = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	c7 := runP(w, ms(1), upd, "5", "7").Commit
	cNeg := runP(w, ms(2), upd, "5", "-300").Commit
	c8 := run(w, ms(3), upd, bin(4, 5), bin(4, 8)).Commit
	if c7 == nil || cNeg == nil || c8 == nil {
		t.Fatal("autocommit updates committed nothing")
	}
	const sel = "SELECT * FROM accounts WHERE id = $1"
	for _, tc := range []struct {
		name string
		p    event.Param
		want *Txn
		rows RowOrder
	}{
		{"int4 7", bin(4, 7), c7, RowsByKey},
		{"int8 7", bin(8, 7), c7, RowsByKey},
		{"int2 7", bin(2, 7), c7, RowsByKey},
		{"int2 -300", bin(2, -300), cNeg, RowsByKey},
		{"int4 -300", bin(4, -300), cNeg, RowsByKey},
		{"int8 -300", bin(8, -300), cNeg, RowsByKey},
		{"text 8 after a binary write", event.Param{Value: "8"}, c8, RowsByKey},
		{"int4 9", bin(4, 9), nil, RowsByKey},
		// Not an integer's length: the whole table, whose first
		// write is row 7's.
		{"3 bytes", event.Param{Value: "\x00\x00\x07", Binary: true}, c7, RowsKeyNotLogged},
		// The same bytes as text: "\x00\x00\x00\x07" is no number.
		{"int4's bytes as text", event.Param{Value: "\x00\x00\x00\x07"}, c7, RowsKeyNotLogged},
	} {
		st := run(r, ms(4), sel, tc.p)
		if got := b.Blocker(st.Wait); got != tc.want || st.Rows != tc.rows {
			t.Errorf("%s: waits for %v (%v), want %v (%v)", tc.name, seqOf(got), st.Rows, seqOf(tc.want), tc.rows)
		}
	}
	// uuid and int8 keys of a binary insert, read back as text.
	u := "\xa0\xee\xbc\x99\x9c\x0b\x4e\xf8\xbb\x6d\x6b\xb9\xbd\x38\x0a\x11"
	pu := run(w, ms(5), "INSERT INTO pairs (a, u) VALUES ($1, $2)", bin(8, 1), event.Param{Value: u, Binary: true}).Commit
	if got := b.Blocker(runP(r, ms(6), "SELECT * FROM pairs WHERE a = $1 AND u = $2", "1", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11").Wait); got != pu {
		t.Errorf("a read of the same uuid in text waits for %v, want the binary insert %v", seqOf(got), seqOf(pu))
	}
	if got := b.Blocker(runP(r, ms(6), "SELECT * FROM pairs WHERE a = $1 AND u = $2", "2", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11").Wait); got != nil {
		t.Errorf("a read of another row waits for %v", seqOf(got))
	}
}
