package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	capfmt "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

type demoReport struct {
	Verdict struct {
		Status string `json:"status"`
		Line   string `json:"line"`
		// LatencyNotJudged: fewer than 3 rounds a side, and a round
		// fell behind its schedule (issue 44).
		LatencyNotJudged *json.RawMessage `json:"latency_not_judged"`
	} `json:"verdict"`
	Queries []struct {
		Fingerprint string  `json:"fingerprint"`
		Query       string  `json:"query"`
		Status      string  `json:"status"`
		Factor      float64 `json:"factor"`
		Work        *struct {
			More string `json:"more"`
		} `json:"work"`
		// Levels: the mean per call at each level (issue 58 item 3).
		Levels *struct {
			Judged string     `json:"judged"`
			Server *demoLevel `json:"server"`
			Log    *demoLevel `json:"server_log"`
		} `json:"levels"`
	} `json:"queries"`
	RegressionsByAddedTime []string          `json:"regressions_by_added_time"`
	Divergence             []json.RawMessage `json:"divergence"`
	Findings               struct {
		Findings []struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
			Title    string `json:"title"`
		} `json:"findings"`
	} `json:"findings"`
	Plans struct {
		Outcomes []struct {
			Query     string `json:"query"`
			Verdict   string `json:"verdict"`
			Generic   bool   `json:"generic"`
			Explained []struct {
				Growths []struct {
					Before struct {
						SharedRead int64 `json:"shared_read"`
					} `json:"before"`
					After struct {
						SharedRead int64 `json:"shared_read"`
					} `json:"after"`
				} `json:"growths"`
			} `json:"explained"`
			Causes []struct {
				Kind     string `json:"kind"`
				Setting  string `json:"setting"`
				Evidence string `json:"evidence"`
			} `json:"causes"`
		} `json:"outcomes"`
	} `json:"plans"`
	Fixes []struct {
		Name       string `json:"name"`
		SQL        string `json:"sql"`
		Status     string `json:"status"`
		NotApplied string `json:"not_applied"`
		Rounds     int    `json:"rounds"`
		// ControlRounds are the control's rounds it was judged
		// against.
		ControlRounds []int `json:"control_rounds"`
		Queries       []struct {
			Query  string `json:"query"`
			Status string `json:"status"`
			With   *struct {
				Ratio float64 `json:"ratio"`
				Low   float64 `json:"low"`
				High  float64 `json:"high"`
			} `json:"with"`
		} `json:"queries"`
		Writes []struct {
			Query string `json:"query"`
			Mean  *struct {
				Ratio float64 `json:"ratio"`
			} `json:"mean"`
		} `json:"writes"`
	} `json:"fixes"`
	// stdout is the demo's summary, stderr its progress.
	stdout, stderr string
	// page is report.html.
	page string
	// captures are the manifests of the demo's captures by directory
	// (capture, capture-first), those it wrote; rounds are the
	// rehearsal's rounds' results.
	captures map[string]*capfmt.Manifest
	rounds   []*results.Result
}

// demoLevel is a query's mean at one level, in report.json.
type demoLevel struct {
	Mean struct {
		Ratio float64 `json:"ratio"`
		Low   float64 `json:"low"`
		High  float64 `json:"high"`
	} `json:"mean"`
}

// longCase skips t unless the long suite runs (make test-long sets
// PGREHEARSE_LONG): make test keeps one case per capability within its
// 15 minutes, and a second case of a capability is a long one. The demo:
// its dropped index (a plan change) and its identical candidate (no false
// alarm) in make test; its other changes, its capture through the
// proxy (the capture's own tests are in make test) and its A/A fix are
// long. Likewise a
// rehearsal's datadir reset, its failing reset command and unread target
// log (its template reset and Ctrl-C are in make test), report's A/A and
// replays cases (the demo's and README's are in make test), the second
// fault test, the row-lock order of shards and headroom's fold in shard
// processes (its shards and its fold apart are in make test).
func longCase(t *testing.T) {
	t.Helper()
	if os.Getenv("PGREHEARSE_LONG") == "" {
		t.Skip("a long case, which make test-long runs (PGREHEARSE_LONG=1)")
	}
}

// parallelCase marks t as a functional case, which measures no time: it
// counts statements, compares answers and tables, or checks messages and
// exit codes, on throwaway servers of its own. Go runs such tests only
// after every other test of the package has run, as many at a time as
// -parallel says (make test: 6; they wait on paced replays and servers
// more than they use a core): the cases that judge timings close to the
// noise (the identical demo's verdict, the README's workflow, headroom's
// fold's achieved k) run alone first, undisturbed, and make test is shorter by the functional
// cases' waits. The slow ones (slowCase) start first.
func parallelCase(t *testing.T) {
	t.Helper()
	cases.Enter(t, 0)
}

// slowCase is parallelCase for a case that takes about took on a quiet
// machine, among the longest of the package: the cases start longest
// first, so that none of them starts last and runs alone at the end.
func slowCase(t *testing.T, took time.Duration) {
	t.Helper()
	cases.Enter(t, took)
}

// runDemoTest runs the whole demo on real throwaway servers and returns
// its report.
func runDemoTest(t *testing.T, change string, extra ...string) demoReport {
	t.Helper()
	dir, err := os.MkdirTemp("", "demo")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The rounds a side: the demo's 3 unless extra sets --rounds.
	rounds := 3
	for i, a := range extra {
		if a == "--rounds" && i+1 < len(extra) {
			if n, err := strconv.Atoi(extra[i+1]); err == nil {
				rounds = n
			}
		}
	}
	last := fmt.Sprintf("%02d", 2*rounds)
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr},
		append([]string{"demo", "--duration", "4s", "--change", change, "--speed", "1", "--out", dir}, extra...))
	if code != ExitOK {
		t.Fatalf("demo exit code %d, want 0\n%s", code, stderr.String())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "rounds", "round-"+last+"-*.json")); len(m) != 1 {
		t.Errorf("demo did not write its last round's result, round %s: %v", last, m)
	}
	for _, f := range []string{"rounds/rehearsal.json", "rounds/round-01-control.json", "report.json", "report.html"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("demo did not write %s: %v", f, err)
		}
	}
	if done := regexp.MustCompile(fmt.Sprintf(`round %d of %d: \w+ %d: done`, 2*rounds, 2*rounds, rounds)); !done.MatchString(stderr.String()) {
		t.Errorf("demo output does not say its last round, %d, is done:\n%s", 2*rounds, stderr.String())
	}
	for _, s := range []string{"pgrehearse rehearse --reset datadir", "demo: verdict: ", "demo: report: " + filepath.Join(dir, "report.html")} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("demo output lacks %q:\n%s", s, stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("REHEARSAL: %d rounds per side, reset datadir / datadir", rounds)) {
		t.Errorf("the rehearsal's rounds are not shown:\n%s", stdout.String())
	}
	// The replays observed the targets: their evidence is on the page.
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(page), "Wait events") {
		t.Errorf("report.html lacks the replay's server-side evidence (wait events): %v", err)
	}
	b := readFile(t, filepath.Join(dir, "report.json"))
	var r demoReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r.stdout = stdout.String()
	r.stderr = stderr.String()
	r.page = string(page)
	r.captures = map[string]*capfmt.Manifest{}
	for _, name := range []string{"capture", "capture-first"} {
		if m, err := capfmt.ReadManifest(filepath.Join(dir, name)); err == nil {
			r.captures[name] = m
		}
	}
	assertLabelsAgree(t, r)
	files, _ := filepath.Glob(filepath.Join(dir, "rounds", "round-*.json"))
	for _, f := range files {
		res, err := results.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r.rounds = append(r.rounds, res)
	}
	return r
}

// assertLabelsAgree checks the demo's text, JSON and page against the
// label rules of issue 57 item 2, whatever the change: the page's verdict
// says what the fix rounds found of its fix in the JSON's words (never
// "not verified" beside a fix verified); a node's time that grew in the
// plans of a query the comparison does not call slower is said as
// context; the server work table's status is about work, never a
// latency's status.
func assertLabelsAgree(t *testing.T, r demoReport) {
	t.Helper()
	box, _ := pageVerdictBox(r.page)
	if strings.Contains(box, "Fix: ") {
		verdicts := map[string]string{"verified": "fix verified (", "partial": "fix partial: ", "no_effect": "no effect (", "not_tried": "not tried"}
		said := false
		for _, f := range r.Fixes {
			if w := verdicts[f.Status]; w != "" && strings.Contains(box, "Fix rounds: "+f.Name+": ") {
				said = true
				if !strings.Contains(box, "Fix rounds: "+f.Name+": "+w) && !strings.Contains(box, "Fix rounds: "+f.Name+": reverts the change") {
					t.Errorf("the verdict box's fix %s is not said %q as the JSON's %s:\n%s", f.Name, w, f.Status, box)
				}
			}
		}
		if !said && !strings.Contains(box, "Fix rounds: not tried") {
			t.Errorf("the verdict box names a fix without what the fix rounds found of it (fixes %+v):\n%s", r.Fixes, box)
		}
		if strings.Contains(box, "(not verified)") {
			t.Errorf("the verdict box says a fix is not verified in the plans' words:\n%s", box)
		}
	}
	slower := map[string]bool{}
	for _, q := range r.Queries {
		slower[q.Fingerprint] = q.Status == "regressed" || q.Status == "tail_regressed" || q.Status == "more_work"
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		fp, rest, ok := strings.Cut(strings.TrimSpace(l), "  same plan: ")
		if ok && strings.Contains(rest, " own time ") && !slower[fp] && !strings.Contains(rest, "context, not a regression") {
			t.Errorf("a node's time that grew in a query not called slower is said as a finding: %q", l)
		}
	}
	if _, table, ok := strings.Cut(r.page, `id="server-work-table"`); ok {
		table, _, _ = strings.Cut(table, "</table>")
		for _, st := range []string{"<td>regressed</td>", "<td>tail regressed</td>", "<td>improved</td>"} {
			if strings.Contains(table, st) {
				t.Errorf("the server work table's status is a latency's: %s", st)
			}
		}
	}
}

// pageVerdictBox is the text of a page's verdict box, its markup
// unescaped, and whether the box comes before every section.
func pageVerdictBox(page string) (string, bool) {
	start := strings.Index(page, `id="verdict"`)
	if start < 0 {
		return "", false
	}
	box, _, _ := strings.Cut(page[start:], "</div>")
	return html.UnescapeString(box), start < strings.Index(page, "<section")
}

// TestDemoFindsDroppedIndex: the demo's deliberate difference, a dropped
// index, is the top regression and fails the verdict.
func TestDemoFindsDroppedIndex(t *testing.T) {
	// Among the functional cases, beside the others: a lookup 10 times
	// slower and more, and its fix's 10 times faster, stand far above the
	// noise they make (as beside make test-busy's loops), while the
	// identical candidate's case, whose verdict the noise decides, runs
	// alone first. Alone it made 64 s of make test's serial part.
	slowCase(t, 64*time.Second)
	// Two rounds a side find a dropped index (the lookup 10 times
	// slower and more); the identical candidate's case keeps the demo's
	// three, against false alarms.
	r := runDemoTest(t, "drop-index", "--rounds", "2")
	assertLookupLevels(t, r)
	if r.Verdict.LatencyNotJudged != nil {
		// Two rounds a side measure no noise: a round that fell behind
		// its schedule on a busy machine leaves the latency unjudged
		// (issue 44), the machine's race, which the test cannot force.
		// That verdict must say so and call no regression.
		t.Logf("a round fell behind its schedule: %s", r.Verdict.Line)
		if r.Verdict.Status != "incomplete" || !strings.HasPrefix(r.Verdict.Line, "LATENCY NOT JUDGED: ") || len(r.RegressionsByAddedTime) != 0 ||
			!strings.HasPrefix(r.stdout, "LATENCY NOT JUDGED: ") {
			t.Errorf("latency not judged: verdict %s %q, regressions %v", r.Verdict.Status, r.Verdict.Line, r.RegressionsByAddedTime)
		}
		return
	}
	assertDroppedIndex(t, r)
	assertIndexFixVerified(t, r)
}

// assertLookupLevels: the lookup by email, whose index the candidate
// lacks, has pg_stat_statements' level beside the log's (issue 58 item
// 3), and the regression shows at the server's level too, with its
// interval. Two rounds a side measure no noise, so its mean is judged on
// the log. Which ratio is the larger is not asserted: the demo's pgbench
// -M prepared logs the execute phase alone, with little overhead around
// it (and without the planning at bind that pg_stat_statements counts),
// so the two are close and either may lead: 108x (log) and 105x (server)
// over 3 rounds a side; 229x (75-701) and 145x (48-435) over 2 on a busy
// machine. A simple-protocol log's overhead per call is what makes the
// log's the smaller (issue 58's 35x against 72-75x).
func assertLookupLevels(t *testing.T, r demoReport) {
	t.Helper()
	for _, q := range r.Queries {
		if !strings.Contains(q.Query, "customers WHERE email") {
			continue
		}
		lv := q.Levels
		if lv == nil || lv.Server == nil || lv.Log == nil {
			t.Fatalf("the lookup by email has no pg_stat_statements level beside the log's: %+v", lv)
		}
		s := lv.Server.Mean
		if lv.Judged != "server_log" || s.Ratio < 2 || s.Low <= 1 || s.Low > s.Ratio || s.High < s.Ratio {
			t.Errorf("the lookup by email: judged on %q, server %+v, log %+v: want judged on the log, the server's ratio above 2x with its interval above 1", lv.Judged, s, lv.Log.Mean)
		}
		t.Logf("the lookup by email: server %.1fx (%.1f-%.1f), log %.1fx (%.1f-%.1f)", s.Ratio, s.Low, s.High,
			lv.Log.Mean.Ratio, lv.Log.Mean.Low, lv.Log.Mean.High)
		return
	}
	t.Errorf("no lookup by email in the report")
}

// assertIndexFixVerified: the rehearsal tried the control's index on the
// candidate (fixes.DefaultRounds fix rounds, 3, beside as many of the
// control's: the rounds' noise measured as for the rehearsal's own
// comparison, issue 57), the lookup by email is back within the
// control's noise, and no other query regressed with it.
func assertIndexFixVerified(t *testing.T, r demoReport) {
	t.Helper()
	if len(r.Fixes) != 1 {
		t.Fatalf("fixes tried: %+v, want the dropped index's", r.Fixes)
	}
	f := r.Fixes[0]
	if !strings.HasPrefix(f.SQL, "CREATE INDEX customers_email_idx ON ") || f.Rounds != fixes.DefaultRounds || len(f.ControlRounds) != fixes.DefaultRounds {
		t.Errorf("the fix: %+v", f)
	}
	if f.Status != "verified" || len(f.Queries) != 1 || !strings.Contains(f.Queries[0].Query, "email") || f.Queries[0].With == nil {
		t.Errorf("the fix's verdict: %+v", f)
	}
	for _, s := range []string{"index-customers_email_idx: fix verified (3 rounds)", "applied: CREATE INDEX customers_email_idx ON ",
		"no other query regressed with the fix"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("the summary lacks %q:\n%s", s, r.stdout)
		}
	}
	// The shop's traffic only reads customers: what the index costs
	// writes is said not measured (TestFixRounds measures it on a
	// traffic that writes the fixed table).
	if len(f.Writes) != 0 || !strings.Contains(r.stdout, "no query of the traffic writes customers") {
		t.Errorf("the writes to customers: %+v\n%s", f.Writes, r.stdout)
	}
	// The page says it too, in its section "Does the fix work".
	sec, _, _ := strings.Cut(r.page[max(0, strings.Index(r.page, `<section id="fixes">`)):], "</section>")
	sec = html.UnescapeString(sec)
	for _, s := range []string{"Does the fix work", "index-customers_email_idx", "fix verified (3 rounds)", "CREATE INDEX customers_email_idx ON "} {
		if !strings.Contains(sec, s) {
			t.Errorf("the page's fixes section lacks %q:\n%.3000s", s, sec)
		}
	}
}

// TestDemoCaptureProxy: production logs no statement, its traffic goes
// through the capture proxy, and the rehearsal of the capture reaches
// the same verdict as the log's.
func TestDemoCaptureProxy(t *testing.T) {
	longCase(t)
	r := runDemoTest(t, "drop-index", "--capture", "proxy")
	if !strings.Contains(r.stderr, "through pgrehearse capture on 127.0.0.1:") || !strings.Contains(r.stderr, "/capture\n") {
		t.Errorf("the demo did not say it captured through the proxy:\n%s", r.stderr)
	}
	// Two recordings from the one proxy, both complete: the first over
	// the first half, the second over the rest, the traffic's sessions,
	// open when it started, recorded from the middle, none reconnected.
	first, second := r.captures["capture-first"], r.captures["capture"]
	if first == nil || second == nil {
		t.Fatalf("the demo did not keep its two recordings: %v", r.captures)
	}
	for name, m := range r.captures {
		if !m.Complete || m.Records == 0 {
			t.Errorf("recording %s: complete %v (%s), %d records", name, m.Complete, m.Reason, m.Records)
		}
	}
	if second.SessionsResumed == 0 || second.SessionsResumed != second.Sessions {
		t.Errorf("the second recording: %d sessions, %d of them recorded from the middle; want them all", second.Sessions, second.SessionsResumed)
	}
	if first.SessionsResumed != 0 || first.Sessions < second.Sessions {
		t.Errorf("the first recording: %d sessions, %d recorded from the middle; want every session from its start", first.Sessions, first.SessionsResumed)
	}
	for _, s := range []string{"recording r1: ", "recording r2: ", " recorded from the middle)", "no connection was dropped: ",
		"the rehearsal replays r2 (", "r1 is kept in "} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("the demo's output lacks %q:\n%s", s, r.stderr)
		}
	}
	// The rehearsal replayed the second end to end: no statement failed
	// only on a target.
	if len(r.rounds) == 0 {
		t.Fatal("no round's result")
	}
	for _, res := range r.rounds {
		if o := res.Outcomes; o.Ran == 0 || o.FailedOnlyOnTarget != 0 {
			t.Errorf("%s: %d statements ran, %d failed only on the target: %+v", res.Source, o.Ran, o.FailedOnlyOnTarget, o.OnlyOnTargetBySQLState)
		}
	}
	if strings.Contains(r.stderr, "--prefix") {
		t.Errorf("the rehearsal of a capture was given a log's prefix:\n%s", r.stderr)
	}
	assertDroppedIndex(t, r)
}

func assertDroppedIndex(t *testing.T, r demoReport) {
	t.Helper()
	if r.Verdict.Status != "fail" {
		t.Errorf("verdict %q, want fail", r.Verdict.Line)
	}
	if len(r.RegressionsByAddedTime) == 0 {
		t.Fatal("no regression found")
	}
	top := r.RegressionsByAddedTime[0]
	for _, q := range r.Queries {
		if q.Fingerprint == top {
			if !strings.Contains(q.Query, "email") {
				t.Errorf("top regression is %q (x%.1f), want the lookup by email", q.Query, q.Factor)
			}
			if q.Factor < 2 {
				t.Errorf("lookup by email slower by only x%.2f", q.Factor)
			}
		}
	}
	// The rehearsal explained it on its two targets, with the values
	// the rounds kept: the plan changed, and the dropped index is why.
	if !strings.Contains(r.stdout, droppedIndexLine) {
		t.Errorf("the summary lacks %q:\n%s", droppedIndexLine, r.stdout)
	}
	// The verdict comes first, before the rounds and the details: the
	// FAIL line, the lookup with its cause and the fix it points to.
	head, _, _ := strings.Cut(r.stdout, "REHEARSAL:")
	if !strings.HasPrefix(r.stdout, "FAIL: ") || !strings.Contains(head, "top regression ") || !strings.Contains(head, droppedIndexLine) ||
		!strings.Contains(head, "fix: create index customers_email_idx on the candidate") {
		t.Errorf("the summary does not start with the verdict, the top regression's cause and its fix:\n%s", head)
	}
	// So does the page: its verdict box, before every section.
	box, first := pageVerdictBox(r.page)
	if !first || !strings.Contains(box, "FAIL: ") || !strings.Contains(box, "Top regression ") || !strings.Contains(box, droppedIndexLine) ||
		!strings.Contains(box, "Fix: create index customers_email_idx on the candidate") {
		t.Errorf("the page does not start with the verdict, the top regression's cause and its fix (first %v):\n%s", first, box)
	}
	found := false
	for _, o := range r.Plans.Outcomes {
		if strings.Contains(o.Query, "customers WHERE email") {
			found = true
			if o.Verdict != "plan_changed" || o.Generic || len(o.Causes) == 0 || o.Causes[0].Kind != "index_missing" {
				t.Errorf("the lookup's plans: %+v", o)
			}
		}
	}
	if !found {
		t.Errorf("the lookup was not explained: %+v", r.Plans.Outcomes)
	}
}

// TestDemoSmallSharedBuffers: with shared_buffers tiny on the candidate,
// the report of a range of customers' orders keeps its plan and reads
// from outside shared_buffers what the control finds in them; the plans
// find shared_buffers behind it, and when the comparison finds it
// slower, the line names it as the cause.
func TestDemoSmallSharedBuffers(t *testing.T) {
	longCase(t)
	r := runDemoTest(t, "small-shared-buffers")
	found := false
	for _, o := range r.Plans.Outcomes {
		if !strings.Contains(o.Query, "customer_id BETWEEN") {
			continue
		}
		found = true
		grew := false
		for _, e := range o.Explained {
			for _, g := range e.Growths {
				grew = grew || g.After.SharedRead > g.Before.SharedRead+100
			}
		}
		if o.Verdict != "same_plan" || !grew {
			t.Errorf("the range report's plans: %+v", o)
		}
		// The plans find shared_buffers behind the reads that grew,
		// whatever the comparison made of the latency.
		if len(o.Causes) == 0 || o.Causes[0].Setting != "shared_buffers" || o.Causes[0].Evidence != "reads" {
			t.Errorf("reads grew without shared_buffers as the cause: %+v", o.Causes)
		}
		// Issue 21: when the comparison finds it slower, it reads "same
		// plan, slower", with the reads that grew and shared_buffers as
		// the cause. A 4 s demo's runs can be too far apart for that (a
		// 2x p50 beside a mean of 1.68x (0.982-2.57) in one CI run):
		// then the line must not say slower, nor name a cause.
		status, line := "", ""
		for _, q := range r.Queries {
			if strings.Contains(q.Query, "customer_id BETWEEN") {
				status = q.Status
				// Its line among the plans: "  <fingerprint>  same plan...".
				for _, l := range strings.Split(r.stdout, "\n") {
					if strings.HasPrefix(strings.TrimSpace(l), q.Fingerprint+"  same plan") {
						line = l
					}
				}
			}
		}
		switch status {
		case "regressed", "tail_regressed":
			if !strings.Contains(line, "same plan, slower: Bitmap Heap Scan (orders)") || !strings.Contains(line, "cause: shared_buffers 128MB -> 128kB") {
				t.Errorf("the range report, %s, does not read \"same plan, slower\" with shared_buffers as the cause: %q\n%s", status, line, r.stdout)
			}
		case "":
			t.Errorf("the range report is not among the compared queries: %+v", r.Queries)
		default:
			if !strings.Contains(line, "same plan: Bitmap Heap Scan (orders)") || strings.Contains(line, "cause:") {
				t.Errorf("the range report, %s, is not \"same plan\" without a cause: %q\n%s", status, line, r.stdout)
			}
			t.Logf("the comparison did not find the range report slower in this run (%s)", status)
		}
	}
	if !found {
		t.Errorf("the range report was not explained: %+v", r.Plans.Outcomes)
	}
	// Issue 44: the writes that dirty more blocks with fewer buffers
	// (a block written out to make room is dirtied again) name
	// shared_buffers, the one difference, as their cause, never "none
	// found".
	for _, q := range r.Queries {
		if q.Status != "more_work" || q.Work == nil || q.Work.More != "shared_blks_dirtied" {
			continue
		}
		want := q.Fingerprint + "  same plan, more work; cause: shared_buffers 128MB -> 128kB"
		if !strings.Contains(r.stdout, want) {
			t.Errorf("%s dirties more blocks a call without shared_buffers as the cause; want %q:\n%s", q.Query, want, planLines(r.stdout))
		}
	}
}

// TestDemoHotIndex: an index on a column pgbench's update sets makes
// that update dirty more blocks and write more WAL per call on the
// candidate (no longer HOT), though its plan and its latency stay: a
// work rule of the demo's --fail-on fails the verdict,
// the plans name the index as the cause, and the fix round that drops it
// confirms it.
func TestDemoHotIndex(t *testing.T) {
	longCase(t)
	r := runDemoTest(t, "hot-index")
	if r.Verdict.Status != "fail" || !strings.Contains(r.Verdict.Line, "dirtied>+50% broken") && !strings.Contains(r.Verdict.Line, "wal>+50% broken") {
		t.Errorf("verdict %q, want a work rule broken", r.Verdict.Line)
	}
	if want := "same plan, more work; cause: index " + demo.HotIndex + " stops HOT updates"; !strings.Contains(r.stdout, want) {
		t.Errorf("the summary lacks %q:\n%s", want, r.stdout)
	}
	found := false
	for _, o := range r.Plans.Outcomes {
		if strings.HasPrefix(o.Query, "UPDATE pgbench_accounts") {
			found = true
			if o.Verdict != "same_plan" || len(o.Causes) == 0 || o.Causes[0].Kind != "index_stops_hot" {
				t.Errorf("the accounts update's plans: %+v", o)
			}
		}
	}
	if !found {
		t.Errorf("the accounts update was not explained: %+v", r.Plans.Outcomes)
	}
	// Issue 48: the fix round drops the index from the copy, the
	// change reverted; the update's work per call is back within the
	// control's noise, which confirms the cause.
	var drop *struct{ name, sql, status string }
	for _, f := range r.Fixes {
		if f.Name == "drop-index-"+demo.HotIndex {
			drop = &struct{ name, sql, status string }{f.Name, f.SQL, f.Status}
		}
	}
	if drop == nil || drop.sql != `DROP INDEX "public"."`+demo.HotIndex+`"` || drop.status != "verified" {
		t.Errorf("the HOT index's fix: %+v (fixes %+v)", drop, r.Fixes)
	}
	if want := "drop-index-" + demo.HotIndex + ": reverts the change: confirms the cause ("; !strings.Contains(r.stdout, want) {
		t.Errorf("the summary lacks %q:\n%s", want, r.stdout)
	}
	// The change is the candidate's only: no query is slower beyond
	// noise for it at p95, nor writes more, but the update and its
	// transaction's end.
	for _, q := range r.Queries {
		if q.Status != "regressed" && q.Status != "more_work" {
			continue
		}
		if !strings.HasPrefix(q.Query, "UPDATE pgbench_accounts") && q.Query != "END" && q.Query != "END;" {
			t.Errorf("an unrelated query is %s: %q (x%.2f)", q.Status, q.Query, q.Factor)
		}
	}
}

// TestDemoIdenticalPasses: an identical candidate shows no regression
// beyond noise. It passes, or, where the machine's noise leaves a
// query's interval holding a ratio that breaks the demo's rule after its
// three rounds (issue 58 item 4: never "no change" for such an
// interval), it is undecided, never failed: a busy machine cannot be
// made quiet from a test.
func TestDemoIdenticalPasses(t *testing.T) {
	r := runDemoTest(t, "none")
	if r.Verdict.Status == "undecided" {
		t.Logf("identical candidate undecided (a busy machine): %s", r.Verdict.Line)
	} else if r.Verdict.Status != "pass" {
		var regressed []string
		for _, q := range r.Queries {
			if q.Status == "regressed" {
				regressed = append(regressed, q.Query)
			}
		}
		t.Errorf("identical candidate: verdict %q; regressed: %q", r.Verdict.Line, regressed)
	}
	// No cause, so no fix is tried and nothing is claimed.
	if len(r.Fixes) != 0 || strings.Contains(r.stdout, "Fixes tried") || strings.Contains(r.stderr, "fix(es) on the candidate") {
		t.Errorf("identical candidate: fixes tried: %+v\n%s", r.Fixes, r.stdout)
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"demo", "--duration", "0s"}, {"demo", "--change", "nope"},
		{"demo", "--try", "no-sql"}, {"demo", "--try", "a:SELECT 1", "--try", "a:SELECT 2"}, {"demo", "--headroom", "--try", "a:SELECT 1"}} {
		var stderr bytes.Buffer
		if code := Run(context.Background(), IO{Stdout: &stderr, Stderr: &stderr}, args); code != ExitUsage {
			t.Errorf("%v: exit code %d, want %d\n%s", args, code, ExitUsage, stderr.String())
		}
	}
}

// TestDemoAAFix: an A/A fix (an index no query of the shop reads, on a
// table nothing writes) tried on the identical candidate claims nothing:
// it is tried in its rounds and named no regression, no query faster or
// slower than without it, nothing set aside as within noise (issue 57's
// acceptance; bench/aafix.sh runs it five times on a busy machine). Long:
// the identical candidate is in make test (TestDemoIdenticalPasses).
func TestDemoAAFix(t *testing.T) {
	longCase(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"demo", "--duration", "4s", "--change", "none",
		"--try", "unused:CREATE INDEX aa_unused ON customers (created_at)", "--out", dir})
	if code != ExitOK {
		t.Fatalf("demo exit code %d, want 0\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--try 'unused:CREATE INDEX aa_unused ON customers (created_at)'") {
		t.Errorf("the rehearsal was not given the try:\n%s", stderr.String())
	}
	b := readFile(t, filepath.Join(dir, "report.json"))
	var r struct {
		Fixes []struct {
			Name        string            `json:"name"`
			Status      string            `json:"status"`
			Rounds      int               `json:"rounds"`
			Costs       []json.RawMessage `json:"costs"`
			Changes     []json.RawMessage `json:"changes"`
			WithinNoise []json.RawMessage `json:"within_noise"`
		} `json:"fixes"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Fixes) != 1 || r.Fixes[0].Name != "try-unused" {
		t.Fatalf("fixes %+v, want try-unused alone\n%s", r.Fixes, stdout.String())
	}
	f := r.Fixes[0]
	if f.Status != "tried" || f.Rounds != 3 {
		t.Errorf("try-unused: %s in %d rounds, want tried in 3", f.Status, f.Rounds)
	}
	if len(f.Costs)+len(f.Changes)+len(f.WithinNoise) > 0 {
		t.Errorf("an index nothing uses claimed: costs %s, changes %s, within noise %s\n%s", f.Costs, f.Changes, f.WithinNoise, stdout.String())
	}
}
