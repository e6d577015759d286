package plan

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/goldentest"
)

// readFixture reads one EXPLAIN fixture in the format its name says.
func readFixture(t testing.TB, path string) *Plan {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p *Plan
	if filepath.Ext(path) == ".json" {
		p, err = ParseJSON(b)
	} else {
		p, err = ParseText(string(b))
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

func fixtures(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"testdata/explain/*.json", "testdata/explain/*.text"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	if len(out) < 40 {
		t.Fatalf("found %d fixtures", len(out))
	}
	return out
}

func TestShapesGolden(t *testing.T) {
	var b strings.Builder
	for _, f := range fixtures(t) {
		p := readFixture(t, f)
		fmt.Fprintf(&b, "%s %s %s\n", filepath.Base(f), p.Hash(), p.Shape())
	}
	golden := "testdata/shapes.golden"
	goldentest.Check(t, golden, b.String())
}

// TestFormatsAgree reads every statement's plan in the text and the JSON
// format: the trees must be the same, node for node, in everything both
// formats write.
func TestFormatsAgree(t *testing.T) {
	pairs := 0
	for _, f := range fixtures(t) {
		if filepath.Ext(f) != ".json" {
			continue
		}
		tf := strings.TrimSuffix(f, ".json") + ".text"
		if _, err := os.Stat(tf); err != nil {
			continue
		}
		pairs++
		j, x := readFixture(t, f), readFixture(t, tf)
		if j.Hash() != x.Hash() {
			t.Errorf("%s: hash %s (JSON) != %s (text)\n%s\n%s", f, j.Hash(), x.Hash(), j.Shape(), x.Shape())
			continue
		}
		if j.Analyzed != x.Analyzed || j.Timing != x.Timing {
			t.Errorf("%s: analyzed %v/%v timing %v/%v", f, j.Analyzed, x.Analyzed, j.Timing, x.Timing)
		}
		if (j.PlanningMS < 0) != (x.PlanningMS < 0) || (j.ExecutionMS < 0) != (x.ExecutionMS < 0) {
			t.Errorf("%s: planning %v/%v execution %v/%v", f, j.PlanningMS, x.PlanningMS, j.ExecutionMS, x.ExecutionMS)
		}
		jn, xn := j.Nodes(), x.Nodes()
		for i := range jn {
			a, b := jn[i], xn[i]
			where := fmt.Sprintf("%s node %d (%s)", f, i, a.Label())
			if a.Label() != b.Label() || a.Relation != b.Relation || a.Alias != b.Alias || a.Index != b.Index ||
				a.Schema != b.Schema || a.CTE != b.CTE || a.Function != b.Function || a.Subplan != b.Subplan {
				t.Errorf("%s: names differ: %+v\n%+v", where, *a, *b)
			}
			if a.Filter != b.Filter || a.IndexCond != b.IndexCond || a.RecheckCond != b.RecheckCond ||
				a.HashCond != b.HashCond || a.MergeCond != b.MergeCond || a.JoinFilter != b.JoinFilter ||
				!slices.Equal(a.SortKey, b.SortKey) || !slices.Equal(a.GroupKey, b.GroupKey) {
				t.Errorf("%s: expressions differ:\n%q %q %q %q %v %v\n%q %q %q %q %v %v", where,
					a.Filter, a.IndexCond, a.RecheckCond, a.HashCond, a.SortKey, a.GroupKey,
					b.Filter, b.IndexCond, b.RecheckCond, b.HashCond, b.SortKey, b.GroupKey)
			}
			// Estimates are the same plan's in both runs.
			if a.TotalCost != b.TotalCost || a.PlanRows != b.PlanRows || a.PlanWidth != b.PlanWidth || a.WorkersPlanned != b.WorkersPlanned {
				t.Errorf("%s: estimates differ: %v %v %v / %v %v %v", where, a.TotalCost, a.PlanRows, a.PlanWidth, b.TotalCost, b.PlanRows, b.PlanWidth)
			}
			if (a.Actual == nil) != (b.Actual == nil) || a.Actual != nil && (a.Actual.NeverExecuted != b.Actual.NeverExecuted || a.Actual.Loops != b.Actual.Loops) {
				t.Errorf("%s: actual %+v / %+v", where, a.Actual, b.Actual)
			}
			if (a.Sort == nil) != (b.Sort == nil) || a.Sort != nil && (a.Sort.Method != b.Sort.Method || a.Sort.SpaceType != b.Sort.SpaceType) {
				t.Errorf("%s: sort %+v / %+v", where, a.Sort, b.Sort)
			}
			if (a.Hash == nil) != (b.Hash == nil) || (a.HashAgg == nil) != (b.HashAgg == nil) {
				t.Errorf("%s: hash %+v %+v / %+v %+v", where, a.Hash, a.HashAgg, b.Hash, b.HashAgg)
			}
			if j.Buffers && x.Buffers && (a.Buffers == nil) != (b.Buffers == nil) {
				t.Errorf("%s: buffers %+v / %+v", where, a.Buffers, b.Buffers)
			}
		}
	}
	if pairs < 20 {
		t.Fatalf("only %d fixtures in both formats", pairs)
	}
}

func TestTextDetails(t *testing.T) {
	// The HashAggregate spilled; its figures are its own line's.
	p := readFixture(t, "testdata/explain/hash_join.text")
	root := p.Root
	if root.Type != "Aggregate" || root.Strategy != "Hashed" || root.HashAgg == nil ||
		*root.HashAgg != (HashAgg{PlannedPartitions: 4, Batches: 5, PeakMemoryKB: 8241, DiskKB: 7248}) || !root.Spilled() {
		t.Errorf("hash aggregate: %+v %+v", root, root.HashAgg)
	}
	if b := root.Buffers; b == nil || b.SharedHit != 2183 || b.TempRead != 654 || b.TempWritten != 1391 {
		t.Errorf("buffers: %+v", b)
	}
	if !slices.Equal(root.GroupKey, []string{"c.name"}) {
		t.Errorf("group key: %q", root.GroupKey)
	}
	join := root.Children[0]
	if join.Type != "Hash Join" || join.JoinType != "Inner" || join.HashCond != "(o.customer_id = c.id)" || len(join.Children) != 2 {
		t.Fatalf("join: %+v", join)
	}
	scan := join.Children[0]
	if scan.Relation != "orders" || scan.Alias != "o" || scan.Filter != "(status = 'done'::text)" || scan.Actual.RemovedByFilter != 2000 ||
		scan.Actual.Rows != 198000 || scan.Actual.TotalMS != 70.512 {
		t.Errorf("scan: %+v %+v", scan, scan.Actual)
	}
	hash := join.Children[1]
	if hash.Hash == nil || *hash.Hash != (Hash{Buckets: 65536, OriginalBuckets: 65536, Batches: 1, OriginalBatches: 1, PeakMemoryKB: 3247}) || hash.Spilled() {
		t.Errorf("hash: %+v", hash.Hash)
	}
	if p.PlanningMS != 1.821 || p.ExecutionMS != 831.204 {
		t.Errorf("summary: %v %v", p.PlanningMS, p.ExecutionMS)
	}

	// A worker's own figures do not overwrite the node's.
	p = readFixture(t, "testdata/explain/jit_verbose.text")
	var sort *Node
	p.Root.Walk(func(n *Node) bool {
		if n.Type == "Sort" {
			sort = n
		}
		return true
	})
	if sort == nil || sort.Buffers.SharedHit != 1675 || sort.Sort.Method != "quicksort" || sort.Sort.SpaceKB != 25 {
		t.Errorf("sort: %+v %+v", sort, sort.Sort)
	}
	if p.JIT == nil || p.JIT.Functions != 17 || p.JIT.TotalMS != 82.098 {
		t.Errorf("JIT: %+v", p.JIT)
	}
	want := map[string]string{"jit_above_cost": "0", "parallel_setup_cost": "0", "parallel_tuple_cost": "0"}
	if fmt.Sprint(p.Settings) != fmt.Sprint(want) {
		t.Errorf("settings: %v", p.Settings)
	}
	leaf := p.Nodes()[len(p.Nodes())-1]
	if leaf.Schema != "public" || leaf.Relation != "orders" || !leaf.Parallel || leaf.Label() != "Parallel Seq Scan on public.orders" {
		t.Errorf("verbose leaf: %q %+v", leaf.Label(), leaf)
	}

	p = readFixture(t, "testdata/explain/sort_external.text")
	s := p.Root.Children[0]
	if !s.Spilled() || s.Sort.SpaceKB != 4392 || s.Sort.SpaceType != "Disk" || s.Buffers.TempWritten != 3868 {
		t.Errorf("external sort: %+v %+v", s.Sort, s.Buffers)
	}

	p = readFixture(t, "testdata/explain/never_timing_off.text")
	inner := p.Root.Children[1]
	if !p.Analyzed || p.Timing || inner.Actual == nil || !inner.Actual.NeverExecuted || inner.Actual.Loops != 0 {
		t.Errorf("never executed: %+v %+v", p, inner.Actual)
	}

	p = readFixture(t, "testdata/explain/initplan.text")
	if sub := p.Root.Children[0]; sub.Subplan != "InitPlan 1 (returns $0)" || sub.Type != "Aggregate" {
		t.Errorf("initplan: %+v", sub)
	}
	p = readFixture(t, "testdata/explain/update.plain.text")
	if p.Root.Type != "ModifyTable" || p.Root.Operation != "Update" || p.Root.Relation != "orders" || p.Analyzed {
		t.Errorf("update: %+v", p.Root)
	}
}

// TestLabels checks that every node line of the text fixtures reads into
// a node whose Label is the line's label again.
func TestLabels(t *testing.T) {
	n := 0
	for _, f := range fixtures(t) {
		if filepath.Ext(f) != ".text" || strings.Contains(f, "verbose") {
			continue
		}
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimLeft(line, " ")
			line = strings.TrimPrefix(line, "->  ")
			i := strings.Index(line, "  (cost=")
			if i < 0 {
				continue
			}
			node, err := parseLabel(line[:i])
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if node.Label() != line[:i] {
				t.Errorf("%s: label %q reads back as %q", f, line[:i], node.Label())
			}
			n++
		}
	}
	if n < 100 {
		t.Errorf("checked %d labels", n)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"", "hello world", "Seq Scan on", "Frobnicate  (cost=0.00..1.00 rows=1 width=4)",
		"Seq Scan on t  (cost=0.00..1.00 rows=1 width=4)\n->  Seq Scan on u  (cost=0.00..1.00 rows=1 width=4)\n    ->  Bogus",
		"Index Scan on t  (cost=0.00..1.00 rows=1 width=4)",
	} {
		if p, err := ParseText(in); err == nil {
			t.Errorf("ParseText(%q) = %s, want an error", in, p.Shape())
		}
	}
	for _, in := range []string{``, `[]`, `[{}, {}]`, `{"Query Text": "x"}`, `{"Plan": {"Plans": []}}`, `{"Plan": {"Node Type": "Seq Scan", "Plans": 3}}`, `[1]`} {
		if _, err := ParseJSON([]byte(in)); err == nil {
			t.Errorf("ParseJSON(%q): want an error", in)
		}
	}
}

// logEntries returns the auto_explain entries of a stderr log: each
// message after "plan:", continuation lines included, as a log reader
// attaches it to its statement.
func logEntries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := regexp.MustCompile(`^\d{4}-\d\d-\d\d `)
	var out []string
	cur := -1
	for _, line := range strings.Split(string(b), "\n") {
		if start.MatchString(line) {
			cur = -1
			if i := strings.Index(line, "LOG:  duration: "); i >= 0 && strings.HasSuffix(line, "plan:") {
				out = append(out, "")
				cur = len(out) - 1
			}
			continue
		}
		if cur >= 0 {
			out[cur] += line + "\n"
		}
	}
	return out
}

func TestAutoExplainStderr(t *testing.T) {
	entries := logEntries(t, "testdata/autoexplain/stderr.log")
	if len(entries) != 6 {
		t.Fatalf("%d entries", len(entries))
	}
	hashOf := func(name string) string { return readFixture(t, "testdata/explain/"+name).Hash() }
	want := []struct {
		hash     string
		analyzed bool
		query    string
	}{
		{hashOf("index_scan.json"), true, "SELECT id, name FROM customers WHERE email = 'user42@example.com'"},
		{hashOf("nested_loop.json"), true, "SELECT c.name, o.total\nFROM customers c JOIN orders o ON o.customer_id = c.id\nWHERE c.email = 'user7@example.com'"},
		{hashOf("index_scan.json"), true, "SELECT id, name FROM customers WHERE email = 'user42@example.com'"},
		{hashOf("bitmap.json"), true, "SELECT count(*) FROM orders WHERE customer_id IN (1,2,3,4,5) OR status = 'pending'"},
		{"", false, "SELECT id FROM customers WHERE id = 3"},
		{"", true, "PREPARE p(text) AS SELECT id FROM customers WHERE email = $1"},
	}
	for i, e := range entries {
		p, err := ParseAutoExplain(e)
		if err != nil {
			t.Errorf("entry %d: %v\n%s", i, err, e)
			continue
		}
		if want[i].hash != "" && p.Hash() != want[i].hash {
			t.Errorf("entry %d: shape %s, want that of EXPLAIN", i, p.Shape())
		}
		if p.Analyzed != want[i].analyzed || p.QueryText != want[i].query {
			t.Errorf("entry %d: analyzed %v query %q", i, p.Analyzed, p.QueryText)
		}
		if p.Analyzed && !p.Buffers {
			t.Errorf("entry %d: no buffers", i)
		}
	}
	// The duration line may come with the plan.
	p, err := ParseAutoExplain("duration: 0.030 ms  plan:\n" + entries[0])
	if err != nil || p.Root.Index != "customers_email_idx" {
		t.Errorf("with the duration line: %v", err)
	}
}

func TestAutoExplainCSVAndJSONLog(t *testing.T) {
	var messages []string
	f, err := os.Open("testdata/autoexplain/csvlog.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if strings.HasPrefix(rec[13], "duration: ") {
			messages = append(messages, rec[13])
		}
	}
	b, err := os.ReadFile("testdata/autoexplain/jsonlog.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct{ Message string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(m.Message, "duration: ") {
			messages = append(messages, m.Message)
		}
	}
	if len(messages) != 4 {
		t.Fatalf("%d plans in the csvlog and jsonlog", len(messages))
	}
	nested := readFixture(t, "testdata/explain/nested_loop.json").Hash()
	index := readFixture(t, "testdata/explain/index_scan.json").Hash()
	for i, m := range messages {
		p, err := ParseAutoExplain(m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := []string{nested, index}[i%2]; p.Hash() != want {
			t.Errorf("message %d: %s", i, p.Shape())
		}
	}
}
