package replay

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// TestQueueGivesBackMemory: a queue holds no more chunks than its items
// need, whatever backlog it held before: one that once held a long
// backlog and is then kept a few items long (its session consuming, the
// dispatcher refilling: it never empties) holds the chunks of those items
// and one more at most, and an empty one none; the items keep their
// order.
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
	held := func() int {
		n := 0
		for c := q.head; c != nil; c = c.next {
			n++
		}
		return n
	}
	check := func() {
		t.Helper()
		n, items := held(), next-want
		if bytes, most := int64(n)*int64(unsafe.Sizeof(chunk{})), int64(items)*itemBytes+queueSlack; bytes > most || items == 0 && n != 0 {
			t.Fatalf("the queue holds %d chunks (%d bytes) for %d items (at most %d bytes)", n, bytes, items, most)
		}
	}
	for range 20_000 {
		push()
	}
	peak := held()
	check()
	for range 40_000 {
		// One in, two out until 10 are left, then one each.
		push()
		pop()
		if next-want > 10 {
			pop()
		}
		check()
	}
	if n := held(); n > (next-want+chunkItems-1)/chunkItems+1 {
		t.Errorf("the queue holds %d chunks (%d at its peak) with %d items left", n, peak, next-want)
	}
	for want < next {
		pop()
		check()
	}
	// Empty and filled again: the same order.
	for range 3 * chunkItems {
		push()
	}
	for want < next {
		pop()
	}
	check()
}

// recyclingSource is a sliceSource whose Recycle fills the events given
// back with another statement, as a log reader reads the next lines into
// them: a replay that still used an event it gave back would run that.
type recyclingSource struct {
	sliceSource
	recycled int
}

func (s *recyclingSource) Recycle(evs ...*event.Event) {
	for _, ev := range evs {
		*ev = event.Event{Kind: event.Statement, Time: ev.Time, Session: "recycled", User: "u", Database: "d", Query: "SELECT recycled FROM recycled"}
		s.recycled++
	}
}

// TestQueuedEventsDetached: the dispatcher queues copies of its own
// (event.Detach) and gives the source's events back to it: every
// statement replays as read, none as what the source later filled the
// events it got back with.
func TestQueuedEventsDetached(t *testing.T) {
	functionalCase(t)
	evs := evenLog(3, 10*time.Millisecond, 5*time.Second)
	for i, ev := range evs {
		ev.Query = fmt.Sprintf("SELECT %d", i%7)
	}
	src := &recyclingSource{sliceSource: sliceSource{evs: evs}}
	res := dryRun(t, Options{Speed: 0}, src)
	if src.recycled < len(evs)/2 {
		t.Fatalf("%d of %d events given back to the source", src.recycled, len(evs))
	}
	if res.Sessions.Total != 3 || res.Statements.Executed != int64(len(evs)) {
		t.Errorf("%d sessions, %+v statements; want 3 sessions, %d executed", res.Sessions.Total, res.Statements, len(evs))
	}
	for _, q := range res.Queries {
		if strings.Contains(q.Query, "recycled") {
			t.Errorf("ran %d times the text the source refilled a given-back event with: %s", q.Calls, q.Query)
		}
	}
}
