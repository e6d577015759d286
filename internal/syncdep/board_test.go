package syncdep

import (
	"math/rand/v2"
	"testing"
)

// TestTxListOutOfOrder marks the transactions of a list done in shuffled
// orders, one stalling at the front for a while, and checks after every
// Done that the front is the oldest not done and that the list holds no
// more than twice the transactions not done (plus the sweep's slack).
func TestTxListOutOfOrder(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 1))
		b := newBoard()
		const n = 3000
		txs := make([]*Txn, n)
		for i := range txs {
			txs[i] = &Txn{b: b, seq: uint64(i + 1), writes: []uint32{uint32(i % 3)}}
			b.add(txs[i])
		}
		order := rng.Perm(n)
		if seed%2 == 0 {
			// The oldest is done last: everything else is behind it.
			for i, k := range order {
				if k == 0 {
					order[i], order[n-1] = order[n-1], order[i]
				}
			}
		}
		for step, k := range order {
			txs[k].Done()
			var oldest, live [3]int
			oldestAny := -1
			for i, tx := range txs {
				if tx.done {
					continue
				}
				if oldestAny < 0 {
					oldestAny = i
				}
				r := i % 3
				if live[r] == 0 {
					oldest[r] = i
				}
				live[r]++
			}
			if got := b.any.front(); (oldestAny < 0) != (got == nil) || got != nil && got != txs[oldestAny] {
				t.Fatalf("seed %d step %d: front of any is %v, want seq %d", seed, step, got, oldestAny+1)
			}
			if want := uint64(oldestAny + 1); oldestAny >= 0 && b.low.Load() != want {
				t.Fatalf("seed %d step %d: low %d, want %d", seed, step, b.low.Load(), want)
			}
			for r := range 3 {
				l := &b.rels[r]
				got := l.front()
				if (live[r] == 0) != (got == nil) || got != nil && got != txs[oldest[r]] {
					t.Fatalf("seed %d step %d: front of relation %d is %v, want seq %d", seed, step, r, got, oldest[r]+1)
				}
				if held := len(l.txs) - l.head; held > 2*live[r]+64 {
					t.Fatalf("seed %d step %d: relation %d holds %d transactions for %d not done", seed, step, r, held, live[r])
				}
			}
		}
		if b.Pending() != 0 {
			t.Fatalf("seed %d: %d pending after every Done", seed, b.Pending())
		}
	}
}

// TestTxnNotify: Done calls what Notify registered, once, after the
// transaction is marked (a waiter woken finds it done and off the Board),
// for a commit on the Board and a write off it alike; Lose too; Notify on
// a transaction done already keeps nothing and says so.
func TestTxnNotify(t *testing.T) {
	b := newBoard()
	on := &Txn{b: b, seq: 1, pos: 1, writes: []uint32{0}}
	b.add(on)
	off := &Txn{b: b} // a write by key: seq 0, not on the Board
	lost := &Txn{b: b, seq: 2, pos: 2, writes: []uint32{0}}
	b.add(lost)
	for _, tx := range []*Txn{on, off, lost} {
		calls := 0
		var sawDone, sawPending bool
		f := func() {
			calls++
			sawDone = tx.Ran()
			sawPending = b.any.front() == tx
		}
		if !tx.Notify(f) || !tx.Notify(f) {
			t.Fatalf("seq %d: Notify refused before Done", tx.seq)
		}
		if calls != 0 {
			t.Fatalf("seq %d: called before Done", tx.seq)
		}
		if tx == lost {
			tx.Lose()
		} else {
			tx.Done()
		}
		tx.Done() // a second Done calls nothing
		if calls != 2 || !sawDone || sawPending {
			t.Errorf("seq %d: %d calls (want 2, one per Notify), saw it done %v, still on the Board %v", tx.seq, calls, sawDone, sawPending)
		}
		if tx.Notify(f) || calls != 2 {
			t.Errorf("seq %d: Notify after Done kept f or called it (%d calls)", tx.seq, calls)
		}
	}
}

// TestLostSince: a wait that began before a commit it waited for was
// lost learns of it from LostSince, whichever commit it was waiting for
// when the loss came; once the lost commit left the Board, Blocker no
// longer tells it from one that ran (a shipment released as if the
// order's commit had run, then run without it, as in internal/cli's
// TestReplayCrashLosesParent on a busy machine). A loss before the wait
// began, or of a commit the wait does not depend on, is not the wait's;
// nor is a row's write that was lost, unless the wait is for that row.
func TestLostSince(t *testing.T) {
	tr := newShop(Object)
	b := tr.Board()
	a, c, other, cons := tr.Session("shop", "a"), tr.Session("shop", "c"), tr.Session("shop", "other"), tr.Session("shop", "consumer")
	first := run(a, ms(1)-100, ms(1), "INSERT INTO public.orders (id) VALUES (1)").Commit
	second := run(c, ms(2)-100, ms(2), "INSERT INTO public.orders (id) VALUES (2)").Commit
	unrelated := run(other, ms(3)-100, ms(3), "INSERT INTO archive.orders (id) VALUES (3)").Commit
	ship := run(cons, ms(4)-100, ms(4), "INSERT INTO shipments (order_id) VALUES (2)").Wait
	if got := b.Blocker(ship); got != first {
		t.Fatalf("the shipment waits for %v, want the first order's commit", seqOf(got))
	}
	mark := b.LostMark()
	unrelated.Lose()
	second.Lose() // while the wait is on the first
	first.Done()
	if got := b.Blocker(ship); got != nil {
		t.Fatalf("Blocker %v after both orders' commits left the Board", seqOf(got))
	}
	if got := b.LostSince(ship, mark); got != second {
		t.Errorf("LostSince %v, want the second order's commit, lost while the wait was on the first", seqOf(got))
	}
	if got := b.LostSince(ship, b.LostMark()); got != nil {
		t.Errorf("LostSince a mark after the loss: %v, want none (the wait came after it)", seqOf(got))
	}
	// A read of archive.orders depends on archive's commit alone.
	arch := run(tr.Session("shop", "archive"), ms(5)-100, ms(5), "SELECT * FROM archive.orders").Wait
	if got := b.LostSince(arch, mark); got != unrelated {
		t.Errorf("a read of archive.orders: LostSince %v, want archive's lost commit only", seqOf(got))
	}
	// A write by key, off the Board: only a wait for its row.
	row := &Txn{b: b}
	mark = b.LostMark()
	row.Lose()
	if got := b.LostSince(Wait{row: row}, mark); got != row {
		t.Errorf("a row's wait: LostSince %v, want the row's lost write", seqOf(got))
	}
	if got := b.LostSince(Wait{row: &Txn{b: b}}, mark); got != nil {
		t.Errorf("another row's wait: LostSince %v, want none", seqOf(got))
	}
}
