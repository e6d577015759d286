package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestVersionsDemoUpgrade rehearses the demo's workload with production
// and the control on one major version and the candidate on another
// (`demo --change upgrade --control-bin --candidate-bin`), or on the same
// one (an A/A rehearsal): with the same data nothing diverges, an A/A
// passes, every statement explained keeps its plan (what only one
// version's EXPLAIN prints is no plan change), what got slower or does
// more work on the other version keeps its plan with the version as its
// cause, the versions are said once above the plans, no finding is of
// errors, and no observation of either server fails. `make test` runs 15 to 18; `make test-versions`
// also 13, 14, 16 and 17 to 18, 13 to 17, and 17 to 17.
func TestVersionsDemoUpgrade(t *testing.T) {
	slowCase(t, 44*time.Second)
	pairs := [][2]int{{15, 18}}
	if pgclustertest.LongVersions() {
		pairs = append(pairs, [2]int{13, 18}, [2]int{14, 18}, [2]int{16, 18}, [2]int{17, 18}, [2]int{13, 17}, [2]int{17, 17})
	}
	for _, pr := range pairs {
		t.Run(fmt.Sprintf("%d-%d", pr[0], pr[1]), func(t *testing.T) {
			bin := func(major int) string {
				dir, err := pgcluster.BinDirFor(major)
				if err != nil {
					t.Fatal(err)
				}
				return dir
			}
			// Two rounds a side across versions, as TestDemoFindsDroppedIndex
			// (issue 44: make test within 15 minutes): nothing here
			// needs the noise of three, the plans and causes are the
			// top queries' whatever the rounds. An A/A pair keeps the
			// demo's three, against false alarms, as
			// TestDemoIdenticalPasses.
			change, rounds := "upgrade", "2"
			if pr[0] == pr[1] {
				change, rounds = "none", "3"
			}
			// Across versions the plans are read for the statements that
			// added time: when PostgreSQL 18 was faster on every one
			// (CI at b82caea: 0.69-0.99x at the log, all), none is, and
			// neither plans nor versions can be checked. That is the
			// machine's race: try again, up to three times.
			var r demoReport
			for attempt := 1; ; attempt++ {
				r = runDemoTest(t, change, "--control-bin", bin(pr[0]), "--candidate-bin", bin(pr[1]), "--rounds", rounds)
				explained := false
				for _, o := range r.Plans.Outcomes {
					explained = explained || o.Verdict == "same_plan"
				}
				if pr[0] == pr[1] || attempt == 3 || r.Verdict.LatencyNotJudged != nil || explained {
					break
				}
				t.Logf("attempt %d: no statement added time on PostgreSQL %d, none explained; trying again", attempt, pr[1])
			}
			// An A/A rehearsal passes, or, as TestDemoIdenticalPasses,
			// is undecided: the demo keeps to its three rounds, and a
			// tail's interval over them can hold a rule's ratio (17 to
			// 17 in make test-versions, twice on 2026-11-28, the first
			// on the tellers update's p95, 0.91x (0.55-1.51) against
			// p95>+50%). Undecided calls no regression, which an A/A
			// must never do. Across versions the same data never
			// diverges, but a query may be slower, or do more work, on
			// the other version beyond the demo's rules: the range
			// report's Bitmap Heap Scan on 18, in 3 of 5 runs on a busy
			// 2-core machine (own time 0.095 ms -> 4.2 ms in one
			// slowest sample). Then its plans must say so, the same
			// plan with the version as the cause.
			aa := pr[0] == pr[1]
			switch {
			case aa && r.Verdict.Status == "undecided":
				t.Logf("A/A undecided (a busy machine): %s", r.Verdict.Line)
				for _, q := range r.Queries {
					if q.Status == "regressed" || q.Status == "tail_regressed" {
						t.Errorf("A/A: %s %s\n%s", q.Query, q.Status, r.stdout)
					}
				}
			case aa && r.Verdict.Status != "pass":
				t.Errorf("A/A verdict %q\n%s", r.Verdict.Line, r.stdout)
			case r.Verdict.Status == "diverged" || (r.Verdict.Status == "incomplete" && r.Verdict.LatencyNotJudged == nil):
				t.Errorf("verdict %q\n%s", r.Verdict.Line, r.stdout)
			case r.Verdict.LatencyNotJudged != nil:
				// Two rounds a side, and a round fell behind its
				// schedule on a busy machine: the latency is not
				// judged (issue 44), the machine's race.
				t.Logf("a round fell behind its schedule: %s", r.Verdict.Line)
			}
			plans := planLines(r.stdout)
			for _, l := range strings.Split(plans, "\n") {
				if (strings.Contains(l, "  same plan, slower") || strings.Contains(l, "  same plan, more work")) && !strings.Contains(l, "; cause: version ") {
					t.Errorf("a slower plan across versions names no version: %s", l)
				}
			}
			for _, q := range r.Queries {
				if q.Status == "regressed" || q.Status == "tail_regressed" {
					// A utility statement has no plan to keep: END,
					// judged on its logged time since that holds the
					// commit's WAL flush (compare's transaction
					// control), is said so instead.
					if strings.Contains(plans, q.Fingerprint+"  not explained: DDL or a utility statement") {
						continue
					}
					if !strings.Contains(plans, q.Fingerprint+"  same plan, slower") {
						t.Errorf("%s (%s) is not said to keep its plan on another version:\n%s", q.Query, q.Status, r.stdout)
					}
				}
			}
			if len(r.Divergence) != 0 {
				t.Errorf("the same data diverged: %s", r.Divergence)
			}
			// The candidate starts with the control's data checksums,
			// as pg_upgrade requires: an 18 candidate left with its
			// initdb's (on) WAL-logged the hint bits its reads set,
			// and its SELECTs broke the WAL rule (issue 44).
			if pgcluster.InitdbChecksums(pr[0]) != pgcluster.InitdbChecksums(pr[1]) {
				if said := fmt.Sprintf("the candidate starts with data checksums %s", pgcluster.InitdbChecksums(pr[0])); !strings.Contains(r.stderr, said) {
					t.Errorf("the demo does not say %q:\n%s", said, r.stderr)
				}
			}
			for _, q := range r.Queries {
				if strings.HasPrefix(q.Query, "SELECT") && q.Work != nil && q.Work.More == "wal_bytes" {
					t.Errorf("a read writes more WAL on PostgreSQL %d than on %d: %s", pr[1], pr[0], q.Query)
				}
			}
			// Every statement explained keeps its plan; what is not
			// compared is a utility statement (BEGIN), which EXPLAIN
			// cannot plan. Which statements are explained is the
			// machine's: those that added time, and on a quiet machine
			// PostgreSQL 18 may be faster on all but two (CI, stop 52:
			// two SELECTs and an INSERT, then BEGIN). So at least one
			// is, not a count.
			explained := 0
			for _, o := range r.Plans.Outcomes {
				switch {
				case o.Verdict == "same_plan":
					explained++
				case o.Verdict == "plan_changed":
					t.Errorf("plan changed from %d to %d: %s\n%s", pr[0], pr[1], o.Query, r.stdout)
				case !utilityStatement(o.Query):
					t.Errorf("%s: %s, not explained with the same plan\n%s", o.Query, o.Verdict, r.stdout)
				}
			}
			// An A/A rehearsal may find no query worth explaining:
			// none regressed, none added time.
			if pr[0] != pr[1] && explained == 0 && r.Verdict.LatencyNotJudged == nil {
				t.Errorf("no statement explained with the same plan: %+v", r.Plans.Outcomes)
			}
			note := fmt.Sprintf("The control runs PostgreSQL %d.", pr[0])
			if n := strings.Count(r.stdout, note); n != map[bool]int{true: 1}[pr[0] != pr[1]] {
				t.Errorf("the versions are said %d times:\n%s", n, r.stdout)
			}
			if strings.Contains(r.stdout, "planner differs") {
				t.Errorf("a same plan is said to differ by the planner:\n%s", r.stdout)
			}
			// The findings are the workload's: the candidate's version
			// must not add errors to it. Others come and go with the
			// machine's load (planning-heavy, critical, once in 14 runs
			// on a busy 2-core machine).
			for _, f := range r.Findings.Findings {
				if f.ID == "errors" {
					t.Errorf("finding %s (%s): %s", f.ID, f.Severity, f.Title)
				} else {
					t.Logf("finding %s (%s): %s", f.ID, f.Severity, f.Title)
				}
			}
			// What 13 and 14 lack (jsonlog) is said once, as a fact;
			// no observation of a server fails (the error of issue 37
			// on 18 began "observe: pg_stat_activity").
			if n := strings.Count(r.stderr, "has no jsonlog"); n != map[bool]int{true: 1}[min(pr[0], pr[1]) < 15] {
				t.Errorf("jsonlog's absence said %d times:\n%s", n, r.stderr)
			}
			if strings.Contains(r.stderr, "observe: ") {
				t.Errorf("an observation failed:\n%s", r.stderr)
			}
			t.Logf("%s\n%s", r.Verdict.Line, planLines(r.stdout))
		})
	}
}

// planLines returns the summary's section of plans.
func planLines(stdout string) string {
	_, after, ok := strings.Cut(stdout, "\nPlans on the control and the candidate\n")
	if !ok {
		return "(no plans)"
	}
	before, _, _ := strings.Cut(after, "\n\n")
	return before
}

// TestDemoUpgradeFlags: --change upgrade needs the candidate's binaries,
// and a directory without them is said to be --candidate-bin's.
func TestDemoUpgradeFlags(t *testing.T) {
	var out bytes.Buffer
	if code := Run(context.Background(), IO{Stdout: &out, Stderr: &out}, []string{"demo", "--change", "upgrade"}); code != ExitUsage ||
		!strings.Contains(out.String(), "--candidate-bin DIR") {
		t.Errorf("--change upgrade alone: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := Run(context.Background(), IO{Stdout: &out, Stderr: &out}, []string{"demo", "--change", "upgrade", "--candidate-bin", t.TempDir(), "--out", t.TempDir()}); code == ExitOK ||
		!strings.Contains(out.String(), "--candidate-bin: ") {
		t.Errorf("--candidate-bin of an empty directory: exit %d\n%s", code, out.String())
	}
}

// utilityStatement reports whether query is one EXPLAIN cannot plan: a
// transaction's control or a setting, as the demo's workload sends.
func utilityStatement(query string) bool {
	for _, w := range []string{"BEGIN", "COMMIT", "ROLLBACK", "END", "SET ", "SAVEPOINT", "RELEASE"} {
		if strings.HasPrefix(strings.ToUpper(query), w) {
			return true
		}
	}
	return false
}
