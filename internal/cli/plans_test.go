package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// plansShopSQL is the shop of the plan tests: customers looked up by
// email through customers_email_idx, and their orders.
const plansShopSQL = `
CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL, name text NOT NULL);
INSERT INTO customers SELECT i, 'user' || i || '@example.com', 'Customer ' || i FROM generate_series(1, 50000) AS i;
CREATE INDEX customers_email_idx ON customers (email);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, total numeric(10,2) NOT NULL);
INSERT INTO orders SELECT i, 1 + (i * 7919) % 50000, (i % 500) + 0.99 FROM generate_series(1, 100000) AS i;
CREATE INDEX orders_customer_idx ON orders (customer_id);
`

const lookupSQL = "SELECT id, name FROM customers WHERE email = $1"

// plansPair is a control and a candidate that lacks customers_email_idx,
// each with its log of the same traffic.
type plansPair struct {
	ctl, cand *pgcluster.Cluster
	// ctlLogs are the control's logs, one per auto_explain format when
	// it ran auto_explain; candLog the candidate's.
	ctlLogs map[string]string
	candLog string
}

// startPlansPair starts both servers, runs the traffic on each and keeps
// their logs; the servers stay up for report to explain on. With
// autoExplain, the control logs its plans, first in text then in JSON,
// each in its own log.
func startPlansPair(t *testing.T, autoExplain bool) *plansPair {
	t.Helper()
	ctx := context.Background()
	settings := workload.LogSettings()
	settings["log_connections"], settings["log_disconnections"] = "off", "off"
	ctlSettings := maps.Clone(settings)
	if autoExplain {
		ctlSettings["shared_preload_libraries"] = "pg_stat_statements,auto_explain"
		ctlSettings["auto_explain.log_min_duration"] = "0"
		ctlSettings["auto_explain.log_format"] = "text"
	}
	p := &plansPair{ctlLogs: map[string]string{}}
	var wg sync.WaitGroup
	wg.Go(func() { p.ctl = pgclustertest.StartT(t, pgcluster.Options{Settings: ctlSettings}) })
	wg.Go(func() { p.cand = pgclustertest.StartT(t, pgcluster.Options{Settings: settings}) })
	wg.Wait()
	if p.ctl == nil || p.cand == nil {
		t.FailNow()
	}
	for _, c := range []*pgcluster.Cluster{p.ctl, p.cand} {
		wg.Go(func() {
			for _, sql := range []string{plansShopSQL, "VACUUM ANALYZE"} {
				if err := c.Exec(ctx, "postgres", sql); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	mustExec(t, p.cand, "postgres", "DROP INDEX customers_email_idx")
	dir := t.TempDir()
	formats := []string{"none"}
	if autoExplain {
		formats = []string{"text", "json"}
	}
	for _, f := range formats {
		if f == "json" {
			mustExec(t, p.ctl, "postgres", "ALTER SYSTEM SET auto_explain.log_format = json", "SELECT pg_reload_conf()")
		}
		plansTraffic(t, p.ctl)
		p.ctlLogs[f] = frozenLog(t, p.ctl, filepath.Join(dir, "control-"+f+".log"))
	}
	plansTraffic(t, p.cand)
	p.candLog = frozenLog(t, p.cand, filepath.Join(dir, "candidate.log"))
	return p
}

// plansTraffic looks customers up by email, 60 times with the extended
// protocol, and counts their orders.
func plansTraffic(t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	conn := pgclustertest.PgConn(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	for i := range 60 {
		email := fmt.Sprintf("user%d@example.com", 1+(i*797)%50000)
		if r := conn.ExecParams(ctx, lookupSQL, [][]byte{[]byte(email)}, nil, nil, nil).Read(); r.Err != nil {
			t.Fatal(r.Err)
		}
		id := fmt.Sprint(1 + (i*313)%50000)
		if r := conn.ExecParams(ctx, "SELECT count(*) FROM orders WHERE customer_id = $1", [][]byte{[]byte(id)}, nil, nil, nil).Read(); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// frozenLog stops c's server so that its stderr log is complete, copies
// what it logged since the last call to path, empties its logs and
// starts the server again.
func frozenLog(t *testing.T, c *pgcluster.Cluster, path string) string {
	t.Helper()
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	// A restart may have started another file: the ones before were
	// emptied, so their concatenation is what was logged since.
	files, err := c.LogFiles("*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("log files %v: %v", files, err)
	}
	var b []byte
	for _, f := range files {
		data := readFile(t, f)
		b = append(b, data...)
	}
	writeFile(t, path, b)
	for _, f := range files {
		if err := os.Truncate(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.StartServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	return path
}

// plansJSON is what the tests read of report's JSON plans.
type plansJSON struct {
	Plans struct {
		Outcomes []struct {
			Fingerprint string `json:"fingerprint"`
			Query       string `json:"query"`
			Verdict     string `json:"verdict"`
			Generic     bool   `json:"generic"`
			Explained   []struct {
				Sample  string `json:"sample"`
				Control *struct {
					Mode string `json:"mode"`
				} `json:"control"`
				Candidate *struct {
					Mode string `json:"mode"`
				} `json:"candidate"`
			} `json:"explained"`
			Causes []struct {
				Kind  string `json:"kind"`
				Index string `json:"index"`
			} `json:"causes"`
			Problems []struct {
				Side string `json:"side"`
				Kind string `json:"kind"`
			} `json:"problems"`
		} `json:"outcomes"`
	} `json:"plans"`
	Findings struct {
		NotEvaluated []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		} `json:"not_evaluated"`
	} `json:"findings"`
}

func readPlansJSON(t *testing.T, path string) plansJSON {
	t.Helper()
	b := readFile(t, path)
	var r plansJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

const droppedIndexLine = "plan changed: Index Scan (customers_email_idx) -> Seq Scan (customers); cause: index missing on candidate"

// TestReportPlansDroppedIndex: report --control-dsn --candidate-dsn on
// the analyses of both servers' logs names the lookup's plan change and
// its cause, in the summary, the JSON and the page; with kept samples
// the plans are custom, without they are generic and said so; no
// parameter value reaches the report; and the missing-index finding is
// evaluated on the plans.
func TestReportPlansDroppedIndex(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	p := startPlansPair(t, false)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	for i, args := range [][]string{
		{"analyze", "--keep-samples", "--json", out("base-samples.json"), p.ctlLogs["none"]},
		{"analyze", "--json", out("base.json"), p.ctlLogs["none"]},
		{"analyze", "--json", out("cand.json"), p.candLog},
	} {
		code, stdout, stderr := runCLI(ctx, "", args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		if strings.Contains(stdout, "parameter values kept for") != (i == 0) {
			t.Errorf("%v: the summary says wrongly whether values were kept:\n%s", args, stdout)
		}
	}
	// Values are kept when asked, and only then.
	kept, err := results.ReadFile(out("base-samples.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !kept.KeptSamples || len(kept.Samples) == 0 {
		t.Fatalf("analyze --keep-samples kept no sample")
	}
	for _, f := range []string{"base.json", "cand.json"} {
		b, _ := os.ReadFile(out(f))
		if strings.Contains(string(b), "@example.com") || strings.Contains(string(b), `"samples"`) {
			t.Errorf("%s holds parameter values without --keep-samples", f)
		}
	}

	for _, tc := range []struct {
		name, base string
		generic    bool
	}{
		{"samples", "base-samples.json", false},
		{"generic", "base.json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"report", out(tc.base), out("cand.json"), "--control-dsn", p.ctl.DSN("postgres"), "--candidate-dsn", p.cand.DSN("postgres"),
				"--json", out(tc.name + ".json"), "--html", out(tc.name + ".html")}
			code, stdout, stderr := runCLI(ctx, "", args...)
			if code != ExitOK && code != ExitRegression {
				t.Fatalf("report: exit %d\n%s", code, stderr)
			}
			t.Logf("report:\n%s", stdout)
			if !strings.Contains(stdout, droppedIndexLine) {
				t.Errorf("summary lacks %q:\n%s", droppedIndexLine, stdout)
			}
			if strings.Contains(stdout, "(generic plans)") != tc.generic || strings.Contains(stdout, "Generic plans: no parameter values were kept") != tc.generic {
				t.Errorf("generic plans said %v, want %v:\n%s", !tc.generic, tc.generic, stdout)
			}
			if strings.Contains(stdout, "no connection to the server") {
				t.Errorf("a finding says it had no server, with --candidate-dsn:\n%s", stdout)
			}
			r := readPlansJSON(t, out(tc.name+".json"))
			found := false
			for _, o := range r.Plans.Outcomes {
				if !strings.Contains(o.Query, "customers WHERE email") {
					continue
				}
				found = true
				if o.Verdict != "plan_changed" || o.Generic != tc.generic || len(o.Causes) == 0 || o.Causes[0].Kind != "index_missing" || o.Causes[0].Index != "customers_email_idx" {
					t.Errorf("lookup: %+v", o)
				}
				if !tc.generic && (len(o.Explained) != 2 || o.Explained[0].Sample != "slowest" || o.Explained[0].Control.Mode != "custom") {
					t.Errorf("lookup with samples: %+v", o.Explained)
				}
			}
			if !found {
				t.Errorf("the lookup was not explained: %+v", r.Plans.Outcomes)
			}
			for _, s := range r.Findings.NotEvaluated {
				if s.ID == "missing-index" && strings.Contains(s.Reason, "no connection") {
					t.Errorf("missing-index not evaluated: %s", s.Reason)
				}
			}
			html := readFile(t, out(tc.name+".html"))
			for _, want := range []string{`id="plans"`, "customers_email_idx"} {
				if !strings.Contains(string(html), want) {
					t.Errorf("page lacks %q", want)
				}
			}
			// The page's verdict box, first, names the lookup's cause.
			if box, first := pageVerdictBox(string(html)); !first || !strings.Contains(box, droppedIndexLine) || !strings.Contains(box, "Fix: create index customers_email_idx") {
				t.Errorf("the page's verdict box (first %v) lacks the top regression's cause and fix:\n%s", first, box)
			}
			for _, text := range []string{stdout, stderr, string(html)} {
				if strings.Contains(text, "@example.com") {
					t.Errorf("a parameter value reached the report")
				}
			}
			b, _ := os.ReadFile(out(tc.name + ".json"))
			if strings.Contains(string(b), "@example.com") {
				t.Errorf("a parameter value reached the report's JSON")
			}
		})
	}

	// A replay knows its target: its findings explain there without
	// being given a server.
	code, _, stderr := runCLI(ctx, "", "replay", "--read-only", "--target", p.cand.DSN("postgres"), "--speed", "0", "--json", out("replay.json"), p.ctlLogs["none"])
	if code != ExitOK {
		t.Fatalf("replay: exit %d\n%s", code, stderr)
	}
	r := readPlansJSON(t, out("replay.json"))
	if r.Findings.NotEvaluated == nil {
		t.Error("the replay evaluated no findings")
	}
	for _, s := range r.Findings.NotEvaluated {
		if s.ID == "missing-index" && strings.Contains(s.Reason, "no connection") {
			t.Errorf("replay's missing-index not evaluated: %s", s.Reason)
		}
	}

	// Flags that cannot work are refused before any work.
	if code, _, stderr := runCLI(ctx, "", "report", out("base.json"), "--candidate-dsn", p.cand.DSN("postgres")); code != ExitUsage {
		t.Errorf("--candidate-dsn with one result: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(ctx, "", "report", out("base.json"), out("cand.json"), "--control-dsn", "host='unclosed password=Secret-9"); code != ExitUsage || strings.Contains(stderr, "Secret-9") {
		t.Errorf("a --control-dsn that does not parse: exit %d\n%s", code, stderr)
	}
}

// TestReportPlansFromAutoExplainLog: production ran auto_explain (text,
// then JSON); its analysis keeps the plans it logged, and report with
// --candidate-dsn alone finds the plan change against them.
func TestReportPlansFromAutoExplainLog(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	p := startPlansPair(t, true)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	if code, _, stderr := runCLI(ctx, "", "analyze", "--json", out("cand.json"), p.candLog); code != ExitOK {
		t.Fatalf("analyze: exit %d\n%s", code, stderr)
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			base := out("base-" + format + ".json")
			code, stdout, stderr := runCLI(ctx, "", "analyze", "--json", base, p.ctlLogs[format])
			if code != ExitOK {
				t.Fatalf("analyze: exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "plans       logged by auto_explain for ") {
				t.Errorf("the summary does not say the log has plans:\n%s", stdout)
			}
			res, err := results.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			var lookup *results.LoggedPlan
			for i, q := range res.Queries {
				if strings.Contains(q.Query, "customers WHERE email") {
					lookup = res.LoggedPlanOf(res.Queries[i].Fingerprint)
				}
			}
			if lookup == nil || lookup.Format != format || lookup.Logged < 60 || lookup.Shapes != 1 || lookup.Plan.Root.Index != "customers_email_idx" {
				t.Fatalf("the lookup's logged plan: %+v", lookup)
			}
			b, _ := os.ReadFile(base)
			if strings.Contains(string(b), "@example.com") {
				t.Error("the logged plans keep parameter values without --keep-samples")
			}
			code, stdout, stderr = runCLI(ctx, "", "report", base, out("cand.json"), "--candidate-dsn", p.cand.DSN("postgres"), "--json", out("rep-"+format+".json"))
			if code != ExitOK && code != ExitRegression {
				t.Fatalf("report: exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stdout, droppedIndexLine) {
				t.Errorf("summary lacks %q:\n%s", droppedIndexLine, stdout)
			}
			r := readPlansJSON(t, out("rep-"+format+".json"))
			for _, o := range r.Plans.Outcomes {
				if strings.Contains(o.Query, "customers WHERE email") {
					if o.Verdict != "plan_changed" || len(o.Explained) == 0 || o.Explained[0].Control == nil || o.Explained[0].Control.Mode != "logged" {
						t.Errorf("lookup: %+v", o)
					}
				}
			}
		})
	}
}
