package cli

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// The user's own fix (rehearse --try) on two identical targets: an index
// that helps the lookups by its column and hurts a query whose LIMIT the
// planner then answers by walking it.

// tryTable is t on every target: a walks the heap in no order, and the
// rows with b = 5 are those with the largest a, which the statistics
// cannot know: walking an index on a to the first of them reads almost
// every row, at random.
const tryTable = `CREATE TABLE t (id int PRIMARY KEY, a int NOT NULL, b int NOT NULL, v text NOT NULL);
INSERT INTO t SELECT i, (i * 7919) % 50000, CASE WHEN (i * 7919) % 50000 >= 49500 THEN 5 ELSE i % 4 END, 'v' || i FROM generate_series(1, 50000) i`

// tryTargets are the two identical targets, each with database app,
// logging every statement from then on for server-side durations: on a
// busy machine, client round trips blur a few milliseconds saved.
func tryTargets(t *testing.T) (ctl, cand *pgcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	_, settings := demo.Settings(demo.NoChange)
	ctl, cand = pgclustertest.StartT(t, pgcluster.Options{Settings: settings}), pgclustertest.StartT(t, pgcluster.Options{Settings: settings})
	for _, c := range []*pgcluster.Cluster{ctl, cand} {
		mustExec(t, c, "postgres", "CREATE DATABASE app")
		mustExec(t, c, "app", tryTable)
		mustExec(t, c, "app", "VACUUM ANALYZE t")
		if err := demo.EnableStatementLog(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return ctl, cand
}

// tryLog looks rows of t up by a, and asks for the first row with b = 5
// by a.
func tryLog(t *testing.T, user string) string {
	t.Helper()
	var steps []logStep
	for i := range 30 {
		steps = append(steps, logStep{q: "SELECT v FROM t WHERE a = " + strconv.Itoa(1000+37*i)},
			logStep{q: "SELECT v FROM t WHERE b = 5 ORDER BY a LIMIT 1"})
	}
	return writeStepsLog(t, []logSession{{user, "app"}}, steps)
}

// TestRehearseTry: --try's index, applied to the candidate's reset copy
// in rounds of its own, is said to make the lookup by a faster and the
// first row by a with b = 5 slower, both named, against the candidate
// without it and the control; a --try whose SQL fails is not tried,
// with the server's error; neither changes the verdict or the exit code,
// and the candidate's own database never gets the index.
func TestRehearseTry(t *testing.T) {
	slowCase(t, 11*time.Second)
	ctl, cand := tryTargets(t)
	log := tryLog(t, ctl.User())
	// Both changes are timed against one round of the candidate without
	// the index, which ran before the fix rounds: a burst of the
	// machine's other work on that round alone can hide the slower one
	// (at load 30 the candidate's round was 2.5 times the control's on
	// the same data). That is the machine's race, which the test cannot
	// force: it tries again, up to three times, while either change is
	// not told from noise.
	var dir, jsonPath, stdout, stderr string
	for attempt := 1; ; attempt++ {
		dir = t.TempDir()
		jsonPath = filepath.Join(dir, "rehearsal.json")
		// Exit 0: a --try never changes it.
		stdout, stderr = rehearseOK(t,
			"--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"), "--rounds", "1", "--fix-rounds", "2", "--speed", "0",
			"--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"), "--target-log-prefix", demo.Prefix,
			"--min-calls", "5", "--prefix", replayTestPrefix, "--observe=false", "--findings=false", "--plans=false",
			"--try", "t_a:CREATE INDEX t_a ON t (a)", "--try", "bad:CREATE INDEX ON nowhere (a)",
			"--out", filepath.Join(dir, "rounds"), "--json", jsonPath, log)
		timed := strings.Contains(stdout, "faster beyond noise than on the candidate without it: SELECT v FROM t WHERE a = $1: mean ") &&
			strings.Contains(stdout, "slower beyond noise than on the candidate without it: SELECT v FROM t WHERE b = $1 ORDER BY a LIMIT $2: mean ")
		if timed || attempt == 3 {
			break
		}
		t.Logf("attempt %d: a change of the index is not told from this machine's noise; trying again", attempt)
	}
	// The fix rounds in turn with the control's beside them: control,
	// t_a, bad (refused), then t_a, control; the progress names them.
	for _, want := range []string{
		"rehearse: round 3 of 8: control 2 beside the fix rounds: resetting the target",
		"rehearse: round 4 of 8: candidate 2 with fix try-t_a: resetting the target",
		"rehearse: round 7 of 7: control 3 beside the fix rounds: done",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("standard error lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{
		"try-t_a: tried (2 rounds): no regression to judge it on against the control\n    applied: CREATE INDEX t_a ON t (a)\n",
		"faster beyond noise than on the candidate without it: SELECT v FROM t WHERE a = $1: mean ",
		"slower beyond noise than on the candidate without it: SELECT v FROM t WHERE b = $1 ORDER BY a LIMIT $2: mean ",
		`try-bad: not tried: the server refused it: ERROR: relation "nowhere" does not exist (SQLSTATE 42P01)`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("standard output lacks %q", want)
		}
	}
	doc := readJSON[fixesDoc](t, jsonPath)
	if len(doc.Fixes) != 2 {
		t.Fatalf("fixes in the JSON: %+v", doc.Fixes)
	}
	idx, bad := doc.Fixes[0], doc.Fixes[1]
	dirs := map[fixes.Direction]string{}
	for _, c := range idx.Changes {
		dirs[c.Direction] = c.Query
		if c.Effect == nil || c.Control == nil {
			t.Errorf("change %+v without its figures", c)
		}
	}
	if !slices.Equal(idx.ControlRounds, []int{3, 7}) {
		t.Errorf("the index was judged against the control's rounds %v, want those beside it, 3 and 7", idx.ControlRounds)
	}
	if _, err := os.Stat(filepath.Join(dir, "rounds", "round-07-control-beside-fixes.json")); err != nil {
		t.Error(err)
	}
	if idx.Origin != fixes.OriginTry || idx.Kind != fixes.Statement || idx.Status != fixes.Tried || idx.Rounds != 2 ||
		dirs[fixes.Faster] != "SELECT v FROM t WHERE a = $1" || dirs[fixes.Slower] != "SELECT v FROM t WHERE b = $1 ORDER BY a LIMIT $2" {
		t.Errorf("the index's verdict: %+v", idx)
	}
	if bad.Origin != fixes.OriginTry || bad.Status != fixes.NotTried || !strings.Contains(bad.NotApplied, "42P01") {
		t.Errorf("the failed --try: %+v", bad)
	}
	if got := queryLines(t, cand, "app", "SELECT count(*) FROM pg_indexes WHERE indexname = 't_a'"); strings.Join(got, "") != "0" {
		t.Errorf("the candidate's own app has the --try's index: %v", got)
	}
	for _, c := range []*pgcluster.Cluster{ctl, cand} {
		if left := queryLines(t, c, "postgres", "SELECT datname FROM pg_database WHERE starts_with(datname, '"+reset.NamePrefix+"')"); len(left) != 0 {
			t.Errorf("databases of the reset left: %v", left)
		}
	}
}

// TestRehearseTryUsage: a --try that cannot be read, a name given twice
// and a --try with nothing to undo it are refused before anything runs.
func TestRehearseTryUsage(t *testing.T) {
	checkUsage(t, []usageCase{
		{[]string{"--try", "CREATE INDEX ON t (a)"}, "--try: want NAME:SQL"},
		{[]string{"--try", "x:SELECT 1", "--try", "x:SELECT 2"}, `--try: the name "x" is given twice`},
		{[]string{"--try", "x:SELECT 1", "--reset", "none"}, "--try needs a reset that undoes it: not --reset none"},
		{[]string{"--batch-inserts", "50", "--reset", "none"}, "--batch-inserts needs batches of 2 rows or more and a reset"},
		{[]string{"--batch-inserts", "1"}, "--batch-inserts needs batches of 2 rows or more"},
	}, func(args []string) (int, string) {
		code, _, stderr := runRehearse(t, "", append([]string{"--control", "host=/nowhere dbname=a", "--candidate", "host=/nowhere dbname=b"}, append(args, "x.log")...)...)
		return code, stderr
	})
}

// TestRehearseSettingFix: random_page_cost 800 on the candidate only
// (its postgresql.conf) turns the lookup by email into a sequential scan;
// the plans tie it to the setting, and the fix round with the control's
// value for the copy (ALTER DATABASE ... SET) brings the lookup back
// within the control's noise.
func TestRehearseSettingFix(t *testing.T) {
	longCase(t)
	parallelCase(t)
	logPath := shopLog(t)
	ctx := context.Background()
	_, settings := demo.Settings(demo.NoChange)
	ctl := pgclustertest.StartT(t, pgcluster.Options{Settings: settings})
	candSettings := maps.Clone(settings)
	candSettings["random_page_cost"] = "800"
	cand := pgclustertest.StartT(t, pgcluster.Options{Settings: candSettings})
	for _, c := range []*pgcluster.Cluster{ctl, cand} {
		if err := workload.SetupShop(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := demo.EnableStatementLog(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "rehearsal.json")
	stdout, _ := rehearseOK(t,
		"--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"), "--rounds", "2", "--fix-rounds", "2", "--speed", "0",
		"--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
		"--format", "stderr", "--prefix", demo.Prefix, "--target-log-prefix", demo.Prefix, "--findings=false",
		"--out", filepath.Join(dir, "rounds"), "--json", jsonPath, logPath)
	doc := readJSON[fixesDoc](t, jsonPath)
	var set *fixes.Outcome
	for i, f := range doc.Fixes {
		if f.Name == "setting-random_page_cost" {
			set = &doc.Fixes[i]
		}
	}
	if set == nil || set.Kind != fixes.SetDatabase || set.Origin != fixes.OriginPlans || set.SQL != `ALTER DATABASE "shop" SET "random_page_cost" = '4'` {
		t.Fatalf("the setting's fix: %+v (fixes %+v)", set, doc.Fixes)
	}
	lookup := false
	for _, q := range set.Queries {
		if strings.HasPrefix(q.Query, "SELECT id, name FROM customers WHERE email") {
			lookup = true
			if q.Status != fixes.Verified {
				t.Errorf("the lookup by email with the control's random_page_cost: %s, with %s against the control", q.Status, q.WithStatus)
			}
		}
	}
	if !lookup {
		t.Errorf("the setting's fix is not for the lookup by email: %+v", set.Queries)
	}
	if !strings.Contains(stdout, "setting-random_page_cost: fix verified (2 rounds)") && !strings.Contains(stdout, "setting-random_page_cost: fix partial") {
		t.Errorf("the summary lacks the setting's verdict")
	}
}
