package replay

import (
	"fmt"
	"testing"
)

// BenchmarkTakeClientBurst is the dispatcher's client taking on a burst:
// a log where n sessions of one client key end, then n begin (a pool
// that closes its connections at once, then opens them again). Each new
// session takes an ended one for its client (takeClient): none exited on
// the target yet, all exited, or every other one.
//
//	go test -run '^$' -bench TakeClientBurst ./internal/replay
func BenchmarkTakeClientBurst(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, exited := range []string{"running", "exited", "alternate"} {
			b.Run(fmt.Sprintf("%d/%s", n, exited), func(b *testing.B) {
				gs := make([][]*session, n)
				for i := range gs {
					s := &session{user: "u", db: "d", app: "a", warmed: make(chan struct{})}
					switch exited {
					case "exited":
						s.exited.Store(true)
					case "alternate":
						s.exited.Store(i%2 == 1)
					}
					gs[i] = []*session{s}
				}
				k := clientOf(0, gs[0][0])
				for b.Loop() {
					d := &dispatcher{}
					for _, g := range gs {
						d.freeClient(0, g)
					}
					for range n {
						if d.takeClient(k) == nil {
							b.Fatal("no client for a session after a burst of ends")
						}
					}
					if d.takeClient(k) != nil {
						b.Fatal("a client taken twice")
					}
				}
			})
		}
	}
}

// TestTakeClientOrder: an offered session that exited on the target is
// taken first, in the order they exited, one that exits after it was
// offered included; else the one the log ended first; never one twice,
// nor another client key's.
func TestTakeClientOrder(t *testing.T) {
	newS := func(app string) []*session {
		return []*session{{user: "u", db: "d", app: app, warmed: make(chan struct{})}}
	}
	d := &dispatcher{}
	a, b, c, e, other := newS("a"), newS("a"), newS("a"), newS("a"), newS("b")
	b[0].exited.Store(true) // exited before its end was read
	for _, g := range [][]*session{a, b, c, e, other} {
		d.freeClient(0, g)
	}
	// Exit after their ends were read, e first.
	e[0].exit()
	c[0].exit()
	k := clientOf(0, a[0])
	var got []*session
	for g := d.takeClient(k); g != nil; g = d.takeClient(k) {
		got = append(got, g[0])
	}
	want := []*session{b[0], e[0], c[0], a[0]}
	if len(got) != len(want) {
		t.Fatalf("took %d clients, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("client %d taken is not the one wanted (exited first, then in the log's order)", i)
		}
	}
	if g := d.takeClient(clientOf(0, other[0])); g == nil || g[0] != other[0] {
		t.Fatal("the other application's client was not its own")
	}
	if g := d.takeClient(clientOf(1, a[0])); g != nil {
		t.Fatal("a client taken in another lane")
	}
	// A session taken while running, exiting later, is not offered again.
	d.freeClient(0, newS("a"))
	g := d.takeClient(k)
	g[0].exit()
	if d.takeClient(k) != nil {
		t.Fatal("a client taken twice")
	}
}
