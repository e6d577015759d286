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

// TestLinkRowsAcrossShards: a write by key inside a block of shard 0's
// session is followed in shard 1 with its parameters, so shard 1's next
// write of that row waits until shard 0 ran it (syncdep.Wait), although
// the block's COMMIT is not in the log yet; a write of another row does
// not wait.
func TestLinkRowsAcrossShards(t *testing.T) {
	ms := group(t, 2, func(c *Config) { c.Poll = 20 * time.Millisecond })
	owner, here := ms[0], ms[1]
	shardOf := func(s string) int {
		if s == "early" {
			return 0
		}
		return 1
	}
	tr := syncdep.NewTracker(syncdep.Object)
	tr.SetCatalog("bank", &syncdep.Catalog{
		Relations: []syncdep.Relation{{OID: 1, Schema: "public", Name: "accounts", Kind: 'r'}},
		Indexes:   []syncdep.Index{{Rel: 1, Primary: true, Columns: []syncdep.IndexColumn{{Name: "id", Type: 23, Deterministic: true}}}},
	})
	cache := fingerprint.NewCache(0)
	l := NewLink(shardOf, cache)
	l.Attach(here)
	l.Follow(tr, nil, nil)
	const upd = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	params := func(v ...string) []event.Param {
		ps := make([]event.Param, len(v))
		for i, s := range v {
			ps[i] = event.Param{Value: s}
		}
		return ps
	}
	for i, ev := range []event.Event{
		{Kind: event.Connect, Session: "early", Database: "bank", Time: 1_000_000},
		{Kind: event.Statement, Session: "early", Database: "bank", Query: "BEGIN", Time: 1_001_000, Duration: 10},
		{Kind: event.Execute, Session: "early", Database: "bank", Query: upd, Params: params("5", "7"), ParamState: event.ParamsComplete, Time: 1_002_000, Duration: 100},
	} {
		l.Foreign(&ev, int64(i+1))
	}
	if !l.Before(4) {
		t.Fatal("the member finished")
	}
	late := tr.Session("bank", "late")
	here.Advance(4, false)
	step := late.Event(syncdep.Exec{Start: 1_003_000, End: 1_003_100, Items: cache.Get(upd), Text: upd, Params: params("1", "7"), ParamState: event.ParamsComplete})
	here.Advance(5, step.Commit != nil)
	if step.Rows != syncdep.RowsByKey {
		t.Fatalf("the update of row 7 here: %v", step.Rows)
	}
	tx := tr.Board().Blocker(step.Wait)
	if tx == nil || tx.Position() != 0 {
		t.Fatalf("the update of row 7 waits for %+v, want shard 0's write of it in its block", tx)
	}
	if p, ok := tx.Owner().(*Peer); !ok || p.Shard() != 0 {
		t.Fatalf("the awaited write's owner is %#v, want shard 0's peer", tx.Owner())
	}
	other := late.Event(syncdep.Exec{Start: 1_004_000, End: 1_004_100, Items: cache.Get(upd), Text: upd, Params: params("1", "8"), ParamState: event.ParamsComplete})
	if got := tr.Board().Blocker(other.Wait); got != nil {
		t.Errorf("the update of row 8 waits for %+v", got)
	}
	// Shard 0 reads the same log and runs its write.
	owner.Advance(1, false)
	owner.Advance(2, false)
	owner.Advance(3, true)
	owner.Ran(3)
	select {
	case <-tx.Wait():
	case <-time.After(10 * time.Second):
		t.Fatal("not released after shard 0 ran the write")
	}
}

// TestFollowerAnswersMarksAcrossShards: in Answers mode, shard 1's
// commit (an autocommit insert into orders) comes after shard 0's read
// of orders in the log, so in shard 1 it waits for that read to have run
// until shard 0 says so (the read's mark, released by the Member as a
// commit is), and no longer.
func TestFollowerAnswersMarksAcrossShards(t *testing.T) {
	ms := group(t, 2, func(c *Config) { c.Poll = 20 * time.Millisecond })
	owner, here := ms[0], ms[1]
	shardOf := func(s string) int {
		if s == "reader" {
			return 0
		}
		return 1
	}
	tr := syncdep.NewTracker(syncdep.Answers)
	tr.SetLocal(func(o any) bool { _, peer := o.(*Peer); return !peer })
	tr.SetCatalog("shop", &syncdep.Catalog{Relations: []syncdep.Relation{{OID: 1, Schema: "public", Name: "orders", Kind: 'r'}}})
	cache := fingerprint.NewCache(0)
	f := NewFollower(here, tr, cache, FollowOptions{ShardOf: shardOf})
	ev := func(kind event.Kind, sess, q string, at int64) *event.Event {
		return &event.Event{Kind: kind, Session: sess, Database: "shop", Query: q, Time: at, Duration: 100}
	}
	f.Event(ev(event.Connect, "reader", "", 1_000_000), 1)
	f.Event(ev(event.Statement, "reader", "SELECT * FROM orders", 1_001_000), 2)
	writer := tr.Session("shop", "writer")
	here.Advance(3, false)
	step := writer.Event(syncdep.Exec{Start: 1_002_000, End: 1_002_100, Items: cache.Get("INSERT INTO orders VALUES (1)"), Text: "INSERT INTO orders VALUES (1)"})
	here.Advance(4, step.Commit != nil || step.Mark != nil)
	tx := tr.Board().Blocker(step.Wait)
	if tx == nil {
		t.Fatal("the insert does not wait for the read that came before it in the other shard")
	}
	if p, ok := tx.Owner().(*Peer); !ok || p.Shard() != 0 {
		t.Fatalf("the awaited read's owner is %#v, want shard 0's peer", tx.Owner())
	}
	select {
	case <-tx.Wait():
		t.Fatal("released before shard 0 ran the read")
	case <-time.After(100 * time.Millisecond):
	}
	// Shard 0 reads the same log: its read is its own mark.
	owner.Advance(1, false)
	owner.Advance(2, true)
	owner.Advance(3, false)
	owner.Advance(4, false)
	owner.Ran(2)
	select {
	case <-tx.Wait():
	case <-time.After(10 * time.Second):
		t.Fatal("not released after shard 0 ran the read")
	}
}
