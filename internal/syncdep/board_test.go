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
