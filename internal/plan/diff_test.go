package plan

import (
	"math"
	"testing"
)

func mustText(t testing.TB, s string) *Plan {
	t.Helper()
	p, err := ParseText(s)
	if err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return p
}

func TestCompareSame(t *testing.T) {
	a := readFixture(t, "testdata/explain/hash_join.text")
	b := readFixture(t, "testdata/explain/hash_join.json")
	d := Compare(a, b)
	if !d.Same || len(d.Changes) != 0 || len(d.Pairs) != len(a.Nodes()) {
		t.Fatalf("same plan: %+v", d)
	}
	for i, p := range d.Pairs {
		if p.Control != i || p.Candidate != i || p.Changed {
			t.Errorf("pair %d: %+v", i, p)
		}
	}
	if _, _, _, ok := d.First(a, b); ok {
		t.Error("First of the same plan")
	}
}

func TestCompareChanges(t *testing.T) {
	for _, tc := range []struct {
		name, control, candidate string
		// want: the kind of the first change, and the labels of its
		// nodes ("" for a side without).
		kind       ChangeKind
		ctl, cand  string
		nchanges   int
		changedCtl int // nodes of the control a change touches
	}{
		{
			name:      "index dropped",
			control:   "Index Scan using customers_email_idx on customers  (cost=0.41..8.43 rows=1 width=22)\n  Index Cond: (email = $1)",
			candidate: "Seq Scan on customers  (cost=0.00..1141.00 rows=1 width=22)\n  Filter: (email = $1)",
			kind:      Replaced, ctl: "Index Scan using customers_email_idx on customers", cand: "Seq Scan on customers",
			nchanges: 1, changedCtl: 1,
		},
		{
			name: "hash aggregate became sort and group aggregate",
			control: `HashAggregate  (cost=4667.00..5163.71 rows=49671 width=40)
  Group Key: customer_id
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14)`,
			candidate: `GroupAggregate  (cost=22911.82..25395.37 rows=49671 width=40)
  Group Key: customer_id
  ->  Sort  (cost=22911.82..23411.82 rows=200000 width=14)
        Sort Key: customer_id
        ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=14)`,
			kind: Replaced, ctl: "HashAggregate", cand: "GroupAggregate", nchanges: 2, changedCtl: 1,
		},
		{
			name: "nested loop became hash join, inputs swapped",
			control: `Nested Loop  (cost=4.87..28.39 rows=4 width=20)
  ->  Index Scan using customers_email_idx on customers c  (cost=0.41..8.43 rows=1 width=22)
        Index Cond: (email = $1)
  ->  Index Scan using orders_customer_idx on orders o  (cost=4.45..19.91 rows=4 width=14)
        Index Cond: (customer_id = c.id)`,
			candidate: `Hash Join  (cost=1141.01..4921.01 rows=4 width=20)
  Hash Cond: (o.customer_id = c.id)
  ->  Seq Scan on orders o  (cost=0.00..3167.00 rows=200000 width=14)
  ->  Hash  (cost=1141.00..1141.00 rows=1 width=22)
        ->  Seq Scan on customers c  (cost=0.00..1141.00 rows=1 width=22)
              Filter: (email = $1)`,
			kind: Replaced, ctl: "Nested Loop", cand: "Hash Join", nchanges: 4, changedCtl: 3,
		},
		{
			name: "join order",
			control: `Hash Join  (cost=1.00..2.00 rows=1 width=4)
  Hash Cond: (a.x = c.x)
  ->  Hash Join  (cost=1.00..2.00 rows=1 width=4)
        Hash Cond: (a.x = b.x)
        ->  Seq Scan on a  (cost=0.00..1.00 rows=1 width=4)
        ->  Hash  (cost=1.00..1.00 rows=1 width=4)
              ->  Seq Scan on b  (cost=0.00..1.00 rows=1 width=4)
  ->  Hash  (cost=1.00..1.00 rows=1 width=4)
        ->  Seq Scan on c  (cost=0.00..1.00 rows=1 width=4)`,
			candidate: `Hash Join  (cost=1.00..2.00 rows=1 width=4)
  Hash Cond: (a.x = b.x)
  ->  Hash Join  (cost=1.00..2.00 rows=1 width=4)
        Hash Cond: (a.x = c.x)
        ->  Seq Scan on a  (cost=0.00..1.00 rows=1 width=4)
        ->  Hash  (cost=1.00..1.00 rows=1 width=4)
              ->  Seq Scan on c  (cost=0.00..1.00 rows=1 width=4)
  ->  Hash  (cost=1.00..1.00 rows=1 width=4)
        ->  Seq Scan on b  (cost=0.00..1.00 rows=1 width=4)`,
			kind: JoinOrder, ctl: "Hash Join", cand: "Hash Join", nchanges: 4, changedCtl: 4,
		},
		{
			name:      "a node removed",
			control:   "Limit  (cost=0.00..1.00 rows=1 width=4)\n  ->  Sort  (cost=0.00..1.00 rows=1 width=4)\n        ->  Seq Scan on t  (cost=0.00..1.00 rows=1 width=4)",
			candidate: "Limit  (cost=0.00..1.00 rows=1 width=4)\n  ->  Index Scan using t_pkey on t  (cost=0.00..1.00 rows=1 width=4)",
			kind:      Removed, ctl: "Sort", cand: "", nchanges: 2, changedCtl: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := mustText(t, tc.control), mustText(t, tc.candidate)
			d := Compare(a, b)
			if d.Same || d.ControlHash == d.CandidateHash {
				t.Fatal("different plans read as the same")
			}
			c, x, y, ok := d.First(a, b)
			if !ok || c.Kind != tc.kind || label(x) != tc.ctl || label(y) != tc.cand {
				t.Errorf("first change %+v: %q -> %q, want %s %q -> %q", c, label(x), label(y), tc.kind, tc.ctl, tc.cand)
			}
			if len(d.Changes) != tc.nchanges {
				t.Errorf("%d changes, want %d: %+v", len(d.Changes), tc.nchanges, d.Changes)
			}
			ctl, _ := d.ChangedNodes(a, b)
			if len(ctl) != tc.changedCtl {
				t.Errorf("%d control nodes touched, want %d: %v", len(ctl), tc.changedCtl, ctl)
			}
			checkPairs(t, d, a, b)
		})
	}
}

func label(n *Node) string {
	if n == nil {
		return ""
	}
	return n.Label()
}

// checkPairs checks the invariants of an alignment: every index valid,
// no node paired twice, the roots paired or a change at the root.
func checkPairs(t testing.TB, d *Diff, a, b *Plan) {
	t.Helper()
	na, nb := len(a.Nodes()), len(b.Nodes())
	seenA, seenB := map[int]bool{}, map[int]bool{}
	for _, p := range d.Pairs {
		if p.Control < 0 || p.Control >= na || p.Candidate < 0 || p.Candidate >= nb || seenA[p.Control] || seenB[p.Candidate] {
			t.Fatalf("bad pair %+v (%d, %d nodes)", p, na, nb)
		}
		seenA[p.Control], seenB[p.Candidate] = true, true
	}
	for _, c := range d.Changes {
		if c.Control < -1 || c.Control >= na || c.Candidate < -1 || c.Candidate >= nb || c.Control < 0 && c.Candidate < 0 {
			t.Fatalf("bad change %+v", c)
		}
	}
	if d.Same != (len(d.Changes) == 0 && a.Shape() == b.Shape()) {
		t.Fatalf("same %v with %d changes", d.Same, len(d.Changes))
	}
}

func TestGrowths(t *testing.T) {
	control := mustText(t, `Aggregate  (cost=4167.00..4167.01 rows=1 width=32) (actual time=40.000..40.001 rows=1 loops=1)
  Buffers: shared hit=1667
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=6) (actual time=0.002..25.000 rows=200000 loops=1)
        Buffers: shared hit=1667`)
	candidate := mustText(t, `Aggregate  (cost=4167.00..4167.01 rows=1 width=32) (actual time=95.000..95.001 rows=1 loops=1)
  Buffers: shared hit=16 read=1651
  ->  Seq Scan on orders  (cost=0.00..3667.00 rows=200000 width=6) (actual time=0.002..80.000 rows=200000 loops=1)
        Buffers: shared hit=16 read=1651`)
	d := Compare(control, candidate)
	if !d.Same {
		t.Fatal("same plan read as changed")
	}
	g := Growths(control, candidate, d)
	if len(g) != 2 {
		t.Fatalf("%d growths", len(g))
	}
	top := g[0]
	if top.Control != 1 || math.Abs(top.TimeAdded()-55) > 1e-9 || top.ReadsAdded() != 1651 || !top.Grew(1) {
		t.Errorf("top growth: %+v", top)
	}
	// The aggregate's own time (15 ms) did not change, nor its own reads.
	if agg := g[1]; agg.Control != 0 || math.Abs(agg.Before.SelfMS-agg.After.SelfMS) > 1e-9 || agg.ReadsAdded() != 0 || agg.Grew(1) {
		t.Errorf("aggregate: %+v", agg)
	}
}

func TestGrowthSpill(t *testing.T) {
	a := readFixture(t, "testdata/explain/sort_limit.text")
	w, ok := WorkOf(a.Root)
	if !ok || w.Loops != 1 {
		t.Fatalf("work: %+v", w)
	}
	s := readFixture(t, "testdata/explain/sort_external.text")
	ws, _ := WorkOf(s.Root.Children[0])
	if !ws.Spilled || ws.TempWritten != 3868 || ws.TempRead != 3480 {
		t.Errorf("external sort work: %+v", ws)
	}
}
