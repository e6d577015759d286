package results

import (
	"math"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// shardOf builds shard k of n of the calls, as a shard that read the
// whole input would write it: the lines of the whole, its own sessions'
// statements, and the other shards' counted apart.
func shardOf(t *testing.T, cs []call, k, n int, replay bool) *Result {
	t.Helper()
	whole := build(t, cs, func(call) bool { return true }, replay)
	r := build(t, cs, func(c call) bool { return c.session%n == k }, replay)
	r.Lines = whole.Lines
	r.Input = testInput("a.log")
	r.Part = &Part{Shards: []int{k}, Of: n}
	sessions := map[int]bool{}
	all := map[int]bool{}
	o := &OtherShards{}
	for _, c := range cs {
		all[c.session] = true
		o.ReadEvents++
		o.ReadStatements++
		if c.session%n != k {
			o.Events++
			o.Statements++
			sessions[c.session] = true
		}
	}
	o.Sessions, o.ReadSessions = int64(len(sessions)), int64(len(all))
	r.OtherShards = o
	r.Events = map[event.Kind]int64{event.Statement: r.Statements.Total}
	if replay {
		r.Reader.Events = o.ReadEvents
	}
	return roundTrip(t, r)
}

func testInput(name string) *Input {
	return &Input{Files: []InputFile{{Name: name, Size: 1234, Hash: "aabb"}}}
}

// TestMergeShards: shards that each read the whole input merge into the
// whole: lines and events read counted once, statements and sessions
// added, nothing left to other shards; a merge of some shards counts what
// the missing ones hold, and says which are missing.
func TestMergeShards(t *testing.T) {
	cs := calls(5000, 9)
	for _, replay := range []bool{false, true} {
		whole := build(t, cs, func(call) bool { return true }, replay)
		whole.Input = testInput("a.log")
		whole.Events = map[event.Kind]int64{event.Statement: whole.Statements.Total}
		if replay {
			whole.Reader.Events = int64(len(cs))
		}
		shards := []*Result{shardOf(t, cs, 0, 3, replay), shardOf(t, cs, 1, 3, replay), shardOf(t, cs, 2, 3, replay)}
		m, err := MergeAll(shards[2], shards[0], shards[1])
		if err != nil {
			t.Fatal(err)
		}
		if m.Lines.Total != whole.Lines.Total || m.Lines.Skipped["noise"] != whole.Lines.Skipped["noise"] {
			t.Errorf("replay %v: merged lines %+v, want the whole's %+v once", replay, m.Lines, whole.Lines)
		}
		if m.OtherShards != nil || m.MissingShards() != nil || !m.Part.Whole() || len(m.Part.Shards) != 3 {
			t.Errorf("replay %v: a merge of every shard: others %+v, part %+v, missing %v", replay, m.OtherShards, m.Part, m.MissingShards())
		}
		got, want := *m, *roundTrip(t, whole)
		got.Part, got.Lines, want.Lines = nil, nil, nil
		if a, b := jsonOf(t, &got), jsonOf(t, &want); a != b {
			t.Fatalf("replay %v: merged shards differ from the whole:\n%s\nwant\n%s", replay, a, b)
		}

		some, err := Merge(shards[0], shards[2])
		if err != nil {
			t.Fatal(err)
		}
		if miss := some.MissingShards(); len(miss) != 1 || miss[0] != 1 {
			t.Errorf("missing shards %v, want [1]", miss)
		}
		// What shards 0 and 2 left out is shard 1's.
		own1 := shards[1].OtherShards.ReadStatements - shards[1].OtherShards.Statements
		if o := some.OtherShards; o == nil || o.Statements != own1 || o.ReadStatements != int64(len(cs)) {
			t.Errorf("a merge of shards 0 and 2 leaves %+v, want shard 1's %d statements", o, own1)
		}
	}
}

func TestMergeRefusesParts(t *testing.T) {
	cs := calls(300, 5)
	s0, s1 := shardOf(t, cs, 0, 2, false), shardOf(t, cs, 1, 2, false)
	other := shardOf(t, cs, 1, 2, false)
	other.Input = &Input{Files: []InputFile{{Name: "a.log", Size: 1234, Hash: "aacc"}}}
	four := shardOf(t, cs, 1, 4, false)
	round := shardOf(t, cs, 1, 2, false)
	round.Part.Round = 2
	whole := build(t, cs, func(call) bool { return true }, false)
	whole.Input = testInput("a.log")
	again := build(t, cs, func(call) bool { return true }, false)
	again.Input = testInput("copy/a.log") // the same content elsewhere
	faster := shardOf(t, cs, 1, 2, false)
	faster.Part.Load = &Load{By: LoadBySpeed, K: 2}
	half1, half2 := build(t, cs, func(c call) bool { return c.session%2 == 0 }, false), build(t, cs, func(c call) bool { return c.session%2 == 1 }, false)
	half1.Input, half2.Input = testInput("a.log"), &Input{Files: []InputFile{{Name: "b.log", Size: 99, Hash: "bbbb"}}}
	half1.Part = &Part{Load: &Load{By: LoadByFold, K: 3}}
	for _, tc := range []struct {
		name string
		a, b *Result
		want string
	}{
		{"the same shard twice", s0, s0, "overlap: both cover shard [0] of 2"},
		{"different inputs", s0, other, "different inputs"},
		{"different splits", s0, four, "different numbers of shards (2 and 4)"},
		{"different rounds", s0, round, "different rounds"},
		{"a shard with a whole", s0, whole, "a shard merges only with the other shards"},
		{"the same input whole twice", whole, again, "read the same input"},
		{"shards of different load levels", s0, faster, "shards of different load levels (1x and 2x by speed)"},
		{"runs of different load levels", half1, half2, "runs of different load levels (3x by fold and 1x)"},
	} {
		if _, err := Merge(tc.a, tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Merge(s0, s1); err != nil {
		t.Errorf("two shards of one input: %v", err)
	}
}

func TestPartString(t *testing.T) {
	for _, tc := range []struct {
		p    *Part
		want string
	}{
		{nil, "whole"},
		{&Part{Shards: []int{2}, Of: 4}, "shard 2 of 4"},
		{&Part{Shards: []int{0, 1}, Of: 4, Round: 3}, "shards [0 1] of 4, round 3"},
		{&Part{Round: 1}, "round 1"},
		{&Part{Round: 2, Side: SideCandidate}, "candidate round 2"},
		{&Part{Shards: []int{1}, Of: 2, Round: 2, Side: SideControl}, "shard 1 of 2, control round 2"},
		{&Part{Load: &Load{By: LoadBySpeed, K: 1.5}}, "whole at 1.5x by speed"},
		{&Part{Round: 2, Side: SideCandidate, Load: &Load{By: LoadByFold, K: 3}}, "candidate round 2 at 3x by fold"},
		{&Part{Round: 1, Load: &Load{By: LoadBySpeed, K: 1}}, "round 1"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestMergeRoundShards: the shards of one rehearsal round merge into the
// round's result, keeping its side; shards of the same round number on
// the two sides do not.
func TestMergeRoundShards(t *testing.T) {
	cs := calls(500, 5)
	a, b := shardOf(t, cs, 0, 2, true), shardOf(t, cs, 1, 2, true)
	a.Part.Round, a.Part.Side = 2, SideCandidate
	b.Part.Round, b.Part.Side = 2, SideCandidate
	m, err := Merge(a, b)
	if err != nil || m.Part.Round != 2 || m.Part.Side != SideCandidate || !m.Part.Whole() {
		t.Fatalf("Merge of a round's shards: %v, part %v", err, m.Part)
	}
	b.Part.Side = SideControl
	if _, err := Merge(a, b); err == nil || !strings.Contains(err.Error(), "different rounds") {
		t.Errorf("Merge of shards of two sides' rounds: %v, want it refused", err)
	}
}

// TestLoadSame: a load level is the same only with the same factor and
// way; 1x is 1x however it is made, and nil is 1x.
func TestLoadSame(t *testing.T) {
	speed2, fold2 := &Load{By: LoadBySpeed, K: 2}, &Load{By: LoadByFold, K: 2}
	for _, tc := range []struct {
		a, b *Load
		want bool
	}{
		{nil, nil, true},
		{nil, &Load{By: LoadBySpeed, K: 1}, true},
		{&Load{By: LoadByFold, K: 1}, &Load{By: LoadBySpeed, K: 1}, true},
		{speed2, &Load{By: LoadBySpeed, K: 2}, true},
		{speed2, fold2, false},
		{speed2, nil, false},
		{speed2, &Load{By: LoadBySpeed, K: 3}, false},
	} {
		if got := tc.a.Same(tc.b); got != tc.want || tc.b.Same(tc.a) != tc.want {
			t.Errorf("%v and %v: %v, want %v both ways", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestMergeShardsFinish: shards on one schedule finished when the last
// did: the merge keeps the latest, and survives the JSON; without every
// shard's, none.
func TestMergeShardsFinish(t *testing.T) {
	cs := calls(600, 9)
	shards := []*Result{shardOf(t, cs, 0, 3, true), shardOf(t, cs, 1, 3, true), shardOf(t, cs, 2, 3, true)}
	for i, f := range []Finish{{60, 1.5}, {60, 26.6}, {59.9, 0}} {
		shards[i].Finish = &f
	}
	m, err := MergeAll(shards...)
	if err != nil {
		t.Fatal(err)
	}
	if m = roundTrip(t, m); m.Finish == nil || *m.Finish != (Finish{60, 26.6}) {
		t.Errorf("merged finish %+v, want 26.6 s behind a 60 s schedule", m.Finish)
	}
	shards[2].Finish = nil
	if m, err = MergeAll(shards...); err != nil || m.Finish != nil {
		t.Errorf("a shard without a finish: merged %+v (%v), want none", m.Finish, err)
	}
}

// TestMergeShardsWindow: shards replayed on one schedule merge their
// schedule windows: one shard's window added to the whole of the shards
// that kept to the schedule without one, query by query, whatever the
// order of the merge; a shard that fell behind without a window, or a
// merge of shards none of which had one, has none.
func TestMergeShardsWindow(t *testing.T) {
	cs := calls(600, 11)
	shards := []*Result{shardOf(t, cs, 0, 3, true), shardOf(t, cs, 1, 3, true), shardOf(t, cs, 2, 3, true)}
	for _, sh := range shards {
		sh.Finish = &Finish{ScheduleSeconds: 60, BehindSeconds: 0.1}
	}
	m, err := MergeAll(shards...)
	if err != nil || m.Window != nil {
		t.Fatalf("no shard with a window: merged window %+v (%v), want none", m.Window, err)
	}
	// Shard 1 fell behind: half of each query's calls within its window.
	fell := shards[1]
	fell.Finish.BehindSeconds = 40
	w := &Window{Seconds: 60, AfterSeconds: 40, End: 1_700_000_060_000_000, Statements: fell.Statements.Total / 2,
		AfterStatements: fell.Statements.Total - fell.Statements.Total/2}
	want := map[string]WindowQuery{}
	for _, q := range fell.Queries {
		wq := WindowQuery{Fingerprint: q.Fingerprint, Calls: q.Calls / 2, TimedCalls: q.TimedCalls / 2, TotalMS: q.TotalMS / 3}
		w.Queries = append(w.Queries, wq)
		w.Calls += wq.Calls
		w.AfterCalls += q.Calls - wq.Calls
		want[q.Fingerprint] = wq
	}
	fell.Window = w
	wantStatements := w.Statements
	for _, sh := range []*Result{shards[0], shards[2]} {
		wantStatements += sh.Statements.Total
		for _, q := range sh.Queries {
			wq := want[q.Fingerprint]
			wq.Calls += q.Calls
			wq.TimedCalls += q.TimedCalls
			wq.TotalMS += q.TotalMS
			want[q.Fingerprint] = wq
		}
	}
	for _, order := range [][]*Result{shards, {shards[2], shards[1], shards[0]}} {
		m, err := MergeAll(order...)
		if err != nil {
			t.Fatal(err)
		}
		got := roundTrip(t, m).Window
		if got == nil {
			t.Fatal("merged shards, one with a window: no window")
		}
		if got.Seconds != 60 || got.AfterSeconds != 40 || got.End != w.End || got.Statements != wantStatements ||
			got.AfterStatements != w.AfterStatements || got.AfterCalls != w.AfterCalls {
			t.Errorf("merged window %+v, want 60 s, 40 s after, %d statements within and %d after", got, wantStatements, w.AfterStatements)
		}
		if got.Statements+got.AfterStatements != m.Statements.Total {
			t.Errorf("window statements %d + %d, the merge's %d", got.Statements, got.AfterStatements, m.Statements.Total)
		}
		var calls int64
		for _, q := range got.Queries {
			calls += q.Calls
			wq := want[q.Fingerprint]
			if q.Calls != wq.Calls || q.TimedCalls != wq.TimedCalls || math.Abs(q.TotalMS-wq.TotalMS) > 1e-6 ||
				math.Abs(q.MeanMS-wq.TotalMS/float64(wq.TimedCalls)) > 1e-9 {
				t.Errorf("%s: %+v, want %+v", q.Fingerprint, q, wq)
			}
		}
		if len(got.Queries) != len(want) || calls != got.Calls {
			t.Errorf("%d queries with %d calls, want %d queries and the window's %d calls", len(got.Queries), calls, len(want), got.Calls)
		}
	}
	// Shard 2 fell behind too, without a window: what it issued within
	// the schedule is not known.
	lag := NewRecorder()
	for range 100 {
		lag.Record(5_000_000)
	}
	if shards[2].Lag, err = lag.Distribution(); err != nil {
		t.Fatal(err)
	}
	if m, err = MergeAll(shards...); err != nil || m.Window != nil {
		t.Errorf("a shard behind without a window: merged window %+v (%v), want none", m.Window, err)
	}
}
