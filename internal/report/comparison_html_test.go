package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

type synthQuery struct {
	fp, text string
	n        int
	meanUS   float64
	errs     int
}

func synthRun(t *testing.T, kind string, seed uint64, timeline bool, qs ...synthQuery) *compare.Run {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	s := querystats.NewSet()
	for _, q := range qs {
		for i := range q.n {
			s.AddAt(q.fp, q.text, 1_700_000_000_000_000+int64(i)*2000, int64(q.meanUS*(0.5+r.ExpFloat64()*0.5)), i < q.errs)
		}
	}
	rows, err := s.Rows(querystats.RowOptions{Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]any{"kind": kind, "latency_source": "server_log", "queries": rows,
		"statements":         map[string]int64{"total": 12000, "failed": 30},
		"errors_by_sqlstate": map[string]int64{"23505": int64(seed) * 10},
		"first_time":         "2025-01-01T10:00:00.000000Z", "last_time": "2025-01-01T10:01:00.000000Z"}
	if timeline {
		tl := map[string]any{"start": "2025-01-01T10:00:00.000000Z", "bucket_ms": 1000}
		var calls []int64
		var p95 []float64
		for range 60 {
			calls = append(calls, 180+int64(r.IntN(40))+int64(seed)*10)
			p95 = append(p95, 2+float64(seed)*r.Float64())
		}
		tl["calls"], tl["p95_ms"] = calls, p95
		res["timeline"] = tl
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	run, err := results.Decode(b, kind+"-"+string(rune('0'+seed))+".json")
	if err != nil {
		t.Fatal(err)
	}
	return run
}

var synthQueries = []synthQuery{
	{"a1b2c3d4e5f60718", "SELECT abalance FROM pgbench_accounts WHERE aid = $1", 5000, 300, 0},
	{"b2c3d4e5f6071829", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", 5000, 900, 0},
	{"c3d4e5f607182930", "SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id\n\tWHERE c.email = $1 AND o.created_at > now() - interval '1 day'", 400, 2500, 0},
	{"d4e5f60718293041", "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)", 5000, 200, 12},
	{"e5f6071829304152", "SELECT '</script><b>not bold</b>' AS x", 50, 100, 0},
	{"f607182930415263", "VACUUM ANALYZE pgbench_branches", 3, 30000, 0},
}

func syntheticComparison(t *testing.T) *compare.Report {
	t.Helper()
	cand := append([]synthQuery(nil), synthQueries...)
	cand[2].meanUS = 40000 // lost its index
	cand[1].meanUS = 1300
	cand[3].errs = 300
	cand[5] = synthQuery{"0718293041526374", "SELECT count(*) FROM new_table", 200, 500, 0}
	base := synthRun(t, "analysis", 1, true, synthQueries...)
	c := synthRun(t, "analysis", 2, true, cand...)
	rules, _ := judge.ParsePairRules([]string{"p95>+20%"})
	rep, err := compare.Compare(base, c, compare.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func syntheticSummary(t *testing.T) *compare.Report {
	return compare.Summarize(synthRun(t, "analysis", 1, false, synthQueries...))
}

func TestWriteSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := htmlreport.Write(&buf, ComparisonPage(syntheticComparison(t), ComparisonOptions{})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	htmltest.AssertOffline(t, out)
	if !strings.Contains(out, "&lt;/script&gt;&lt;b&gt;not bold") {
		t.Error("a query holding HTML is not escaped")
	}
	if !strings.Contains(out, "FAIL: p95&gt;&#43;20% broken") {
		t.Errorf("verdict missing from the page")
	}
}

func TestComparisonPageLayout(t *testing.T) {
	rep := syntheticComparison(t)
	p := ComparisonPage(rep, ComparisonOptions{})
	var ids []string
	for _, s := range p.Sections {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, ","); got != "summary,effects,timeline,distributions,errors,queries" {
		t.Errorf("sections %s", got)
	}
	worst := p.Sections[0].Tables[0]
	if len(worst.Rows) == 0 || !strings.HasPrefix(worst.Rows[0].Cells[6].Title, "c3d4e5f607182930") {
		t.Errorf("the worst regression is not the query that lost its index: %+v", worst.Rows)
	}
	if p.Verdict.Status != "fail" {
		t.Errorf("verdict %+v", p.Verdict)
	}
}

// TestSharedCPUCaveat: the verdict box carries the comparison's caveat
// that a speed-0 replay on the target's machine undersells its rate, and
// only then.
func TestSharedCPUCaveat(t *testing.T) {
	tests := []struct {
		name  string
		speed float64
		local bool
		want  bool
	}{
		{"speed 0, local", 0, true, true},
		{"speed 0, remote", 0, false, false},
		{"speed 1, local", 1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := synthRun(t, "replay", 1, false, synthQueries...)
			cand := synthRun(t, "replay", 2, false, synthQueries...)
			base.Speed = 1
			cand.Speed, cand.TargetLocal, cand.WallSeconds, cand.ClientCPUSeconds = tt.speed, tt.local, 60, 45
			rep, err := compare.Compare(base, cand, compare.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := htmlreport.Write(&buf, ComparisonPage(rep, ComparisonOptions{})); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			start := strings.Index(out, `id="verdict"`)
			if start < 0 {
				t.Fatal("no verdict box in the page")
			}
			verdict, _, _ := strings.Cut(out[start:], "</div>")
			got := strings.Contains(verdict, "<li>replay-2.json replayed at speed 0 on the target")
			if got != tt.want {
				t.Errorf("caveat shown %v, want %v; verdict box:\n%s", got, tt.want, verdict)
			}
			if tt.want && !strings.Contains(verdict, "45.0 CPU-seconds (0.75 cores on average)") {
				t.Errorf("the caveat does not state the replayer's CPU:\n%s", verdict)
			}
		})
	}
}

// The renderings the tests read, and the checks they make of them.

// renderPage is page p as HTML.
func renderPage(t *testing.T, p htmlreport.Page) string {
	t.Helper()
	var buf bytes.Buffer
	if err := htmlreport.Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// comparisonText is WriteComparison's text of rep, top queries a list.
func comparisonText(t *testing.T, rep *compare.Report, top int) string {
	t.Helper()
	var b strings.Builder
	if err := WriteComparison(&b, rep, top); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// comparisonJSON is rep's JSON document.
func comparisonJSON(t *testing.T, rep *compare.Report) []byte {
	t.Helper()
	js, err := json.Marshal(ComparisonDocument(rep))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// wantIn fails t for each of wants that got (what names it) lacks, and
// then shows got.
func wantIn(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	lacks := false
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q", what, want)
			lacks = true
		}
	}
	if lacks {
		t.Logf("%s:\n%s", what, got)
	}
}

// workRuns are six runs of synthQueries[:4], three a side (control 1-3,
// then candidate 1-3), run i with the server-side evidence ev(i).
func workRuns(t *testing.T, ev func(i int) observe.Evidence) (base, cand []*compare.Run) {
	t.Helper()
	for i := range 6 {
		run := synthRun(t, "analysis", uint64(1+i%3), false, synthQueries[:4]...)
		run.Source = []string{"control 1", "control 2", "control 3", "candidate 1", "candidate 2", "candidate 3"}[i]
		b, err := json.Marshal(ev(i))
		if err != nil {
			t.Fatal(err)
		}
		run.Evidence = b
		if i < 3 {
			base = append(base, run)
		} else {
			cand = append(cand, run)
		}
	}
	return base, cand
}

// busierRuns are three runs a side of synthQueries[:2]: on the candidate
// the first (the lookup) 100x slower, the second 1.5x, slower beside it
// while the server was busier.
func busierRuns(t *testing.T) (base, cand []*compare.Run) {
	t.Helper()
	for i := range 3 {
		base = append(base, synthRun(t, "analysis", uint64(1+i), false, synthQueries[:2]...))
		qs := append([]synthQuery(nil), synthQueries[:2]...)
		qs[0].meanUS *= 100
		qs[1].meanUS *= 1.5
		cand = append(cand, synthRun(t, "analysis", uint64(4+i), false, qs...))
	}
	return base, cand
}

// rulesOf is the rules of spec, as --fail-on gives them.
func rulesOf(t *testing.T, spec string) []compare.Rule {
	t.Helper()
	rules, err := judge.ParsePairRules([]string{spec})
	if err != nil {
		t.Fatal(err)
	}
	return rules
}
