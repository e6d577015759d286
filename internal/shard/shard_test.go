package shard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

func TestOfIsFNV1aModN(t *testing.T) {
	// Of is the contract between processes: pin it to an independent
	// implementation and to fixed values.
	for i := range 2000 {
		id := fmt.Sprintf("65f0a1b2.%x", i+1)
		h := fnv.New64a()
		h.Write([]byte(id))
		for _, n := range []int{2, 3, 4, 7, 16} {
			if got, want := Of(id, n), int(h.Sum64()%uint64(n)); got != want {
				t.Fatalf("Of(%q, %d) = %d, want %d", id, n, got, want)
			}
		}
	}
	golden := map[string]int{"": 0, "a": 1, "65f0a1b2.1a2b": 2, "6601c3d4.4d2": 1}
	for id, want := range golden {
		if got := Of(id, 3); got != want {
			t.Errorf("Of(%q, 3) = %d, want %d (the split by hash changed: shards of two versions would disagree)", id, got, want)
		}
	}
	if Of("x", 1) != 0 || Of("x", 0) != 0 {
		t.Error("one shard (or none) must hold every session")
	}
}

func TestOfSpreadsEvenly(t *testing.T) {
	const n, ids = 4, 10000
	counts := make([]int, n)
	for i := range ids {
		counts[Of(fmt.Sprintf("%08x.%x", 0x65f00000+i/7, 1000+i), n)]++
	}
	for k, c := range counts {
		if math.Abs(float64(c)-ids/n) > 0.05*ids/n {
			t.Errorf("shard %d got %d of %d sessions: not within 5%% of an even share (%v)", k, c, ids, counts)
		}
	}
}

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Spec
		err  string
	}{
		{"0/3", Spec{0, 3}, ""},
		{" 2/3 ", Spec{2, 3}, ""},
		{"3/3", Spec{}, "numbered from 0 to 2"},
		{"-1/3", Spec{}, "numbered from 0"},
		{"1/0", Spec{}, "at least 1"},
		{"1", Spec{}, "K/N"},
		{"a/b", Spec{}, "whole numbers"},
	} {
		got, err := ParseSpec(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSpec(%q): error %v, want one saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseSpec(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if s, err := SpecFromIndex("2", 4); err != nil || s != (Spec{2, 4}) {
		t.Errorf("SpecFromIndex(2, 4) = %v, %v", s, err)
	}
	if _, err := SpecFromIndex("", 4); err == nil || !strings.Contains(err.Error(), IndexEnv) {
		t.Errorf("an unset index must name %s: %v", IndexEnv, err)
	}
	if _, err := SpecFromIndex("4", 4); err == nil {
		t.Error("index 4 of 4 accepted")
	}
}

// logBuilder makes events of a synthetic log.
type logBuilder struct {
	evs []*event.Event
	now int64
}

func (l *logBuilder) add(kind event.Kind, sess, query string, dur int64) {
	l.now += 1000
	l.evs = append(l.evs, &event.Event{Kind: kind, Session: sess, Query: query, Duration: dur, Time: l.now,
		Database: "shop", User: "app"})
}

func (l *logBuilder) exec(sess, query string, dur int64) { l.add(event.Statement, sess, query, dur) }

func build(t *testing.T, l *logBuilder, o Options) *Plan {
	t.Helper()
	b, err := NewBuilder(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range l.evs {
		b.Add(ev)
	}
	p, err := b.Plan(Input{Files: []File{{Name: "test.log", Size: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pairs is a log of g producer/consumer pairs: producer i inserts into
// table t<i> and commits; consumer i reads and updates it right after.
// Each pair is independent of the others.
func pairs(g, rounds int) *logBuilder {
	l := &logBuilder{}
	for i := range g {
		l.add(event.Connect, fmt.Sprintf("p%d", i), "", event.NoDuration)
		l.add(event.Connect, fmt.Sprintf("c%d", i), "", event.NoDuration)
	}
	for r := range rounds {
		for i := range g {
			tbl := fmt.Sprintf("t%d", i)
			l.exec(fmt.Sprintf("p%d", i), fmt.Sprintf("INSERT INTO %s VALUES (%d)", tbl, r), 500)
			l.exec(fmt.Sprintf("c%d", i), "BEGIN", 10)
			l.exec(fmt.Sprintf("c%d", i), fmt.Sprintf("SELECT * FROM %s WHERE id = %d", tbl, r), 200)
			l.exec(fmt.Sprintf("c%d", i), fmt.Sprintf("UPDATE %s SET done = true WHERE id = %d", tbl, r), 300)
			l.exec(fmt.Sprintf("c%d", i), "COMMIT", 10)
		}
	}
	for i := range g {
		l.add(event.Disconnect, fmt.Sprintf("p%d", i), "", event.NoDuration)
		l.add(event.Disconnect, fmt.Sprintf("c%d", i), "", event.NoDuration)
	}
	return l
}

func TestPlanKeepsDependentSessionsTogether(t *testing.T) {
	p := build(t, pairs(6, 20), Options{Shards: 3})
	for i := range 6 {
		if a, b := p.ShardOf(fmt.Sprintf("p%d", i)), p.ShardOf(fmt.Sprintf("c%d", i)); a != b {
			t.Errorf("pair %d split: producer in shard %d, consumer in %d", i, a, b)
		}
	}
	if k, ok := p.Assign("p0"); !ok || k != p.ShardOf("p0") {
		t.Errorf("Assign(p0) = %d, %v: a listed session", k, ok)
	}
	if _, ok := p.Assign("nobody"); ok {
		t.Error("Assign places a session the plan does not list")
	}
	d := p.Dependencies
	if d.Total == 0 || d.Cross != 0 || d.CrossShare != 0 {
		t.Errorf("dependencies %+v: want some, none across shards", d)
	}
	if d.HashCrossShare == 0 {
		t.Errorf("a split by hash of these 12 sessions happens to keep every pair: the test says nothing (%+v)", d)
	}
	for _, l := range p.Loads {
		if l.Sessions != 4 {
			t.Errorf("shard %d holds %d sessions, want 2 pairs (4): %+v", l.Shard, l.Sessions, p.Loads)
		}
	}
}

func TestPlanBalances(t *testing.T) {
	l := &logBuilder{}
	// 60 independent sessions of very different sizes.
	var total int64
	for i := range 60 {
		s := fmt.Sprintf("s%02d", i)
		for j := 0; j < 1+(i*37)%50; j++ {
			l.exec(s, fmt.Sprintf("SELECT * FROM r%d WHERE id = %d", i, j), int64(100+(i*13)%900))
			total++
		}
	}
	for _, n := range []int{2, 3, 4} {
		p := build(t, l, Options{Shards: n})
		var stmts int64
		for _, ld := range p.Loads {
			stmts += ld.Statements
			if ld.Share > (1+DefaultSlack)/float64(n)+0.02 {
				t.Errorf("%d shards: shard %d has share %.3f, more than the slack allows: %+v", n, ld.Shard, ld.Share, p.Loads)
			}
		}
		if stmts != total {
			t.Errorf("%d shards: loads add to %d statements, want %d", n, stmts, total)
		}
		if len(p.Sessions) != 60 {
			t.Errorf("%d shards: %d sessions placed, want 60", n, len(p.Sessions))
		}
	}
}

func TestPlanForcesPlacement(t *testing.T) {
	force := map[string]int{}
	for i := range 3 {
		force[fmt.Sprintf("p%d", i)] = 0
		force[fmt.Sprintf("c%d", i)] = 1 + i%2
	}
	p := build(t, pairs(3, 10), Options{Shards: 3, Force: force})
	for id, k := range force {
		if p.ShardOf(id) != k {
			t.Errorf("session %s in shard %d, forced into %d", id, p.ShardOf(id), k)
		}
	}
	if p.Forced != 6 {
		t.Errorf("Forced = %d, want 6", p.Forced)
	}
	if d := p.Dependencies; d.Cross != d.Total || d.CrossShare != 1 {
		t.Errorf("every dependency crosses shards when producers and consumers are set apart: %+v", d)
	}
	if _, err := NewBuilder(Options{Shards: 2, Force: map[string]int{"x": 2}}); err == nil {
		t.Error("a session forced into shard 2 of 2 was accepted")
	}
}

func TestPlanBoundsSessions(t *testing.T) {
	l := &logBuilder{}
	const sessions = 500
	for i := range sessions {
		s := fmt.Sprintf("s%03d", i)
		l.add(event.Connect, s, "", event.NoDuration)
		l.exec(s, "INSERT INTO hot VALUES (1)", 100)
		l.exec(s, "SELECT * FROM hot", 100)
		l.add(event.Disconnect, s, "", event.NoDuration)
	}
	b, err := NewBuilder(Options{Shards: 4, MaxSessions: 50, MaxEdges: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range l.evs {
		b.Add(ev)
	}
	if len(b.sessions) != 50 || len(b.hashed) != 0 || len(b.edges) > 20 {
		t.Errorf("held %d sessions, %d open hashed ones and %d edges: want 50, 0 and at most 20", len(b.sessions), len(b.hashed), len(b.edges))
	}
	p, err := b.Plan(Input{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Hashed != sessions-50 || len(p.Sessions) != 50 {
		t.Errorf("hashed %d and listed %d sessions, want %d and 50", p.Hashed, len(p.Sessions), sessions-50)
	}
	var n, stmts int64
	for _, ld := range p.Loads {
		n += ld.Sessions
		stmts += ld.Statements
	}
	if n != sessions || stmts != 2*sessions {
		t.Errorf("loads count %d sessions and %d statements, want %d and %d", n, stmts, sessions, 2*sessions)
	}
	// Every session but the first reads what the one before it wrote.
	if d := p.Dependencies; d.Total != sessions-1 || d.Untracked == 0 || d.Cross+d.Untracked > d.Total {
		t.Errorf("dependencies %+v: want %d in all, some untracked", d, sessions-1)
	}
	// A hashed session is where Of puts it.
	if k := p.ShardOf("s499"); k != Of("s499", 4) {
		t.Errorf("hashed session in shard %d, Of says %d", k, Of("s499", 4))
	}
}

func TestPlanIsDeterministicAndRoundTrips(t *testing.T) {
	p1 := build(t, pairs(5, 8), Options{Shards: 2})
	p2 := build(t, pairs(5, 8), Options{Shards: 2})
	if p1.ID != p2.ID || len(p1.ID) != 16 {
		t.Fatalf("plans of one log differ: %s and %s", p1.ID, p2.ID)
	}
	var buf bytes.Buffer
	if err := p1.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	p3, err := Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if p3.ID != p1.ID || len(p3.Sessions) != len(p1.Sessions) || p3.Dependencies != p1.Dependencies {
		t.Errorf("decoded plan differs: %+v", p3)
	}
	p4 := build(t, pairs(5, 8), Options{Shards: 3})
	if p4.ID == p1.ID {
		t.Error("plans of 2 and 3 shards share an id")
	}
}

func TestDecodeRefuses(t *testing.T) {
	p := build(t, pairs(2, 2), Options{Shards: 2})
	var buf bytes.Buffer
	p.Encode(&buf)
	good := buf.String()
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		json.Unmarshal([]byte(good), &m)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, c := range []struct {
		name, in, want string
	}{
		{"not json", "hello", "not a pgrehearse shard plan"},
		{"a result", `{"version":2,"kind":"replay"}`, "not a pgrehearse shard plan"},
		{"newer", edit(func(m map[string]any) { m["version"] = 9 }), "version 9"},
		{"edited", edit(func(m map[string]any) { m["sessions"].(map[string]any)["p0"] = 1 - p.Sessions["p0"] }), "was edited"},
		{"out of range", edit(func(m map[string]any) { m["sessions"].(map[string]any)["p0"] = 5 }), "shard 5 of 2"},
		{"unknown field", edit(func(m map[string]any) { m["extra"] = 1 }), "unknown field"},
		{"two values", good + good, "more than one"},
	} {
		_, err := Decode(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	p := &Plan{Version: PlanVersion, Kind: PlanKind, Shards: 2, Sessions: map[string]int{"a": 1}}
	p.ID = p.contentID()
	p.Encode(&buf)
	f.Add(buf.String())
	f.Add(`{"kind":"pgrehearse-shard-plan","version":1,"shards":0}`)
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Decode(strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := p.Encode(&out); err != nil {
			t.Fatal(err)
		}
		q, err := Decode(&out)
		if err != nil || q.ID != p.ID {
			t.Fatalf("a plan that decoded does not decode again: %v", err)
		}
		for id := range p.Sessions {
			if k := p.ShardOf(id); k < 0 || k >= p.Shards {
				t.Fatalf("session %q in shard %d of %d", id, k, p.Shards)
			}
		}
	})
}
