package replay

import (
	"container/heap"
	"time"
)

// deadlines holds values by their deadline, the earliest first: the
// engine's tasks waiting for their statements' time and the precise
// waker's channels. The zero value is empty.
type deadlines[T any] struct{ h deadlineItems[T] }

type deadlineItem[T any] struct {
	at time.Time
	v  T
}

// deadlineItems is the heap under deadlines (container/heap's interface).
type deadlineItems[T any] []deadlineItem[T]

func (h deadlineItems[T]) Len() int           { return len(h) }
func (h deadlineItems[T]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineItems[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineItems[T]) Push(x any)        { *h = append(*h, x.(deadlineItem[T])) }
func (h *deadlineItems[T]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = deadlineItem[T]{}
	*h = old[:len(old)-1]
	return e
}

// push adds v, due at at.
func (d *deadlines[T]) push(at time.Time, v T) { heap.Push(&d.h, deadlineItem[T]{at: at, v: v}) }

// next is the earliest deadline; false when there is none.
func (d *deadlines[T]) next() (time.Time, bool) {
	if len(d.h) == 0 {
		return time.Time{}, false
	}
	return d.h[0].at, true
}

// due reports whether the earliest deadline is at or before now.
func (d *deadlines[T]) due(now time.Time) bool {
	return len(d.h) > 0 && !d.h[0].at.After(now)
}

// popDue removes and returns the earliest value if it is due at now.
func (d *deadlines[T]) popDue(now time.Time) (T, bool) {
	if !d.due(now) {
		var zero T
		return zero, false
	}
	return heap.Pop(&d.h).(deadlineItem[T]).v, true
}
