package syncdep

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// t0 is a log time in µs with milliseconds, as PostgreSQL logs them.
const t0 = int64(1_772_359_200_000_000)

// ms is a log line time t0 + n ms.
func ms(n int64) int64 { return t0 + n*1000 }

var cache = fingerprint.NewCache(0)

// run feeds a session one execution event that started at start (µs)
// and was logged at line (µs).
func run(s *Session, start, line int64, sql string, failed ...bool) Step {
	return s.Event(Exec{Start: start, End: line, Items: cache.Get(sql), Text: sql, Failed: len(failed) > 0 && failed[0]})
}

func newShop(mode Mode) *Tracker {
	tr := NewTracker(mode)
	tr.SetCatalog("shop", shopCatalog())
	return tr
}

func TestProducerConsumer(t *testing.T) {
	tr := newShop(Object)
	b := tr.Board()
	prod, cons, other := tr.Session("shop", "producer"), tr.Session("shop", "consumer"), tr.Session("shop", "other")

	if st := run(prod, ms(1), ms(1), "BEGIN"); !st.Wait.None() || st.Commit != nil {
		t.Fatalf("BEGIN: %+v", st)
	}
	if st := run(prod, ms(2)-300, ms(2), "INSERT INTO public.orders (id) VALUES (7)"); st.Commit != nil && st.Commit.Position() != 0 {
		t.Fatal("an INSERT inside a block committed")
	}
	commit := run(prod, ms(3)-200, ms(3), "COMMIT").Commit
	if commit == nil || commit.Seq() != 1 || commit.Owner() != "producer" {
		t.Fatalf("COMMIT: %+v", commit)
	}
	// The consumer's INSERT names only shipments; its foreign key
	// reads orders, which the producer's commit wrote before the
	// INSERT started.
	ship := run(cons, ms(4)-100, ms(4), "INSERT INTO shipments (order_id) VALUES (7)")
	if got := b.Blocker(ship.Wait); got != commit {
		t.Fatalf("the shipment waits for %v, want the producer's commit", got)
	}
	if ship.Commit == nil {
		t.Fatal("an autocommit INSERT is its own transaction")
	}
	// Another schema's orders does not wait.
	if got := b.Blocker(run(other, ms(5)-100, ms(5), "SELECT * FROM archive.orders").Wait); got != nil {
		t.Errorf("archive.orders waits for %v", got)
	}
	// Read-only autocommit statements commit nothing.
	if st := run(other, ms(6)-100, ms(6), "SELECT * FROM public.orders"); st.Commit != nil || st.Wait.None() {
		t.Errorf("a SELECT of orders: %+v", st)
	}
	select {
	case <-commit.Wait():
		t.Fatal("Wait closed before Done")
	default:
	}
	commit.Done()
	<-commit.Wait()
	if got := b.Blocker(ship.Wait); got != nil {
		t.Errorf("after Done the shipment still waits for %v", got)
	}
	ship.Commit.Done()
	if n := b.Pending(); n != 0 {
		t.Errorf("%d pending after all Done", n)
	}
}

// TestCutAtStart: a statement waits for commits logged before it
// started, counting those logged in the same millisecond (the log cannot
// tell them apart), and never for one logged later, which may have
// waited for the statement's own transaction.
func TestCutAtStart(t *testing.T) {
	tr := newShop(Object)
	a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
	c1 := run(a, ms(10)-50, ms(10), "INSERT INTO orders (id) VALUES (1)").Commit
	c2 := run(a, ms(20)-50, ms(20), "INSERT INTO orders (id) VALUES (2)").Commit
	// Started at 20.3 ms, logged at 21 ms: c2 was logged at 20 ms, in
	// the same tick as the start.
	w := run(b, ms(21)-700, ms(21), "UPDATE orders SET state = 'x' WHERE id = 2").Wait
	// Started at 18.5 ms: c2, logged at 20 ms, ended at least a
	// millisecond after it. (A read: a write would wait for it, see
	// TestLockCut.)
	w2 := run(b, ms(30)-11_500, ms(30), "SELECT * FROM orders WHERE id = 1").Wait
	if got := tr.Board().Blocker(w); got != c1 {
		t.Errorf("first waits for %v, want c1", got)
	}
	c1.Done()
	if got := tr.Board().Blocker(w); got != c2 {
		t.Errorf("first then waits for %v, want c2", got)
	}
	if got := tr.Board().Blocker(w2); got != nil {
		t.Errorf("the statement that started before c2 waits for %v", got)
	}
	if w2.None() {
		t.Error("w2 should still have waited for c1 (done now)")
	}
}

func TestCommitMode(t *testing.T) {
	tr := newShop(Commit)
	a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
	c := run(a, ms(1), ms(1), "INSERT INTO archive.orders (id) VALUES (1)").Commit
	w := run(b, ms(3), ms(3), "SELECT * FROM shipments").Wait
	if got := tr.Board().Blocker(w); got != c {
		t.Errorf("commit mode: waits for %v, want every earlier commit", got)
	}
	if !run(b, ms(4), ms(4), "SET work_mem = '64MB'").Wait.None() {
		t.Error("SET waits")
	}
	if !run(b, ms(5), ms(5), "BEGIN").Wait.None() {
		t.Error("BEGIN waits")
	}
}

func TestTransactionsRolledBack(t *testing.T) {
	tr := newShop(Object)
	a := tr.Session("shop", "a")
	for _, tc := range []struct {
		name string
		evs  []string
		fail int // index of the event that failed in the original, -1 none
		want bool
	}{
		{"autocommit", []string{"INSERT INTO orders VALUES (1)"}, -1, true},
		{"autocommit failed", []string{"INSERT INTO orders VALUES (1)"}, 0, false},
		{"rollback", []string{"BEGIN", "INSERT INTO orders VALUES (1)", "ROLLBACK"}, -1, false},
		{"abort", []string{"BEGIN", "INSERT INTO orders VALUES (1)", "ABORT"}, -1, false},
		{"failed in block", []string{"BEGIN", "INSERT INTO orders VALUES (1)", "INSERT INTO orders VALUES (1)", "COMMIT"}, 2, false},
		{"commit failed", []string{"BEGIN", "INSERT INTO orders VALUES (1)", "COMMIT"}, 2, false},
		{"savepoint", []string{"BEGIN", "SAVEPOINT s", "INSERT INTO orders VALUES (1)", "ROLLBACK TO SAVEPOINT s", "END"}, -1, true},
		{"one string", []string{"BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; UPDATE orders SET state = 'a'; COMMIT"}, -1, true},
		{"implicit", []string{"INSERT INTO orders VALUES (1); INSERT INTO orders VALUES (2)"}, -1, true},
		{"implicit failed", []string{"INSERT INTO orders VALUES (1); SELECT 1/0"}, 0, false},
		{"read only", []string{"BEGIN", "SELECT * FROM orders", "COMMIT"}, -1, false},
	} {
		var commits int
		for i, sql := range tc.evs {
			st := run(a, ms(int64(i)), ms(int64(i)), sql, i == tc.fail)
			if st.Commit != nil {
				commits++
				st.Commit.Done()
			}
		}
		if want := map[bool]int{true: 1, false: 0}[tc.want]; commits != want {
			t.Errorf("%s: %d commits, want %d", tc.name, commits, want)
		}
		a.End()
		a = tr.Session("shop", "a")
	}
}

func TestCommitAndChain(t *testing.T) {
	tr := newShop(Object)
	a := tr.Session("shop", "a")
	run(a, ms(1), ms(1), "BEGIN")
	run(a, ms(2), ms(2), "INSERT INTO orders VALUES (1)")
	if run(a, ms(3), ms(3), "COMMIT AND CHAIN").Commit == nil {
		t.Fatal("COMMIT AND CHAIN did not commit")
	}
	// Still in a block: the next INSERT waits for COMMIT.
	if run(a, ms(4), ms(4), "INSERT INTO orders VALUES (2)").Commit != nil {
		t.Fatal("the chained transaction committed at its first statement")
	}
	if run(a, ms(5), ms(5), "COMMIT").Commit == nil {
		t.Fatal("the chained transaction did not commit")
	}
}

func TestTwoPhaseCommit(t *testing.T) {
	tr := newShop(Object)
	a, b, c := tr.Session("shop", "a"), tr.Session("shop", "b"), tr.Session("shop", "c")
	run(a, ms(1), ms(1), "BEGIN")
	run(a, ms(2), ms(2), "INSERT INTO orders VALUES (1)")
	// Its Commit marks its run (COMMIT PREPARED waits for it), not a
	// commit.
	if st := run(a, ms(3), ms(3), "PREPARE TRANSACTION 'g1'"); st.Commit == nil || st.Commit.Position() != 0 {
		t.Fatal("PREPARE TRANSACTION committed")
	} else {
		st.Commit.Done()
	}
	// Not committed yet: a reader does not wait.
	if got := tr.Board().Blocker(run(c, ms(4), ms(4), "SELECT * FROM orders").Wait); got != nil {
		t.Fatalf("waits for %v before COMMIT PREPARED", got)
	}
	cp := run(b, ms(5), ms(5), "COMMIT PREPARED 'g1'").Commit
	if cp == nil || cp.Owner() != "b" {
		t.Fatalf("COMMIT PREPARED: %+v", cp)
	}
	if got := tr.Board().Blocker(run(c, ms(7), ms(7), "SELECT * FROM orders").Wait); got != cp {
		t.Fatalf("waits for %v, want the COMMIT PREPARED", got)
	}
	run(a, ms(8), ms(8), "BEGIN")
	run(a, ms(9), ms(9), "INSERT INTO orders VALUES (2)")
	run(a, ms(10), ms(10), "PREPARE TRANSACTION 'g2'")
	if run(b, ms(11), ms(11), "ROLLBACK PREPARED 'g2'").Commit != nil {
		t.Fatal("ROLLBACK PREPARED committed")
	}
	if f := tr.Footprint(); f.Prepared != 0 {
		t.Errorf("%d prepared transactions kept", f.Prepared)
	}
}

// TestOpaque: DDL, DO and volatile functions make everything later wait
// for them, and wait for everything before them; a new session's
// connection waits for them (a role or database created) and for nothing
// else.
func TestOpaque(t *testing.T) {
	tr := newShop(Object)
	a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
	plain := run(a, ms(1), ms(1), "INSERT INTO orders VALUES (1)").Commit
	ddlStep := run(a, ms(2), ms(2), "CREATE ROLE app LOGIN")
	ddl := ddlStep.Commit
	if ddl == nil || !ddlStep.Barrier {
		t.Fatalf("DDL: %+v, want a commit and a barrier", ddlStep)
	}
	if st := run(a, ms(2), ms(2), "SELECT ship(1)"); st.Barrier || st.Commit == nil {
		t.Errorf("a volatile function call: %+v, want a commit of unknown writes, no barrier", st)
	} else {
		st.Commit.Done()
	}
	if got := tr.Board().Blocker(run(b, ms(3), ms(3), "SELECT * FROM shipments").Wait); got != ddl {
		t.Errorf("a statement after DDL waits for %v, want the DDL", got)
	}
	do := run(b, ms(4), ms(4), "DO $$BEGIN END$$")
	if got := tr.Board().Blocker(do.Wait); got != plain {
		t.Errorf("DO waits for %v, want the oldest commit", got)
	}
	do.Commit.Done()
	c := tr.Session("shop", "c")
	if got := tr.Board().Blocker(c.Start(ms(5))); got != ddl {
		t.Errorf("a new session waits for %v before connecting, want the DDL", got)
	}
	ddl.Done()
	if got := tr.Board().Blocker(c.Start(ms(5))); got != nil {
		t.Errorf("a new session waits for %v, an INSERT", got)
	}
}

// TestDatabasesApart: the same table name in two databases is two
// relations.
func TestDatabasesApart(t *testing.T) {
	tr := newShop(Object)
	tr.SetCatalog("other", shopCatalog())
	a, b := tr.Session("shop", "a"), tr.Session("other", "b")
	run(a, ms(1), ms(1), "INSERT INTO orders VALUES (1)")
	if got := tr.Board().Blocker(run(b, ms(3), ms(3), "SELECT * FROM orders").Wait); got != nil {
		t.Errorf("another database's orders waits for %v", got)
	}
}

// TestResolutionSeconds: a log with whole seconds (%t) counts commits of
// the same second as before.
func TestResolutionSeconds(t *testing.T) {
	tr := newShop(Object)
	a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
	sec := int64(1_000_000)
	c := run(a, t0+5*sec, t0+5*sec, "INSERT INTO orders VALUES (1)").Commit
	if got := tr.Board().Blocker(run(b, t0+5*sec-200, t0+5*sec, "SELECT * FROM orders").Wait); got != c {
		t.Errorf("same second: waits for %v, want the commit", got)
	}
	run(a, ms(6_001), ms(6_001), "SELECT 1") // a line with milliseconds
	c2 := run(a, ms(7_000), ms(7_000), "INSERT INTO orders VALUES (2)").Commit
	if got := tr.Board().Blocker(run(b, ms(6_500), ms(7_000), "SELECT * FROM orders").Wait); got == c2 {
		t.Error("with milliseconds known, a commit half a second after the start is waited for")
	}
}

func TestCutIndexThinning(t *testing.T) {
	var c cutIndex
	n := 3*maxCuts + 17
	for i := 1; i <= n; i++ {
		c.add(int64(i)*10, uint64(i))
	}
	if len(c.t) > maxCuts {
		t.Fatalf("%d entries, more than %d", len(c.t), maxCuts)
	}
	// Exact over the recent half; never above the truth anywhere, and
	// monotone.
	var prev uint64
	for i := 1; i <= n+1; i++ {
		got := c.before(int64(i)*10 + 1)
		truth := uint64(min(i, n))
		if got > truth {
			t.Fatalf("before(%d) = %d, above the truth %d", i*10+1, got, truth)
		}
		if got < prev {
			t.Fatalf("before not monotone at %d", i)
		}
		prev = got
		if i > n-maxCuts/4 && got != truth {
			t.Fatalf("recent before(%d) = %d, want %d", i*10+1, got, truth)
		}
	}
}

// TestMemoryBounded feeds a million events of sessions that come and go
// (each commit run on the target soon after, as the replay does) and
// checks that what the Tracker holds does not grow with the log.
func TestMemoryBounded(t *testing.T) {
	tr := newShop(Object)
	rng := rand.New(rand.NewPCG(1, 2))
	sessions := make([]*Session, 50)
	var inflight []*Txn
	for i := range sessions {
		sessions[i] = tr.Session("shop", i)
	}
	sqls := []string{"INSERT INTO orders VALUES (%d)", "UPDATE orders SET state = 'x' WHERE id = %d",
		"INSERT INTO shipments VALUES (%d)", "SELECT * FROM open_orders WHERE id = %d", "INSERT INTO tmp_%d VALUES (1)"}
	var peak Footprint
	for i := range 1_000_000 {
		k := rng.IntN(len(sessions))
		if rng.IntN(1000) == 0 {
			sessions[k].End()
			sessions[k] = tr.Session("shop", k)
		}
		sql := fmt.Sprintf(sqls[rng.IntN(len(sqls))], rng.IntN(100))
		st := run(sessions[k], ms(int64(i))-100, ms(int64(i)), sql)
		if st.Commit != nil {
			inflight = append(inflight, st.Commit)
		}
		if len(inflight) > 200 {
			for _, tx := range inflight[:100] {
				tx.Done()
			}
			inflight = append(inflight[:0], inflight[100:]...)
		}
		if i%10_000 == 0 {
			f := tr.Footprint()
			peak.Relations = max(peak.Relations, f.Relations)
			peak.Pending = max(peak.Pending, f.Pending)
			peak.Cuts = max(peak.Cuts, f.Cuts)
			peak.Sessions = max(peak.Sessions, f.Sessions)
		}
	}
	t.Logf("peak %+v", peak)
	if peak.Relations > 110 || peak.Pending > 201 || peak.Cuts > maxCuts || peak.Sessions != 50 {
		t.Errorf("footprint grew: %+v", peak)
	}
}

// TestBoardConcurrent runs Done and Blocker from many goroutines (under
// -race in CI): every waiter ends once all are Done.
func TestBoardConcurrent(t *testing.T) {
	tr := newShop(Object)
	a := tr.Session("shop", "a")
	var txs []*Txn
	for i := range 1000 {
		txs = append(txs, run(a, ms(int64(i)), ms(int64(i)), fmt.Sprintf("INSERT INTO orders VALUES (%d)", i)).Commit)
	}
	w := run(tr.Session("shop", "b"), ms(2000), ms(2000), "SELECT * FROM orders").Wait
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(txs); i += 4 {
				txs[i].Done()
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for tx := tr.Board().Blocker(w); tx != nil; tx = tr.Board().Blocker(w) {
				<-tx.Wait()
			}
		})
	}
	wg.Wait()
	if tr.Board().Pending() != 0 {
		t.Errorf("%d pending", tr.Board().Pending())
	}
}

// TestTablesDifferingInDigits: pg_query's fingerprint leaves out digits
// at the end of table names, so events_2025 and events_2026 share one;
// they are different relations, and a write to one does not make a
// statement on the other wait.
func TestTablesDifferingInDigits(t *testing.T) {
	tr := NewTracker(Object)
	tr.SetCatalog("db", &Catalog{Relations: []Relation{
		{OID: 1, Schema: "public", Name: "own_10", Kind: 'r'}, {OID: 2, Schema: "public", Name: "own_11", Kind: 'r'}}})
	a, b := tr.Session("db", "a"), tr.Session("db", "b")
	if cache.Get("SELECT * FROM own_10")[0].Fingerprint != cache.Get("SELECT * FROM own_11")[0].Fingerprint {
		t.Log("the fingerprints differ now; the test still holds")
	}
	run(a, ms(1), ms(1), "INSERT INTO own_10 VALUES (1)")
	// Reads: an insert into a table without unique indexes is blind
	// and waits for nothing there.
	if got := tr.Board().Blocker(run(b, ms(3), ms(3), "SELECT * FROM own_11").Wait); got != nil {
		t.Errorf("own_11 waits for a write to own_10")
	}
	if got := tr.Board().Blocker(run(b, ms(4), ms(4), "SELECT * FROM own_10").Wait); got == nil {
		t.Errorf("own_10 does not wait for a write to own_10")
	}
}

// TestLockCut: a statement that writes or locks rows also waits for the
// commits on those relations logged while it ran (it may have waited for
// their row locks), within its first LockWindow; a read does not.
func TestLockCut(t *testing.T) {
	tr := newShop(Object)
	a, b := tr.Session("shop", "a"), tr.Session("shop", "b")
	during := run(a, ms(10)-50, ms(10), "UPDATE public.orders SET state = 'x' WHERE qty = 1").Commit
	late := run(a, ms(3000)-50, ms(3000), "UPDATE public.orders SET state = 'y' WHERE qty = 1").Commit
	other := run(a, ms(3001)-50, ms(3001), "INSERT INTO archive.orders VALUES (1)").Commit
	// b's statements ran from 5 ms to 4 s: during (10 ms) is within
	// their first second, late (3 s) is not.
	for _, tc := range []struct {
		sql  string
		want *Txn
	}{
		{"UPDATE public.orders SET state = 'z' WHERE qty = 1", during},
		{"SELECT * FROM public.orders WHERE qty = 1 FOR UPDATE", during},
		{"SELECT * FROM public.orders WHERE qty = 1", nil},
		{"INSERT INTO shipments VALUES (1)", nil}, // writes shipments; reads orders
	} {
		if got := tr.Board().Blocker(run(b, ms(5), ms(4000), tc.sql).Wait); got != tc.want {
			t.Errorf("%s waits for %v, want %v", tc.sql, got, tc.want)
		}
	}
	during.Done()
	if got := tr.Board().Blocker(run(b, ms(5), ms(4000), "UPDATE public.orders SET state = 'z' WHERE qty = 1").Wait); got != nil {
		t.Errorf("after the commit it ran beside is done, it waits for %v (late %v, other %v)", got, late, other)
	}
}

// TestNoRelationWaits: a statement that names no relation (a large
// object read, a builtin) still depends on another session's earlier
// GRANT: in commit mode it waits for every earlier commit, in object
// mode for those of unknown effect and for the large-object writes.
// Before, it waited for nothing, and failed with 42501 on the target
// (issue 39).
func TestNoRelationWaits(t *testing.T) {
	for _, mode := range []Mode{Object, Commit} {
		tr := NewTracker(mode)
		cat := shopCatalog()
		cat.Builtins = append(cat.Builtins, "lo_from_bytea", "loread", "lo_open")
		tr.SetCatalog("shop", cat)
		b := tr.Board()
		owner, reader := tr.Session("shop", "owner"), tr.Session("shop", "reader")
		create := run(owner, ms(1)-100, ms(1), "SELECT lo_from_bytea(4242, 'x')").Commit
		if create == nil {
			t.Fatalf("%v: a large object's creation committed nothing", mode)
		}
		grant := run(owner, ms(2)-100, ms(2), "GRANT SELECT ON LARGE OBJECT 4242 TO reader").Commit
		if grant == nil {
			t.Fatalf("%v: the GRANT committed nothing", mode)
		}
		get := run(reader, ms(3)-100, ms(3), "SELECT loread(lo_open(4242, 262144), 10)")
		if got := b.Blocker(get.Wait); got != create {
			t.Errorf("%v: the large object's read waits for %v, want its creation", mode, got)
		}
		// A statement that reaches nothing waits, in object mode, for
		// the GRANT only.
		one := run(reader, ms(4)-100, ms(4), "SELECT 1")
		want := grant
		if mode == Commit {
			want = create
		}
		if got := b.Blocker(one.Wait); got != want {
			t.Errorf("%v: SELECT 1 waits for %v, want %v", mode, got, want)
		}
		create.Done()
		if got := b.Blocker(get.Wait); got != grant {
			t.Errorf("%v: the read waits for %v, want the GRANT", mode, got)
		}
		grant.Done()
		if got := b.Blocker(get.Wait); got != nil {
			t.Errorf("%v: the read still waits for %v", mode, got)
		}
		// Transaction control never waits.
		if st := run(reader, ms(5)-100, ms(5), "BEGIN"); !st.Wait.None() {
			t.Errorf("%v: BEGIN waits: %+v", mode, st)
		}
	}
}

// TestFailedStringLeavesBlockOpen: BEGIN; ...; ROLLBACK sent as one
// string that failed in the original never ran its ROLLBACK: the
// session stayed in its aborted block, whose COMMIT later commits
// nothing (issue 39).
func TestFailedStringLeavesBlockOpen(t *testing.T) {
	tr := newShop(Object)
	a := tr.Session("shop", "a")
	run(a, ms(1), ms(1), "BEGIN; INSERT INTO public.orders (id) VALUES (1); ROLLBACK", true)
	if st := run(a, ms(2), ms(2), "INSERT INTO public.orders (id) VALUES (2)", true); st.Commit != nil {
		t.Errorf("a statement in the aborted block committed: %+v", st)
	}
	if st := run(a, ms(3), ms(3), "COMMIT"); st.Commit != nil {
		t.Errorf("the aborted block's COMMIT committed: %+v", st)
	}
	if st := run(a, ms(4), ms(4), "INSERT INTO public.orders (id) VALUES (3)"); st.Commit == nil {
		t.Error("after the block, an INSERT commits on its own")
	}
}
