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
	// owner is, in a pooled replay, the logical session whose item it
	// is (nil: the session that runs it), seq its number there.
	owner *session
	seq   int64
}

// eventSize estimates the memory a queued event holds: the event
// (event.Event.Size; the dispatcher queues a copy of its own, see
// dispatcher.detach) and its place in a session's queue (itemBytes).
func eventSize(ev *event.Event) int64 { return ev.Size() + itemBytes }

// itemBytes is what an item holds of a queue: its share of a chunk (its
// place, and a part of the link to the next chunk). A queue holds whole
// chunks, so a session with a backlog holds besides its items at most a
// chunk's worth of room at each end (queueSlack).
const itemBytes = (int64(unsafe.Sizeof(chunk{})) + chunkItems - 1) / chunkItems

// chunkItems is the number of items a queue's chunk holds: 8 of 200
// bytes, 1.6 KiB. Small, for a session with one event queued (thousands
// of idle sessions, each with its next statement read ahead) holds a
// chunk, and one with a backlog up to two chunks' unused room; not
// smaller, for a chunk is taken from the pool every chunkItems items
// pushed (BenchmarkDryRunDispatch's CPU: 4 items cost some 5% more than
// 8 or 16, which were alike).
const chunkItems = 8

// queueSlack bounds what a queue holds beyond its items' itemBytes: the
// unused room of its first and last chunks. Only a session with items
// queued holds any; an empty queue gives its chunk back.
const queueSlack = 2 * int64(unsafe.Sizeof(chunk{}))

// chunk is a piece of a queue: items in order, then the next chunk.
type chunk struct {
	items [chunkItems]item
	next  *chunk
}

// chunks holds empty chunks (their items zeroed) for any queue to take.
var chunks = sync.Pool{New: func() any { return new(chunk) }}

// queue is one session's FIFO. The dispatcher pushes without ever
// blocking; the session pops, waiting when it is empty. Its items are in
// a list of chunks: a chunk goes back to the pool once consumed, and the
// last one when the queue empties, so a queue holds no more than its
// items and two chunks' room, whatever backlog it had before (a slice
// kept the capacity of the longest backlog: 39-44 MiB of them in a replay
// whose queued events were capped at 32 MiB).
type queue struct {
	mu sync.Mutex
	// head is the chunk popped from, at hi; tail the chunk pushed to, at
	// ti; both nil when the queue is empty. n is the items queued.
	head, tail *chunk
	hi, ti     int
	n          int
	closed     bool
	wake       chan struct{} // capacity 1: "something changed"
	b          *budget       // told when the session starves
	waiter     *task         // on the engine: the session parked for an item
}

func newQueue(b *budget) *queue { return &queue{wake: make(chan struct{}, 1), b: b} }

func (q *queue) push(it item) {
	q.mu.Lock()
	switch {
	case q.tail == nil:
		c := chunks.Get().(*chunk)
		q.head, q.tail, q.hi, q.ti = c, c, 0, 0
	case q.ti == chunkItems:
		c := chunks.Get().(*chunk)
		q.tail.next, q.tail, q.ti = c, c, 0
	}
	q.tail.items[q.ti] = it
	q.ti++
	q.n++
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
	if q.n == 0 {
		return item{}, false, q.closed
	}
	c := q.head
	it = c.items[q.hi]
	c.items[q.hi] = item{}
	q.hi++
	q.n--
	switch {
	case q.n == 0:
		// Every chunk but the last is consumed and given back
		// already: a chunk is made only for an item pushed into it.
		q.head, q.tail, q.hi, q.ti = nil, nil, 0, 0
		chunks.Put(c)
	case q.hi == chunkItems:
		q.head, q.hi = c.next, 0
		c.next = nil
		chunks.Put(c)
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
		empty := q.n == 0 && !q.closed
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
