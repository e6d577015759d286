package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestAnswersCostPgbench measures what answers mode costs at speed 0
// against object mode (issue 59 item 6), on a capture of pgbench's
// tpcb-like traffic (-M prepared, 8 clients) through the proxy: the
// replays alternate, object then answers, BENCH_ANSWERS_RUNS times each
// (default 3), each onto a fresh copy of the state before the run, and
// each must end with the original's tables. It logs each replay's
// statements (executed, failed, skipped), its rate (statements run,
// executed or failed, over its wall time) and the ratio of the medians.
// A measurement, not a test of make test: it runs only with
// BENCH_ANSWERS=1 (docs/performance.md, "Answers mode at speed 0").
// BENCH_ANSWERS_WORKLOAD=oltp measures TestCaptureAnswersOLTP's workload
// instead, whose final tables are not compared (its moves race); an
// answers replay of it that blames the target's data (a false alarm: the
// copy is identical) logs each such answer with the transactions around
// it (oltpLogBlamed). BENCH_ANSWERS_MODES=answers replays in that mode
// only (comma-separated modes), BENCH_ANSWERS_CAPTURE=DIR keeps the
// capture there and replays it again in later runs.
func TestAnswersCostPgbench(t *testing.T) {
	if os.Getenv("BENCH_ANSWERS") == "" {
		t.Skip("a measurement: BENCH_ANSWERS=1 runs it")
	}
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("BENCH_ANSWERS_RUNS")); err == nil && n > 0 {
		runs = n
	}
	seconds := "10"
	if s := os.Getenv("BENCH_ANSWERS_SECONDS"); s != "" {
		seconds = s
	}
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"max_connections": "60"}})
	var dir, from string
	state := func(db string) string { return "" }
	// TestCaptureAnswersOLTP's workload, BENCH_ANSWERS_OPS transactions
	// a session (default 2000).
	ops := 2000
	if n, err := strconv.Atoi(os.Getenv("BENCH_ANSWERS_OPS")); err == nil && n > 0 {
		ops = n
	}
	if os.Getenv("BENCH_ANSWERS_WORKLOAD") == "oltp" {
		from = "orig"
		mustExec(t, c, "postgres", "CREATE DATABASE pristine")
		mustExec(t, c, "pristine", fmt.Sprintf(`CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO items SELECT g, g FROM generate_series(1, %[1]d) g;
CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock SELECT g, 100 FROM generate_series(1, %[1]d) g`, oltpKeys))
		mustExec(t, c, "postgres", "CREATE DATABASE orig TEMPLATE pristine")
		if keep := os.Getenv("BENCH_ANSWERS_CAPTURE"); keep != "" {
			if _, err := os.Stat(keep); err == nil {
				// Kept from an earlier run: the same capture,
				// replayed by another build.
				dir = keep
			}
		}
	}
	if dir == "" && from == "orig" {
		rc := startCapture(t, c.DSN("orig"))
		runOLTPCapture(ctx, t, rc, c.User(), 8, ops)
		dir = rc.dir
		if keep := os.Getenv("BENCH_ANSWERS_CAPTURE"); keep != "" {
			if out, err := exec.Command("cp", "-r", dir, keep).CombinedOutput(); err != nil {
				t.Fatalf("keeping the capture: %v %s", err, out)
			}
		}
	} else if from == "" {
		benchInit(t, c)
		from = benchDB
		mustExec(t, c, "postgres", "CREATE DATABASE pristine TEMPLATE "+benchDB)
		rc := startCapture(t, c.DSN(benchDB))
		if out, err := c.Pgbench(ctx, "-h", rc.host, "-p", rc.port, "-n", "-M", "prepared", "-c", "8", "-j", "2", "-T", seconds, benchDB); err != nil {
			t.Fatalf("pgbench through the proxy: %v\n%s", err, out)
		}
		rc.stopOK(t)
		dir = rc.dir
		state = func(db string) string { return benchStateOf(t, c, db) }
	}
	want := state(from)
	rates := map[string][]float64{}
	for i := range runs {
		for _, mode := range benchAnswersModes() {
			db := fmt.Sprintf("%s_%d", mode, i)
			mustExec(t, c, "postgres", "CREATE DATABASE "+db+" TEMPLATE pristine")
			load, _ := os.ReadFile("/proc/loadavg")
			began := time.Now()
			code, text, res := runReplay(t, "--target", c.DSN(db), "--database-map", from+"="+db, "--speed", "0", "--sync", mode, "--findings=false", "--keep-answers", dir)
			took := time.Since(began)
			if res == nil || code != ExitOK && code != ExitDiverged {
				t.Fatalf("%s run %d: exit %d\n%s", mode, i+1, code, text)
			}
			if got := state(db); got != want {
				t.Errorf("%s run %d: the tables differ from the original's", mode, i+1)
			}
			if from == "orig" && mode == "answers" && res.Outcomes.AnswerDiffersTargetData > 0 {
				// A false alarm: what to look at.
				stmts, writes := oltpCapture(captureEvents(t, dir))
				oltpLogBlamed(t, res, stmts, writes)
			}
			// Statements run: executed or failed. A statement that
			// fails on the target in one run and not in another
			// (the race of two moves of one row, whose outcome the
			// replay's order may not keep) moves from one to the
			// other; the executions compared count both.
			st, o := res.Statements, res.Outcomes
			rate := float64(st.Executed+st.Failed) / took.Seconds()
			rates[mode] = append(rates[mode], rate)
			t.Logf("%s run %d: exit %d, %d statements (%d executed, %d failed: %d only on the target, %d of the original's %d also here; %d skipped) in %.2f s, %.0f/s; %s; %d answers differ of %d compared (%d unexplained, %d the target's data %v); load %s",
				mode, i+1, code, st.Total, st.Executed, st.Failed, o.FailedOnlyOnTarget, o.BothFailed, o.OriginalFailed, st.SkippedTotal(), took.Seconds(), rate,
				oltpSyncSummary(res), o.AnswerDiffers, o.Answered, o.AnswerDiffersUnexplained, o.AnswerDiffersTargetData, o.AnswerDiffersTargetDataByTable, string(load[:min(len(load), 14)]))
			for _, e := range res.Errors {
				t.Logf("  failed on the target: %d x %s: %s", e.Count, e.SQLState, e.Query)
			}
		}
	}
	mo, ma := medianRate(rates["object"]), medianRate(rates["answers"])
	t.Logf("medians: object %.0f/s, answers %.0f/s, answers/object %.3f", mo, ma, ma/mo)
}

// medianRate is the median of rates (the upper one of an even count).
func medianRate(rates []float64) float64 {
	if len(rates) == 0 {
		return 0
	}
	s := slices.Clone(rates)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchAnswersModes are the sync modes TestAnswersCostPgbench alternates:
// object and answers, or those BENCH_ANSWERS_MODES names (comma-separated).
func benchAnswersModes() []string {
	if m := os.Getenv("BENCH_ANSWERS_MODES"); m != "" {
		return strings.Split(m, ",")
	}
	return []string{"object", "answers"}
}
