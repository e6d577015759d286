package coord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestFollowerWaitsAcrossShards: shard 1's consumer reads what shard 0's
// producer committed just before it in the log. In shard 1 its statement
// must wait for that commit until shard 0 says it ran, and no longer.
func TestFollowerWaitsAcrossShards(t *testing.T) {
	ms := group(t, 2, func(c *Config) { c.Poll = 20 * time.Millisecond })
	owner, here := ms[0], ms[1]
	shardOf := func(s string) int {
		if strings.HasPrefix(s, "producer") {
			return 0
		}
		return 1
	}
	tr := syncdep.NewTracker(syncdep.Object)
	tr.SetCatalog("shop", &syncdep.Catalog{})
	cache := fingerprint.NewCache(0)
	f := NewFollower(here, tr, cache, FollowOptions{ShardOf: shardOf})
	ev := func(kind event.Kind, sess, q string, at int64) *event.Event {
		return &event.Event{Kind: kind, Session: sess, Database: "shop", Query: q, Time: at, Duration: 100}
	}
	// Positions 1..4: the producer connects and inserts (shard 0), the
	// consumer connects and reads orders (shard 1, replayed here).
	f.Event(ev(event.Connect, "producer", "", 1_000_000), 1)
	f.Event(ev(event.Statement, "producer", "INSERT INTO orders VALUES (1)", 1_001_000), 2)
	consumer := tr.Session("shop", "consumer")
	here.Advance(3, false)
	step := consumer.Event(syncdep.Exec{Start: 1_002_000, End: 1_002_100, Items: cache.Get("UPDATE orders SET shipped = true WHERE id = 1"), Text: "UPDATE orders SET shipped = true WHERE id = 1"})
	here.Advance(4, step.Commit != nil)
	tx := tr.Board().Blocker(step.Wait)
	if tx == nil {
		t.Fatal("the consumer's update does not wait for the producer's commit in the other shard")
	}
	if p, ok := tx.Owner().(*Peer); !ok || p.Shard() != 0 {
		t.Fatalf("the awaited commit's owner is %#v, want shard 0's peer", tx.Owner())
	}
	select {
	case <-tx.Wait():
		t.Fatal("released before shard 0 ran it")
	case <-time.After(100 * time.Millisecond):
	}
	// Shard 0 reads the same log: its producer's insert is its commit.
	owner.Advance(1, false)
	owner.Advance(2, true)
	owner.Advance(3, false)
	owner.Advance(4, false)
	owner.Ran(2)
	select {
	case <-tx.Wait():
	case <-time.After(10 * time.Second):
		t.Fatal("not released after shard 0 ran it")
	}
	if tr.Board().Blocker(step.Wait) != nil {
		t.Error("the wait still blocks")
	}
	if why := tx.Owner().(*Peer).SyncGiveUp(); why != "" {
		t.Errorf("a commit that ran gives up with %q", why)
	}
	f.Event(ev(event.Disconnect, "producer", "", 1_003_000), 5)
	if f.Following() != 0 {
		t.Errorf("following %d sessions after the producer ended", f.Following())
	}
	// A commit of shard 0 read after it failed is released at once, and
	// its waiters learn why.
	if err := owner.Finish(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for here.Peer(0).SyncGiveUp() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	f.Event(ev(event.Statement, "producer2", "INSERT INTO orders VALUES (2)", 1_004_000), 6)
	if st := here.Stats(); len(st.Lost) != 1 || st.ReleasedLost != 1 {
		t.Errorf("stats %+v: want shard 0 lost and its later commit released", st)
	}
}
