package syncdep

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Txn is a transaction of the log that wrote something: the Tracker
// makes one for the event that ends it (COMMIT, an autocommit statement,
// COMMIT PREPARED), and the replay calls Done once that event has run on
// the target, whatever its outcome there (a failure will not commit
// later either, so nothing must wait for it longer), or Lose when a
// fault kept it from running (its session's connection broke): its
// waiters are released then too, and can tell.
type Txn struct {
	b        *Board
	seq      uint64
	at       int64 // log time of the event that commits it
	owner    any
	writes   []uint32
	writeAll bool
	// schema: it ran a statement of unknown effect by its kind (DDL,
	// DO, CALL...), which may have made a table, a role or a function
	// that a read needs: the one kind of commit a read waits for in
	// Load mode. (It wrote anything too: writeAll.)
	schema bool
	// pos is its place among the log's commits (from 1), 0 for a write
	// or lock by key that is not a commit (see Step.Commit): that one is
	// not on the Board (seq 0), only waited for by the next write or
	// lock of its row (see Wait).
	pos  uint64
	done bool          // under b.mu
	ran  atomic.Bool   // done, for readers without the lock
	lost atomic.Bool   // set before done by Lose
	ch   chan struct{} // made when someone waits; closed by Done
	// notify is called by Done, after the lock (see Notify).
	notify []func()
}

// Lose marks the transaction as lost on the target (see Txn) and wakes
// its waiters, as Done does.
func (t *Txn) Lose() {
	t.lost.Store(true)
	t.Done()
}

// Lost reports whether Lose was called.
func (t *Txn) Lost() bool { return t.lost.Load() }

// At is the log time (µs since the epoch) of the event that commits it.
func (t *Txn) At() int64 { return t.at }

// Ran reports whether Done was called.
func (t *Txn) Ran() bool { return t.ran.Load() }

// Owner is the value given to Tracker.Session for the session whose event
// commits the transaction.
func (t *Txn) Owner() any { return t.owner }

// Seq is the transaction's place in the order of the Board, from 1 (the
// log's commit order); 0 for a write or lock by key that is not a commit
// (see Step.Commit), which is not on the Board.
func (t *Txn) Seq() uint64 { return t.seq }

// Position is the transaction's place in the log's commit order, from
// 1; 0 when it is a write or lock by key, not a commit (see Step.Commit).
func (t *Txn) Position() uint64 { return t.pos }

// Done marks the transaction as run on the target and wakes its waiters.
// It may be called once, from any goroutine.
func (t *Txn) Done() {
	b := t.b
	b.mu.Lock()
	if t.done {
		b.mu.Unlock()
		return
	}
	t.done = true
	t.ran.Store(true)
	if t.lost.Load() {
		// Kept in the order lost, for a wait that began before (see
		// LostSince): once off the lists below, Blocker no longer
		// names it.
		b.lost = append(b.lost, t)
		b.nLost.Store(uint64(len(b.lost)))
	}
	if t.seq != 0 {
		b.any.remove(t)
		if t.writeAll {
			b.unknown.remove(t)
		}
		if t.schema {
			b.schema.remove(t)
		}
		for _, id := range t.writes {
			b.rels[id].remove(t)
		}
		b.setLow()
		b.pending--
	} // else not on the Board (see pos)
	if t.ch != nil {
		close(t.ch)
	}
	notify := t.notify
	t.notify = nil
	b.mu.Unlock()
	for _, f := range notify {
		f()
	}
}

// Notify has Done call f, from the goroutine that calls it, once the
// transaction is marked done: for a waiter that is no goroutine of its
// own (a coroutine the replay parks). It returns false, and does not keep
// f, when the transaction is done already.
func (t *Txn) Notify(f func()) bool {
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.done {
		return false
	}
	t.notify = append(t.notify, f)
	return true
}

// Wait returns a channel closed when the transaction is Done.
func (t *Txn) Wait() <-chan struct{} {
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.ch == nil {
		t.ch = make(chan struct{})
		if t.done {
			close(t.ch)
		}
	}
	return t.ch
}

// Board holds the transactions of the log that the target has not run
// yet, by relation written, and answers which of them a Wait waits for.
// It is safe for concurrent use: the Tracker adds, sessions mark Done and
// ask.
type Board struct {
	mu      sync.Mutex
	rels    []txList // by relation id
	any     txList   // every transaction not Done
	unknown txList   // those that may have written anything
	schema  txList   // those that may have changed the schema (Txn.schema)
	pending int
	// low is the seq of the oldest transaction not Done, MaxUint64 when
	// none: a Wait whose cut is below it is satisfied without the lock.
	low atomic.Uint64
	// lost are the transactions Lost, in the order they were, on the
	// Board or not (a write by key); nLost is its length, for readers
	// without the lock (see LostSince).
	lost  []*Txn
	nLost atomic.Uint64
}

func newBoard() *Board {
	b := &Board{}
	b.low.Store(math.MaxUint64)
	return b
}

// txList is transactions in seq order (they are added in that order).
// Commits mostly run, but not always, in the log's order: one done at
// the front leaves at once; one done behind the front stays, marked
// done, until the front passes it or the done ones are half the list,
// when they are swept out in one pass. Removing a transaction so costs
// no search and no copy of the list (a speed-0 replay spent a tenth of
// its Done there), and the list stays within twice the transactions
// not done, whatever stalls at its front.
type txList struct {
	txs  []*Txn
	head int
	dead int // done transactions behind the front
}

func (l *txList) push(t *Txn) { l.txs = append(l.txs, t) }

// front returns the oldest transaction not done. Under b.mu.
func (l *txList) front() *Txn {
	if l.head == len(l.txs) {
		return nil
	}
	return l.txs[l.head]
}

// remove takes t, just marked done, out of the list. Under b.mu.
func (l *txList) remove(t *Txn) {
	if l.head == len(l.txs) {
		return
	}
	if l.txs[l.head] != t {
		l.dead++
		if live := len(l.txs) - l.head; l.dead >= 64 && 2*l.dead >= live {
			l.sweep()
		}
		return
	}
	l.txs[l.head] = nil
	l.head++
	for l.head < len(l.txs) && l.txs[l.head].done {
		l.txs[l.head] = nil
		l.head++
		l.dead--
	}
	switch {
	case l.head == len(l.txs):
		l.txs, l.head, l.dead = l.txs[:0], 0, 0
		if cap(l.txs) > 1024 {
			l.txs = nil // a backlog drained gives its memory back
		}
	case l.head >= 256 && 2*l.head >= len(l.txs):
		n := copy(l.txs, l.txs[l.head:])
		clear(l.txs[n:])
		l.txs, l.head = l.txs[:n], 0
	}
}

// sweep drops the done transactions behind the front.
func (l *txList) sweep() {
	kept := l.txs[:0]
	for _, t := range l.txs[l.head:] {
		if !t.done {
			kept = append(kept, t)
		}
	}
	clear(l.txs[len(kept):])
	l.txs, l.head, l.dead = kept, 0, 0
}

func (b *Board) setLow() {
	if t := b.any.front(); t != nil {
		b.low.Store(t.seq)
	} else {
		b.low.Store(math.MaxUint64)
	}
}

func (b *Board) add(t *Txn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.any.push(t)
	if t.writeAll {
		b.unknown.push(t)
	}
	if t.schema {
		b.schema.push(t)
	}
	for _, id := range t.writes {
		for int(id) >= len(b.rels) {
			b.rels = append(b.rels, txList{})
		}
		b.rels[id].push(t)
	}
	b.pending++
	b.setLow()
}

// Blocker returns a transaction that w still waits for (the oldest), or
// nil when w is satisfied. Once it returned nil for w it always will.
func (b *Board) Blocker(w Wait) *Txn {
	if w.cut == 0 && w.lockCut == 0 || b.low.Load() > max(w.cut, w.lockCut) {
		return w.rowBlocker()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var best *Txn
	consider := func(l *txList, cut uint64) {
		if t := l.front(); t != nil && t.seq <= cut && (best == nil || t.seq < best.seq) {
			best = t
		}
	}
	e := w.eff
	switch {
	case w.schema:
		consider(&b.schema, w.cut)
	case w.all || (e != nil && e.readAll):
		consider(&b.any, w.cut)
	default:
		consider(&b.unknown, w.cut)
		if e != nil {
			for _, id := range e.touch {
				if int(id) < len(b.rels) {
					consider(&b.rels[id], w.cut)
				}
			}
		}
	}
	if e != nil && w.lockCut > 0 {
		if e.lockAll {
			consider(&b.unknown, w.lockCut)
		}
		for _, id := range e.lock {
			if int(id) < len(b.rels) {
				consider(&b.rels[id], w.lockCut)
			}
		}
	}
	if best == nil {
		return w.rowBlocker()
	}
	return best
}

// LostMark is where a wait that begins now starts to look for the
// transactions lost while it waits (LostSince).
func (b *Board) LostMark() uint64 { return b.nLost.Load() }

// LostSince returns a transaction that w waited for and that was lost
// (Lose) after mark, a LostMark taken when the wait began, or nil when
// none was. A lost transaction leaves the Board as a done one does, so
// Blocker, once it no longer names any transaction, cannot tell that
// one of those it was waiting for was lost rather than run: a wait for
// the oldest of two commits, released when it runs, would not see the
// other's loss meanwhile, nor would a wait that saw its own commit done
// without asking how (a deadlock check's timer that fired with it).
// Those lost before mark are not the wait's: a statement that came after
// the loss waited for nothing.
func (b *Board) LostSince(w Wait, mark uint64) *Txn {
	if b.nLost.Load() <= mark || w.None() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.lost[min(mark, uint64(len(b.lost))):] {
		if w.awaits(t) {
			return t
		}
	}
	return nil
}

// awaits reports whether t is among the transactions w waits for, as
// Blocker chooses them, whether or not t is done.
func (w Wait) awaits(t *Txn) bool {
	if t.seq == 0 {
		return t == w.row || slices.Contains(w.rows, t)
	}
	e := w.eff
	if t.seq <= w.cut {
		switch {
		case w.schema:
			return t.schema
		case w.all || (e != nil && e.readAll) || t.writeAll:
			return true
		case e != nil && intersects(t.writes, e.touch):
			return true
		}
	}
	if e != nil && w.lockCut > 0 && t.seq <= w.lockCut {
		return e.lockAll && t.writeAll || intersects(t.writes, e.lock)
	}
	return false
}

// intersects reports whether a and b have an id in common.
func intersects(a, b []uint32) bool {
	for _, id := range a {
		if slices.Contains(b, id) {
			return true
		}
	}
	return false
}

// rowBlocker returns the write or lock by key that w still waits for
// (see Wait.row), nil when none.
func (w Wait) rowBlocker() *Txn {
	if w.row != nil && !w.row.Ran() {
		return w.row
	}
	for _, t := range w.rows {
		if !t.Ran() {
			return t
		}
	}
	return nil
}

// Pending counts the transactions not Done.
func (b *Board) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending
}
