package logread

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// autoExplainRuns are the auto_explain settings the server logs the
// workload with, each in turn, in one log.
var autoExplainRuns = []struct {
	format  event.PlanFormat
	analyze bool
}{
	{event.PlanText, false},
	{event.PlanText, true},
	{event.PlanJSON, false},
	{event.PlanJSON, true},
	{event.PlanYAML, true},
	{event.PlanXML, false},
}

// autoExplainWorkload runs, for each of autoExplainRuns, what a plan is
// logged for: simple queries (the plan before the statement's line), a
// string of two statements (two plans, one execution), the extended
// protocol's SELECT (the plan after the execute line, at Sync) and write
// (before), and a function whose inner statement is explained too
// (auto_explain.log_nested_statements: a plan of no logged statement).
func autoExplainWorkload(t *testing.T, ctx context.Context, conn *pgconn.PgConn) {
	execSQL(t, ctx, conn, "CREATE TABLE t (id int PRIMARY KEY, v text)", "")
	execSQL(t, ctx, conn, "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g", "")
	execSQL(t, ctx, conn, "CREATE FUNCTION f() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM t WHERE id > 50'", "")
	execSQL(t, ctx, conn, "SET auto_explain.log_nested_statements = on", "")
	for _, run := range autoExplainRuns {
		execSQL(t, ctx, conn, fmt.Sprintf("SET auto_explain.log_format = %s", run.format), "")
		execSQL(t, ctx, conn, fmt.Sprintf("SET auto_explain.log_analyze = %v", run.analyze), "")
		tag := fmt.Sprintf("%s-%v", run.format, run.analyze)
		execSQL(t, ctx, conn, "SELECT count(*) FROM t WHERE v <> '"+tag+"' AND v <> 'a''\"b<c>&'", "")
		execSQL(t, ctx, conn, "UPDATE t SET v = '"+tag+"' WHERE id = 1", "")
		execSQL(t, ctx, conn, "SELECT 1 AS \"first of two "+tag+"\"; SELECT v FROM t WHERE id = 2", "")
		if err := conn.ExecParams(ctx, "SELECT v FROM t WHERE id = $1 AND v <> $2", [][]byte{[]byte("3"), []byte(tag)}, nil, nil, nil).Read().Err; err != nil {
			t.Fatal(err)
		}
		if err := conn.ExecParams(ctx, "UPDATE t SET v = $2 WHERE id = $1", [][]byte{[]byte("4"), []byte(tag)}, nil, nil, nil).Read().Err; err != nil {
			t.Fatal(err)
		}
		execSQL(t, ctx, conn, "SELECT f() AS \""+tag+"\"", "")
	}
}

// wantPlans is how many plans each execution of the workload has, by the
// start of its query text (the SETs and the table's creation have none),
// and the plans that belong to no execution: the function's inner
// statement, once a run.
var wantPlans = map[string]int{
	"SELECT count(*) FROM t WHERE v <> ": 1,
	"UPDATE t SET v = '":                 1,
	"SELECT 1 AS \"first of two ":        2,
	"SELECT v FROM t WHERE id = $1":      1,
	"UPDATE t SET v = $2 WHERE id = $1":  1,
	"SELECT f() AS ":                     1,
	"INSERT INTO t SELECT g":             1,
}

// checkAutoExplain checks the plans read from one of the workload's logs:
// every explained execution has its plans, in the format and with the
// analysis its run logged them with, and every plan line is counted.
func checkAutoExplain(t *testing.T, path string) {
	t.Helper()
	evs, r := readAllEvents(t, path, Options{})
	runs := 0
	for _, ev := range statements(evs) {
		want := 0
		for q, n := range wantPlans {
			if strings.HasPrefix(ev.Query, q) {
				want = n
			}
		}
		plans := ev.Plans()
		if len(plans) != want {
			t.Errorf("%s: %q has %d plans, want %d", path, ev.Query, len(plans), want)
			continue
		}
		for _, p := range plans {
			runs++
			if p.Duration < 0 || p.Duration > ev.Duration {
				t.Errorf("%s: %q: plan duration %d, statement %d", path, ev.Query, p.Duration, ev.Duration)
			}
			switch p.Format {
			case event.PlanText:
				if !strings.HasPrefix(p.Text, "Query Text: "+ev.Query+"\n") {
					t.Errorf("%s: text plan of %q: %q", path, ev.Query, p.Text)
				}
			case event.PlanJSON:
				if !strings.HasPrefix(p.Text, "{\n  \"Query Text\": ") || !strings.HasSuffix(p.Text, "}") {
					t.Errorf("%s: json plan of %q: %q", path, ev.Query, p.Text)
				}
			case event.PlanYAML:
				if !strings.HasPrefix(p.Text, "Query Text: \"") || !strings.Contains(p.Text, "\nPlan: ") {
					t.Errorf("%s: yaml plan of %q: %q", path, ev.Query, p.Text)
				}
			case event.PlanXML:
				if !strings.HasPrefix(p.Text, "<explain ") || !strings.HasSuffix(p.Text, "</explain>") {
					t.Errorf("%s: xml plan of %q: %q", path, ev.Query, p.Text)
				}
			default:
				t.Errorf("%s: %q: plan format %s", path, ev.Query, p.Format)
			}
		}
		// The runs' tags say which format and analysis were on.
		for _, run := range autoExplainRuns {
			if len(plans) > 0 && strings.Contains(ev.Query, fmt.Sprintf("%s-%v", run.format, run.analyze)) {
				for _, p := range plans {
					if p.Format != run.format || p.Analyzed != run.analyze {
						t.Errorf("%s: %q: plan %s analyzed=%v, want %s analyzed=%v", path, ev.Query, p.Format, p.Analyzed, run.format, run.analyze)
					}
				}
			}
		}
	}
	c := r.Counters()
	// One nested plan a run, counted apart; plans are no other message.
	if n := c.Skipped[SkipPlanAlone]; n == 0 {
		t.Errorf("%s: no plan without statement counted: %v", path, c.Skipped)
	}
	if u := c.Unparseable(); u != 0 {
		t.Errorf("%s: %d unparseable: %v", path, u, c.Samples)
	}
	// Every plan but the nested statement's of each run is attached.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if logged := bytes.Count(b, []byte(" ms  plan:")); runs != logged-len(autoExplainRuns) {
		t.Errorf("%s: %d plans attached, of %d logged: want all but the %d nested ones", path, runs, logged, len(autoExplainRuns))
	}
}

// TestAutoExplainFromServer has a real server log its plans with
// auto_explain to stderr, csvlog and jsonlog at once, in the text and
// JSON formats with and without log_analyze, and in YAML and XML, and
// reads them: each plan
// is attached to the execution it explains. With -update, the logs are
// kept in testdata/autoexplain.
func TestAutoExplainFromServer(t *testing.T) {
	t.Parallel()
	logs := logOf(t, map[string]string{
		"shared_preload_libraries":      "auto_explain",
		"auto_explain.log_min_duration": "0",
		"log_destination":               "stderr,csvlog,jsonlog",
		"log_line_prefix":               "%m [%p] %q%u@%d/%a %c ",
	}, func(ctx context.Context, _ *pgcluster.Cluster, conn *pgconn.PgConn) {
		autoExplainWorkload(t, ctx, conn)
	})
	for _, ext := range []string{"log", "csv", "json"} {
		b, err := os.ReadFile(logs[ext])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(" ms  plan:")) {
			t.Fatalf("%s: no plan logged:\n%s", logs[ext], b)
		}
		checkAutoExplain(t, logs[ext])
		if *update {
			dst := filepath.Join("testdata/autoexplain", map[string]string{"log": "stderr.log", "csv": "csvlog.csv", "json": "jsonlog.json"}[ext])
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestAutoExplainFixtures reads the logs TestAutoExplainFromServer kept
// (testdata/autoexplain): the same checks, with no server.
func TestAutoExplainFixtures(t *testing.T) {
	for _, name := range []string{"stderr.log", "csvlog.csv", "jsonlog.json"} {
		t.Run(name, func(t *testing.T) {
			checkAutoExplain(t, filepath.Join("testdata/autoexplain", name))
		})
	}
}

// FuzzAutoExplain reads a session's statement and an auto_explain plan
// logged before it (a simple query) or after it (an execute, whose plan
// comes at Sync), whatever the plan's text: every line is counted, and
// the plan is attached exactly when its query text is the statement's.
func FuzzAutoExplain(f *testing.F) {
	f.Add("SELECT 1", "Query Text: SELECT 1\nResult  (cost=0.00..0.01 rows=1 width=4)", false)
	f.Add("SELECT v FROM t WHERE id = $1", "Query Text: SELECT v FROM t WHERE id = $1\nIndex Scan using t_pkey on t  (cost=0.15..8.17 rows=1 width=32) (actual time=0.01..0.01 rows=1 loops=1)", true)
	f.Add("SELECT 1", "{\n  \"Query Text\": \"SELECT 1\",\n  \"Plan\": {\n    \"Node Type\": \"Result\"\n  }\n}", false)
	f.Add("SELECT 'a\"b'", `Query Text: "SELECT 'a\"b'"`+"\nPlan: \n  Node Type: \"Result\"", true)
	f.Add("SELECT 1 < 2", "<explain xmlns=\"http://www.postgresql.org/2009/explain\">\n  <Query>\n    <Query-Text>SELECT 1 &lt; 2</Query-Text>\n  </Query>\n</explain>", false)
	f.Add("SELECT 1", "Query Text: SELECT 2\nResult", true)
	f.Fuzz(func(t *testing.T, query, plan string, late bool) {
		if strings.ContainsAny(query, "\n\r") || strings.Contains(plan, "\r") {
			return // the server writes neither on one line of stderr
		}
		const ts = "2026-11-22 08:11:02.123 UTC [7] app@shop "
		stmt := ts + "LOG:  duration: 0.500 ms  statement: " + query + "\n"
		if late {
			stmt = ts + "LOG:  duration: 0.500 ms  execute <unnamed>: " + query + "\n"
		}
		explain := ts + "LOG:  duration: 0.100 ms  plan:\n\t" + strings.ReplaceAll(plan, "\n", "\n\t") + "\n"
		log := explain + stmt
		if late {
			log = stmt + explain
		}
		r, err := NewReader(strings.NewReader(log), "fuzz", Options{Prefix: "%m [%p] %u@%d "})
		if err != nil {
			t.Fatal(err)
		}
		evs := allEvents(t, r)
		c := r.Counters()
		if want := int64(strings.Count(log, "\n")); c.Total != want || c.Total != c.Parsed+c.SkippedTotal() {
			t.Fatalf("lines: total %d parsed %d skipped %v, the log has %d", c.Total, c.Parsed, c.Skipped, want)
		}
		var got []event.Plan
		for _, ev := range evs {
			got = append(got, ev.Plans()...)
		}
		pp := pendingPlan{p: event.Plan{Text: plan}}
		pp.p.Format, pp.query, pp.p.Analyzed = readPlan(plan)
		if want := pp.explains(query) && len(statements(evs)) == 1; want != (len(got) == 1) {
			t.Fatalf("attached %d plans, want one: %v", len(got), want)
		}
		if len(got) == 1 && (got[0].Text != plan || got[0].Duration != 100) {
			t.Fatalf("plan %+v, want the text logged and 0.1 ms", got[0])
		}
	})
}

// TestAttachedPlansParse checks the contract with internal/plan: every
// plan the reader attaches in a format plan reads (text, JSON) parses,
// and names the statement it is attached to.
func TestAttachedPlansParse(t *testing.T) {
	for _, name := range []string{"stderr.log", "csvlog.csv", "jsonlog.json"} {
		evs, _ := readAllEvents(t, filepath.Join("testdata/autoexplain", name), Options{})
		n := 0
		for _, ev := range evs {
			for _, p := range ev.Plans() {
				if p.Format != event.PlanText && p.Format != event.PlanJSON {
					continue
				}
				pl, err := plan.ParseAutoExplain(p.Text)
				if err != nil {
					t.Errorf("%s: the plan of %q: %v", name, ev.Query, err)
					continue
				}
				if pl.QueryText != ev.Query {
					t.Errorf("%s: the plan of %q names %q", name, ev.Query, pl.QueryText)
				}
				n++
			}
		}
		if n < 4*6 {
			t.Errorf("%s: %d plans parsed", name, n)
		}
	}
}
