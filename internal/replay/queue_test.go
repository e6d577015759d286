package replay

import (
	"testing"
	"time"
)

// TestQueueGivesBackMemory: a queue that once held a long backlog and is
// then kept a few items long (its session consuming, the dispatcher
// refilling: it never empties) gives the backlog's memory back, as one
// that drains does; the items keep their order.
func TestQueueGivesBackMemory(t *testing.T) {
	q := newQueue(newBudget(1<<30, 1<<30))
	next, want := 0, 0
	push := func() {
		q.push(item{due: time.Duration(next)})
		next++
	}
	pop := func() {
		t.Helper()
		it, ok, _ := q.tryPop()
		if !ok || it.due != time.Duration(want) {
			t.Fatalf("popped %v (ok %v), want item %d", it.due, ok, want)
		}
		want++
	}
	for range 20_000 {
		push()
	}
	peak := cap(q.items)
	for range 40_000 {
		// One in, two out until 10 are left, then one each.
		push()
		pop()
		if next-want > 10 {
			pop()
		}
	}
	if c := cap(q.items); c > 4096 {
		t.Errorf("the queue keeps room for %d items (%d at its peak) with %d left", c, peak, next-want)
	}
	for want < next {
		pop()
	}
}
