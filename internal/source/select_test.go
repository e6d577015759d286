package source

import (
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// sliceSource yields events from memory, and takes back those given back.
type sliceSource struct {
	evs      []*event.Event
	next     int
	recycled int
}

func (s *sliceSource) Next() (*event.Event, error) {
	if s.next == len(s.evs) {
		return nil, io.EOF
	}
	s.next++
	return s.evs[s.next-1], nil
}

func (s *sliceSource) Name() string                { return "mem.log" }
func (s *sliceSource) Recycle(evs ...*event.Event) { s.recycled += len(evs) }

const t0 = 1_714_557_600_000_000 // 2024-05-01T10:00:00Z in µs

// workload is three sessions: p (db a, user u, app web), q (db b, user v,
// app batch), r (pgrehearse's own observer); each connects at 0 s, runs a
// statement at 1 s and at 3 s, and disconnects at 4 s. Line numbers name
// the events.
func workload() []*event.Event {
	var evs []*event.Event
	line := int64(0)
	add := func(k event.Kind, s, db, user, app string, at int64) {
		line++
		evs = append(evs, &event.Event{Kind: k, Session: s, Database: db, User: user, Application: app, Time: t0 + at, Line: line, Query: "SELECT 1"})
	}
	for _, s := range []struct{ id, db, user, app string }{
		{"p", "a", "u", "web"}, {"q", "b", "v", "batch"}, {"r", "a", "u", event.OwnApplicationPrefix + "observe"},
	} {
		add(event.Connect, s.id, s.db, s.user, s.app, 0)
		add(event.Statement, s.id, s.db, s.user, s.app, 1e6)
		add(event.Statement, s.id, s.db, s.user, s.app, 3e6)
		add(event.Disconnect, s.id, s.db, s.user, s.app, 4e6)
	}
	// An event without a session (a checkpoint-like error line).
	line++
	evs = append(evs, &event.Event{Kind: event.Error, Time: t0 + 2e6, Line: line})
	return evs
}

// TestSelect: each selection keeps what it should, in order, and counts
// what it left out: filtered events, statements, sessions, pgrehearse's
// own, and by which selection.
func TestSelect(t *testing.T) {
	tests := []struct {
		name     string
		sel      Selection
		keep     []int64 // lines
		filtered results.Filtered
		dropped  Dropped
	}{
		{"nothing but own sessions", Selection{},
			[]int64{1, 2, 3, 4, 5, 6, 7, 8, 13},
			results.Filtered{Events: 4, Statements: 2, Sessions: 1, OwnStatements: 2}, Dropped{Own: 2}},
		{"window", Selection{Start: t0 + 5e5, End: t0 + 2e6},
			[]int64{2, 6},
			results.Filtered{Events: 11, Statements: 4, Sessions: 1, OwnStatements: 2}, Dropped{Window: 3, Own: 1}},
		{"window, own sessions kept", Selection{Start: t0 + 5e5, End: t0 + 2e6, KeepOwn: true},
			// r's statement at 1 s too: what the reader found, as events shows it.
			[]int64{2, 6, 10},
			results.Filtered{Events: 10, Statements: 3, OwnStatements: 1}, Dropped{Window: 3}},
		{"window, stop after", Selection{Start: t0 + 5e5, End: t0 + 2e6, StopAfter: 5e5},
			// p's statement at 3 s is 1 s past End: reading stops there.
			[]int64{2},
			results.Filtered{Events: 2, Statements: 1}, Dropped{Window: 1}},
		{"database", Selection{Databases: []string{"a"}},
			[]int64{1, 2, 3, 4, 13},
			results.Filtered{Events: 8, Statements: 4, Sessions: 2, OwnStatements: 2}, Dropped{Own: 2, Filters: 2}},
		{"user and application", Selection{Users: []string{"v"}, Applications: []string{"batch", "web"}},
			[]int64{5, 6, 7, 8, 13},
			results.Filtered{Events: 8, Statements: 4, Sessions: 2, OwnStatements: 2}, Dropped{Own: 2, Filters: 2}},
		{"sessions", Selection{Sessions: func(s string) bool { return s == "q" }},
			[]int64{5, 6, 7, 8, 13},
			results.Filtered{Events: 8, Statements: 4, Sessions: 2, OwnStatements: 2}, Dropped{Own: 2, Filters: 2}},
		{"shard", Selection{Shard: Shard{K: 0, Of: 2, Assign: func(s string) (int, bool) {
			return map[string]int{"p": 0, "q": 1, "r": 0}[s], s != ""
		}}},
			// Shard 0: p, r (own, filtered) and the sessionless event.
			[]int64{1, 2, 3, 4, 13},
			results.Filtered{Events: 4, Statements: 2, Sessions: 1, OwnStatements: 2}, Dropped{Own: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &sliceSource{evs: workload()}
			c := &Counts{}
			sel := tt.sel
			s := Select(src, &sel, NewState(), c)
			var got []int64
			for ev, err := range event.All(s) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev.Line)
			}
			if !reflect.DeepEqual(got, tt.keep) {
				t.Errorf("kept lines %v, want %v", got, tt.keep)
			}
			if c.Filtered != tt.filtered || c.Dropped != tt.dropped {
				t.Errorf("filtered %+v, dropped %+v; want %+v, %+v", c.Filtered, c.Dropped, tt.filtered, tt.dropped)
			}
			sc := s.(results.SourceCounter).SourceCounts()
			if sc.Filtered != c.Filtered {
				t.Errorf("source counts %+v, want %+v", sc.Filtered, c.Filtered)
			}
			if src.recycled != int(c.Filtered.Events)+int(otherEvents(c)) {
				t.Errorf("%d events given back, want the %d left out", src.recycled, c.Filtered.Events+otherEvents(c))
			}
			if n := s.(event.Named).Name(); n != "mem.log" {
				t.Errorf("name %q", n)
			}
		})
	}
}

func otherEvents(c *Counts) int64 { return c.Other.Events }

// TestShardHas: every session is in exactly one of n shards whichever
// process asks (the hash is fixed: shard.Of, FNV-1a), and the shards are
// about even.
func TestShardHas(t *testing.T) {
	// Fixed values: a change of the hash would split a running shard
	// plan differently on two machines.
	for id, want := range map[string]int{"6631f000.65": 2, "p4242.0": 1, "": 0, "66a0b1c2.3f9": 2} {
		if !(Shard{K: want, Of: 4}).Has(id) {
			t.Errorf("session %q is not in shard %d of 4", id, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, 20000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%x.%x", 0x66000000+r.IntN(1<<20), r.IntN(1<<22))
	}
	for _, n := range []int{1, 2, 3, 7, 16} {
		count := make([]int, n)
		for _, id := range ids {
			in := 0
			for k := range n {
				if (Shard{K: k, Of: n}).Has(id) {
					in++
					count[k]++
				}
			}
			if in != 1 {
				t.Fatalf("session %s is in %d of %d shards", id, in, n)
			}
		}
		for k, c := range count {
			if want := len(ids) / n; c < want*9/10 || c > want*11/10 {
				t.Errorf("%d shards: shard %d has %d sessions, want about %d", n, k, c, want)
			}
		}
	}
}

// TestShardsCoverTheWhole: the shards of a workload, each read whole,
// keep every event once between them; each counts the others' apart,
// never as filtered, and all read the same.
func TestShardsCoverTheWhole(t *testing.T) {
	var evs []*event.Event
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		s := fmt.Sprintf("s%d", r.IntN(300))
		k := event.Statement
		if i%10 == 0 {
			k = event.Connect
		}
		evs = append(evs, &event.Event{Kind: k, Session: s, Time: t0 + int64(i), Line: int64(i + 1)})
	}
	const n = 3
	seen := map[int64]int{}
	var read results.OtherShards
	var kept int64
	for k := range n {
		c := &Counts{}
		s := Select(&sliceSource{evs: evs}, &Selection{Shard: Shard{K: k, Of: n}}, NewState(), c)
		for {
			ev, err := s.Next()
			if err != nil {
				break
			}
			seen[ev.Line]++
			kept++
		}
		if c.Filtered != (results.Filtered{}) {
			t.Errorf("shard %d: other shards' events counted as filtered: %+v", k, c.Filtered)
		}
		o := c.Other
		if k > 0 && (o.ReadEvents != read.ReadEvents || o.ReadSessions != read.ReadSessions) {
			t.Errorf("shard %d read %+v, shard 0 %+v", k, o, read)
		}
		read = o
		if o.ReadEvents-o.Events != int64(len(evs))-o.Events || o.ReadEvents != int64(len(evs)) {
			t.Errorf("shard %d: read %d events, want %d", k, o.ReadEvents, len(evs))
		}
	}
	if len(seen) != len(evs) || kept != int64(len(evs)) {
		t.Errorf("the shards kept %d events (%d distinct) of %d", kept, len(seen), len(evs))
	}
}

// TestLineSkipWords: the line skip reasons results names for its consumers
// are the reader's own words.
func TestLineSkipWords(t *testing.T) {
	if string(results.LineSkipLockWait) != logread.SkipLockWait {
		t.Errorf("results.LineSkipLockWait %q, the reader writes %q", results.LineSkipLockWait, logread.SkipLockWait)
	}
}
