package replay

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// item is one queued event with its schedule.
type item struct {
	ev   *event.Event
	due  time.Duration // offset from the clock's start
	size int64         // what it holds of the budget
	sync syncdep.Step  // what it waits for and commits, when synchronized
	// items are the event's statements when the dispatcher looked them
	// up (for sync), else nil; deps are the events it waits for when
	// its step is a barrier.
	items []fingerprint.Item
	deps  []dep
}

// eventSize estimates the memory a queued event holds: the event
// (event.Event.Size) and its place in a session's queue (itemBytes).
func eventSize(ev *event.Event) int64 { return ev.Size() + itemBytes }

// itemBytes is what an item holds of a queue: twice its size, for a
// queue's slice grows by doubling and is compacted only once mostly
// consumed (measured on a replay whose target fell behind: the queues'
// slices held as much memory as the events they queued, more than their
// items' own size).
const itemBytes = 2 * int64(unsafe.Sizeof(item{}))

// queue is one session's FIFO. The dispatcher pushes without ever
// blocking; the session pops, waiting when it is empty. Its slice is
// reused when it empties and compacted when mostly consumed, into a
// smaller one when it is far larger than what is left, so a backlog once
// drained, or mostly drained, does not keep its memory.
type queue struct {
	mu     sync.Mutex
	items  []item
	head   int
	closed bool
	wake   chan struct{} // capacity 1: "something changed"
	b      *budget       // told when the session starves
	waiter *task         // on the engine: the session parked for an item
}

func newQueue(b *budget) *queue { return &queue{wake: make(chan struct{}, 1), b: b} }

func (q *queue) push(it item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	w := q.waiter
	q.waiter = nil
	q.mu.Unlock()
	q.signal(w)
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	w := q.waiter
	q.waiter = nil
	q.mu.Unlock()
	q.signal(w)
}

func (q *queue) signal(w *task) {
	if w != nil {
		w.e.wake(w)
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// tryPop returns the next item, or ok false with closed telling whether
// none will ever come.
func (q *queue) tryPop() (it item, ok, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return item{}, false, q.closed
	}
	it = q.items[q.head]
	q.items[q.head] = item{}
	q.head++
	switch {
	case q.head == len(q.items):
		q.items = q.items[:0]
		q.head = 0
		if cap(q.items) > 4096 {
			q.items = nil // a drained backlog gives its memory back
		}
	case q.head >= 1024 && q.head*2 >= len(q.items):
		rest := q.items[q.head:]
		if c := cap(q.items); c > 4096 && c > 8*len(rest) {
			// A backlog that went down without draining gives its
			// memory back too: a session's queue kept refilled
			// would keep the most it ever held for the whole
			// replay (a queue's items are not counted against the
			// budget at their capacity).
			q.items = append(make([]item, 0, 2*len(rest)), rest...)
		} else {
			n := copy(q.items, rest)
			clear(q.items[n:])
			q.items = q.items[:n]
		}
		q.head = 0
	}
	return it, true, false
}

// pop waits for the next item; ok is false when the queue is closed and
// empty, or done is closed. t is the session's task on the engine, which
// parks while it waits; nil on a goroutine of its own.
func (q *queue) pop(done <-chan struct{}, t *task) (item, bool) {
	for t != nil {
		it, ok, closed := q.tryPop()
		if ok {
			return it, true
		}
		if closed {
			return item{}, false
		}
		q.mu.Lock()
		empty := q.head == len(q.items) && !q.closed
		if empty {
			q.waiter = t
		}
		q.mu.Unlock()
		if !empty {
			continue
		}
		q.b.starve(1)
		t.park()
		q.b.starve(-1)
		q.mu.Lock()
		q.waiter = nil
		q.mu.Unlock()
		select {
		case <-done:
			return item{}, false
		default:
		}
	}
	for {
		it, ok, closed := q.tryPop()
		if ok {
			return it, true
		}
		if closed {
			return item{}, false
		}
		q.b.starve(1)
		select {
		case <-q.wake:
			q.b.starve(-1)
		case <-done:
			q.b.starve(-1)
			return item{}, false
		}
	}
}

// budget counts the bytes of queued events against two limits. add never
// blocks; the dispatcher calls waitBudget when over.
//
// limit is the memory bound (Options.Budget). window, at speed 0, is
// smaller (Speed0Window): the dispatcher stops there while every session
// has something queued, and reads on up to limit only for a session that
// is starving (waiting for events with nothing queued). Starving sessions
// decide it, not a byte count alone, because at speed 0 sessions drift
// apart in log time: a fast session that drained its queue in the middle
// of a transaction holds row locks that the sessions holding the window
// wait for, and only reading its next events frees them.
//
// A waiting dispatcher is woken when the queues are down to three
// quarters of what it waits on, not as soon as one event drains: it then
// reads a batch of events in one go instead of waking once per event,
// which on a small machine takes CPU from the server being measured.
type budget struct {
	limit, window int64
	used          atomic.Int64
	starving      atomic.Int64  // sessions waiting with nothing queued
	waiting       atomic.Int64  // the level the dispatcher waits for; 0 when not waiting
	drained       chan struct{} // capacity 1
	// task is the dispatcher's on the engine, woken with drained.
	task atomic.Pointer[task]
}

func newBudget(limit, window int64) *budget {
	return &budget{limit: limit, window: min(window, limit), drained: make(chan struct{}, 1)}
}

func (b *budget) add(n int64) { b.used.Add(n) }

func (b *budget) release(n int64) {
	used := b.used.Add(-n)
	if w := b.waiting.Load(); w > 0 && used <= w {
		b.wakeDispatcher()
	}
}

func (b *budget) starve(n int64) {
	if b.starving.Add(n) > 0 && n > 0 && b.waiting.Load() > 0 {
		b.wakeDispatcher()
	}
}

func (b *budget) wakeDispatcher() {
	select {
	case b.drained <- struct{}{}:
	default:
	}
	if t := b.task.Load(); t != nil {
		t.e.wake(t)
	}
}

func (b *budget) over() bool { return b.used.Load() > b.limit }
