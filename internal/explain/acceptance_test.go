package explain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/plan"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// pair is a control and a candidate server.
type pair struct {
	t         testing.TB
	ctx       context.Context
	ctl, cand *pgcluster.Cluster
}

// startPair starts both servers at once, each with its settings.
func startPair(t *testing.T, ctlSettings, candSettings map[string]string) *pair {
	t.Helper()
	return startPairTB(t, ctlSettings, candSettings)
}

// startPairB starts the benchmark's servers: the shop on both, the email
// index only on the control.
func startPairB(b *testing.B) *pair {
	p := startPairTB(b, nil, nil)
	p.both("postgres", shopSQL+"CREATE INDEX customers_email_idx ON customers (email);")
	p.both("postgres", "VACUUM ANALYZE")
	p.exec(p.cand, "postgres", "DROP INDEX customers_email_idx")
	return p
}

func startPairTB(t testing.TB, ctlSettings, candSettings map[string]string) *pair {
	p := &pair{t: t, ctx: context.Background()}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.ctl = pgclustertest.StartT(t, pgcluster.Options{Settings: ctlSettings}) }()
	go func() { defer wg.Done(); p.cand = pgclustertest.StartT(t, pgcluster.Options{Settings: candSettings}) }()
	wg.Wait()
	if p.ctl == nil || p.cand == nil {
		t.FailNow()
	}
	return p
}

func (p *pair) exec(c *pgcluster.Cluster, db, sql string) {
	p.t.Helper()
	if err := c.Exec(p.ctx, db, sql); err != nil {
		p.t.Fatalf("%s: %v", sql, err)
	}
}

// both runs sql on both servers.
func (p *pair) both(db, sql string) {
	p.t.Helper()
	p.exec(p.ctl, db, sql)
	p.exec(p.cand, db, sql)
}

// run explains stmts on both servers.
func (p *pair) run(opts Options, stmts ...Statement) *Report {
	p.t.Helper()
	opts.ControlDSN, opts.CandidateDSN = p.ctl.DSN("postgres"), p.cand.DSN("postgres")
	return p.runWith(opts, stmts...)
}

// runWith explains stmts with the DSNs opts has.
func (p *pair) runWith(opts Options, stmts ...Statement) *Report {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, stmts, opts)
	if err != nil {
		p.t.Fatal(err)
	}
	if len(rep.Outcomes) != len(stmts) {
		p.t.Fatalf("%d outcomes for %d statements", len(rep.Outcomes), len(stmts))
	}
	return rep
}

func str(s string) *string { return &s }

// first returns the first change of o's main explanation and its nodes.
func first(t *testing.T, o *Outcome) (plan.Change, *plan.Node, *plan.Node) {
	t.Helper()
	m := o.Main()
	if m == nil || m.Diff == nil {
		t.Fatalf("no comparison: %+v", o.Problems)
	}
	c, a, b, ok := m.Diff.First(m.Control.Plan, m.Candidate.Plan)
	if !ok {
		t.Fatalf("no change: %s", m.Control.Plan.Shape())
	}
	return c, a, b
}

func label(n *plan.Node) string {
	if n == nil {
		return ""
	}
	return n.Label()
}

// TestDroppedIndex is the demo's change: the candidate lacks the index
// the lookup of customers by email uses. With the logged values
// (analyzed) and without (generic), the plan changed, Index Scan ->
// Seq Scan is named, and the cause is the missing index.
func TestDroppedIndex(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, nil, map[string]string{"log_connections": "on"})
	var wg sync.WaitGroup
	for _, c := range []*pgcluster.Cluster{p.ctl, p.cand} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := workload.SetupShop(p.ctx, c); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	p.exec(p.cand, workload.ShopDatabase, "DROP INDEX "+workload.ShopEmailIndex)
	// hypopg verifies the missing index: created hypothetically, the
	// candidate's planner uses it.
	p.exec(p.cand, workload.ShopDatabase, "CREATE EXTENSION hypopg")
	q := "SELECT id, name FROM customers WHERE email = $1"
	withValues := Statement{Fingerprint: "lookup", Database: workload.ShopDatabase, Query: q, Samples: []Sample{
		{Role: SampleSlowest, Query: q, Params: []*string{str("user42@example.com")}, DurationMS: 9},
		{Role: SampleMedian, Query: q, Params: []*string{str("user7@example.com")}, DurationMS: 5},
	}}
	generic := Statement{Fingerprint: "lookup", Database: workload.ShopDatabase, Query: q}
	// The demo's own lookup, as pgbench -M prepared sends it.
	dq := "SELECT id, name FROM customers WHERE email = 'user' || $1 || '@example.com'"
	demo := Statement{Fingerprint: "demo", Database: workload.ShopDatabase, Query: dq,
		Samples: []Sample{{Role: SampleSlowest, Query: dq, Params: []*string{str("4242")}}}}
	before := len(readAll(t, p.cand.ServerLog()))
	rep := p.run(Options{Analyze: true}, withValues, generic, demo)

	for i, o := range rep.Outcomes {
		if o.Verdict != PlanChanged || len(o.Problems) != 0 {
			t.Fatalf("outcome %d: %s %+v", i, o.Verdict, o.Problems)
		}
		c, a, b := first(t, &o)
		if c.Kind != plan.Replaced || label(a) != "Index Scan using customers_email_idx on customers" || label(b) != "Seq Scan on customers" {
			t.Errorf("outcome %d: first change %s %q -> %q", i, c.Kind, label(a), label(b))
		}
		if b.Filter == "" || a.PlanRows != 1 || b.PlanRows != 1 {
			t.Errorf("outcome %d: filter %q, estimated rows %v -> %v", i, b.Filter, a.PlanRows, b.PlanRows)
		}
		if len(o.Causes) == 0 || o.Causes[0].Kind != CauseIndexMissing || o.Causes[0].Index != workload.ShopEmailIndex ||
			o.Causes[0].Relation != "customers" || !strings.Contains(o.Causes[0].Control, "(email)") || !o.Causes[0].Verified {
			t.Errorf("outcome %d: causes %+v", i, o.Causes)
		}
	}
	// With values: custom plans for both samples, analyzed; the
	// candidate's scan read the whole table and removed all rows but one.
	o := rep.Outcomes[0]
	if o.Generic || len(o.Explained) != 2 || o.Explained[0].Sample != SampleSlowest || o.Explained[1].Sample != SampleMedian {
		t.Fatalf("explained: %+v", o.Explained)
	}
	for _, e := range o.Explained {
		if e.Control.Mode != ModeCustom || !e.Control.Plan.Analyzed || !e.Candidate.Plan.Analyzed || !e.Candidate.Plan.Buffers {
			t.Errorf("%s: mode %s analyzed %v/%v (%s)", e.Sample, e.Control.Mode, e.Control.Plan.Analyzed, e.Candidate.Plan.Analyzed, e.Candidate.NotAnalyzed)
		}
		scan := e.Candidate.Plan.Root
		if scan.Actual == nil || scan.Actual.RemovedByFilter != workload.ShopCustomers-1 {
			t.Errorf("%s: removed by filter %+v", e.Sample, scan.Actual)
		}
	}
	// Without values: generic plans, said so.
	g := rep.Outcomes[1]
	if !g.Generic || g.Explained[0].Control.Mode != ModeGeneric || g.Explained[0].Control.NotAnalyzed != SkipGeneric {
		t.Errorf("generic: %+v %+v", g.Generic, g.Explained[0].Control)
	}
	// Every connection called itself pgrehearse-explain.
	logs := readAll(t, p.cand.ServerLog())[before:]
	if n := strings.Count(logs, "application_name="+ApplicationName); n == 0 || strings.Count(logs, "connection authorized") != n {
		t.Errorf("%d connections, %d named %s:\n%s", strings.Count(logs, "connection authorized"), n, ApplicationName, logs)
	}
}

// TestRestoredWithoutAnalyze: the candidate is a pg_dump of the control
// restored with psql into a fresh server, and not analyzed (autovacuum
// off, as it had not come round yet). A join whose filter keeps most of
// a table changes plan, and the cause is the statistics the candidate
// never had.
func TestRestoredWithoutAnalyze(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, nil, map[string]string{"autovacuum": "off"})
	p.exec(p.ctl, "postgres", shopSQL)
	p.exec(p.ctl, "postgres", "VACUUM ANALYZE")
	dump := exec.Command(filepath.Join(p.ctl.BinDir(), "pg_dump"), "--no-owner", p.ctl.DSN("postgres"))
	restore := exec.Command(filepath.Join(p.cand.BinDir(), "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", p.cand.DSN("postgres"))
	pipe, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	restore.Stdin = pipe
	if err := dump.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if err := dump.Wait(); err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	q := "SELECT c.name, sum(o.total) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = $1 GROUP BY c.name"
	st := Statement{Fingerprint: "join", Database: "postgres", Query: q, Samples: []Sample{{Role: SampleSlowest, Query: q, Params: []*string{str("done")}}}}
	rep := p.run(Options{}, st)
	o := rep.Outcomes[0]
	if o.Verdict != PlanChanged {
		t.Fatalf("verdict %s: %s", o.Verdict, o.Main().Control.Plan.Shape())
	}
	t.Logf("control:   %s\ncandidate: %s", o.Main().Control.Plan.Shape(), o.Main().Candidate.Plan.Shape())
	if len(o.Causes) == 0 || o.Causes[0].Kind != CauseNeverAnalyzed || o.Causes[0].Side != Candidate {
		t.Fatalf("causes: %+v", o.Causes)
	}
	var rels []string
	for _, c := range o.Causes {
		if c.Kind == CauseNeverAnalyzed {
			rels = append(rels, c.Relation)
		}
	}
	if !strings.Contains(strings.Join(rels, ","), "orders") {
		t.Errorf("never analyzed: %v", rels)
	}
	for _, c := range o.Causes {
		if c.Kind == CauseSetting || c.Kind == CauseIndexMissing {
			t.Errorf("a cause that is not one: %+v", c)
		}
	}
}

// shopSQL is a shop whose orders are mostly 'done': a filter on status
// keeps 99% of them, which only the statistics tell the planner.
const shopSQL = `
CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL, name text NOT NULL);
INSERT INTO customers SELECT i, 'user' || i || '@example.com', 'Customer ' || i FROM generate_series(1, 50000) AS i;
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, total numeric(10,2) NOT NULL, status text NOT NULL);
INSERT INTO orders SELECT i, 1 + (i * 7919) % 50000, (i % 500) + 0.99, CASE WHEN i % 100 = 0 THEN 'pending' ELSE 'done' END
FROM generate_series(1, 200000) AS i;
CREATE INDEX orders_customer_idx ON orders (customer_id);
CREATE INDEX orders_status_idx ON orders (status);
`

// TestRandomPageCost: random_page_cost 1.1 on the control (an SSD
// setting), the default 4 on the candidate. The range lookup that flips
// from an Index Scan is named, and the setting is the verified cause.
func TestRandomPageCost(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, map[string]string{"random_page_cost": "1.1"}, nil)
	p.both("postgres", shopSQL)
	p.both("postgres", "VACUUM ANALYZE")
	q := "SELECT sum(total) FROM orders WHERE customer_id BETWEEN $1 AND $2"
	st := Statement{Fingerprint: "range", Database: "postgres", Query: q,
		Samples: []Sample{{Role: SampleSlowest, Query: q, Params: []*string{str("1000"), str("11000")}}}}
	stable := Statement{Fingerprint: "pk", Database: "postgres", Query: "SELECT total FROM orders WHERE id = $1",
		Samples: []Sample{{Role: SampleSlowest, Query: "SELECT total FROM orders WHERE id = $1", Params: []*string{str("7")}}}}
	rep := p.run(Options{Analyze: true}, st, stable)
	o := rep.Outcomes[0]
	if o.Verdict != PlanChanged {
		t.Fatalf("verdict %s: %s", o.Verdict, o.Main().Control.Plan.Shape())
	}
	c, a, b := first(t, &o)
	if c.Kind != plan.Replaced || label(a) != "Index Scan using orders_customer_idx on orders" || !strings.Contains(label(b), "on orders") {
		t.Errorf("first change %s: %q -> %q", c.Kind, label(a), label(b))
	}
	if len(o.Causes) != 1 || o.Causes[0].Kind != CauseSetting || o.Causes[0].Setting != "random_page_cost" ||
		!o.Causes[0].Verified || o.Causes[0].Control != "1.1" || o.Causes[0].Candidate != "4" {
		t.Errorf("causes: %+v", o.Causes)
	}
	// A lookup by primary key plans the same on both.
	if s := rep.Outcomes[1]; s.Verdict != SamePlan || len(s.Causes) != 0 {
		t.Errorf("primary key lookup: %s %+v", s.Verdict, s.Causes)
	}
}

// TestWorkMem: work_mem 64MB on the control, 1MB on the candidate. The
// aggregate over all orders changes plan (a HashAggregate no longer fits)
// with work_mem the verified cause; the full sort keeps its plan and
// spills to disk: "same plan", with the external sort and the temporary
// blocks as evidence, and work_mem the cause.
func TestWorkMem(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, map[string]string{"work_mem": "64MB"}, map[string]string{"work_mem": "1MB"})
	p.both("postgres", shopSQL)
	p.both("postgres", "VACUUM ANALYZE")
	agg := "SELECT customer_id, sum(total) FROM orders GROUP BY customer_id"
	sort := "SELECT id, total FROM orders ORDER BY total, id"
	rep := p.run(Options{Analyze: true},
		Statement{Fingerprint: "agg", Database: "postgres", Query: agg},
		Statement{Fingerprint: "sort", Database: "postgres", Query: sort})
	o := rep.Outcomes[0]
	if o.Verdict != PlanChanged {
		t.Fatalf("aggregate: %s %s", o.Verdict, o.Main().Control.Plan.Shape())
	}
	t.Logf("aggregate: %s\n        -> %s", o.Main().Control.Plan.Shape(), o.Main().Candidate.Plan.Shape())
	if c, a, _ := first(t, &o); c.Kind != plan.Replaced || a.Name() != "HashAggregate" {
		t.Errorf("aggregate: first change %s of %q", c.Kind, label(a))
	}
	if len(o.Causes) == 0 || o.Causes[0].Setting != "work_mem" || !o.Causes[0].Verified || o.Causes[0].Control != "64MB" || o.Causes[0].Candidate != "1MB" {
		t.Errorf("aggregate causes: %+v", o.Causes)
	}
	s := rep.Outcomes[1]
	if s.Verdict != SamePlan {
		t.Fatalf("sort: %s", s.Verdict)
	}
	m := s.Main()
	spilled := lastGrowth(t, "sort: ", m, func(g plan.Growth) bool { return g.After.Spilled && !g.Before.Spilled })
	if spilled == nil || spilled.TempAdded() <= 0 {
		t.Fatalf("sort: no spill among %+v", m.Growths)
	}
	node := m.Candidate.Plan.Nodes()[spilled.Candidate]
	if node.Type != "Sort" || node.Sort == nil || !strings.HasPrefix(node.Sort.Method, "external") {
		t.Errorf("sort node: %s %+v", node.Label(), node.Sort)
	}
	if len(s.Causes) != 1 || s.Causes[0].Setting != "work_mem" || s.Causes[0].Evidence != "spill" || !s.Causes[0].Verified {
		t.Errorf("sort causes: %+v", s.Causes)
	}
}

// TestSharedBuffers: shared_buffers of 128kB on the candidate. The
// orders' aggregate plans the same, and its scan reads from outside
// shared_buffers what the control finds in them.
func TestSharedBuffers(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, nil, map[string]string{"shared_buffers": "128kB"})
	p.both("postgres", shopSQL)
	p.both("postgres", "VACUUM ANALYZE")
	q := "SELECT status, count(*), sum(total) FROM orders GROUP BY status"
	rep := p.run(Options{Analyze: true}, Statement{Fingerprint: "status", Database: "postgres", Query: q})
	o := rep.Outcomes[0]
	if o.Verdict != SamePlan {
		t.Fatalf("verdict %s", o.Verdict)
	}
	m := o.Main()
	scan := lastGrowth(t, "", m, func(g plan.Growth) bool { return m.Candidate.Plan.Nodes()[g.Candidate].Relation == "orders" })
	if scan == nil || scan.Before.SharedRead != 0 || scan.After.SharedRead < 1000 {
		t.Errorf("scan of orders: %+v", scan)
	}
	if len(o.Causes) != 1 || o.Causes[0].Setting != "shared_buffers" || o.Causes[0].Evidence != "reads" ||
		o.Causes[0].Control != "128MB" || o.Causes[0].Candidate != "128kB" {
		t.Errorf("causes: %+v", o.Causes)
	}
}

// lastGrowth is the last of m's growths for which is holds, nil for
// none; it fails t (its message after prefix) when nothing grew.
func lastGrowth(t *testing.T, prefix string, m *Explained, is func(plan.Growth) bool) *plan.Growth {
	t.Helper()
	if len(m.Growths) == 0 {
		t.Fatal(prefix + "nothing grew")
	}
	var last *plan.Growth
	for i, g := range m.Growths {
		if is(g) {
			last = &m.Growths[i]
		}
	}
	return last
}

func readAll(t *testing.T, files ...string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}
