package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// shopHeadroomTarget is a target with the shop's data, logging nothing:
// headroom's steps are timed by the replayer.
func shopHeadroomTarget(t *testing.T, settings map[string]string) *pgcluster.Cluster {
	t.Helper()
	return shopHeadroomTargets(t, 1, settings)[0]
}

// shopHeadroomTargets are n targets as shopHeadroomTarget's, their shops
// built at once.
func shopHeadroomTargets(t *testing.T, n int, settings map[string]string) []*pgcluster.Cluster {
	t.Helper()
	cs := make([]*pgcluster.Cluster, n)
	for i := range cs {
		cs[i] = pgclustertest.StartT(t, pgcluster.Options{Settings: settings})
	}
	setupShops(t, cs...)
	return cs
}

// TestHeadroomAA: the shop's traffic searched on two identical targets
// (A/A), each step from fresh template copies, the targets alternating:
// both answer, their intervals overlap, every step's figures are there,
// and the JSON and the page are written.
func TestHeadroomAA(t *testing.T) {
	longCase(t)
	logPath := shopLog(t)
	ctl, cand := shopPair(shopHeadroomTargets(t, 2, nil))
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "headroom.json"), filepath.Join(dir, "headroom.html")
	stdout, stderr := headroomOK(t, "--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"),
		"--max-k", "2", "--json", jsonPath, "--html", htmlPath, logPath)
	out := readJSON[headroom.Outcome](t, jsonPath)
	if len(out.Sides) != 2 || out.Partial {
		t.Fatalf("%d sides, partial %v", len(out.Sides), out.Partial)
	}
	var ans []*headroom.Answer
	for _, so := range out.Sides {
		if so.Answer == nil || so.Baseline == nil || len(so.Steps) < 4 {
			t.Fatalf("%s: answer %+v, %d steps", so.Side, so.Answer, len(so.Steps))
		}
		ans = append(ans, so.Answer)
		for _, st := range so.Steps {
			m := st.Measurement
			if st.Status != headroom.StatusDone || m == nil || m.Statements == 0 || m.StatementsPerS <= 0 || len(m.Queries) == 0 {
				t.Fatalf("%s step %d: %+v", so.Side, st.Seq, st)
			}
			// The targets run here: their CPU is read, as a sweep's.
			if m.ServerCPUSeconds == nil || *m.ServerCPUSeconds <= 0 {
				t.Errorf("%s step %d: server CPU %v", so.Side, st.Seq, m.ServerCPUSeconds)
			}
		}
	}
	// Intervals overlap: an open one ("at least") reaches up forever.
	top := func(a *headroom.Answer) float64 {
		if a.AtLeast {
			return 1e9
		}
		return a.Hi
	}
	if top(ans[0]) < ans[1].Lo || top(ans[1]) < ans[0].Lo {
		t.Errorf("A/A intervals apart: control %+v, candidate %+v", ans[0], ans[1])
	}
	if !strings.Contains(stdout, "control holds") || !strings.Contains(stdout, "candidate") {
		t.Errorf("no answer line:\n%s", stdout)
	}
	if !strings.Contains(stderr, "headroom: step 1: control at 1x") || !strings.Contains(stderr, "left (ETA") {
		t.Errorf("no progress lines:\n%s", stderr)
	}
	if page, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(page), "headroom-throughput") {
		t.Errorf("page: %v", err)
	}
}

func runHeadroom(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return runCLI(ctx, "", append([]string{"headroom"}, args...)...)
}

// runningHeadroom is headroom run in the background, its output read
// while it runs.
type runningHeadroom struct {
	done           chan int
	stdout, stderr lockedBuffer
}

// startHeadroom runs headroom with args in the background under ctx.
func startHeadroom(ctx context.Context, args ...string) *runningHeadroom {
	h := &runningHeadroom{done: make(chan int, 1)}
	go func() {
		h.done <- Run(ctx, IO{Stdin: strings.NewReader(""), Stdout: &h.stdout, Stderr: &h.stderr}, append([]string{"headroom"}, args...))
	}()
	return h
}

// await polls ready every 50 ms until it holds, and fails the test if
// headroom ends first or within passes; what names what it waits for.
func (h *runningHeadroom) await(t *testing.T, what string, within time.Duration, ready func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for {
		select {
		case code := <-h.done:
			t.Fatalf("exit %d before %s:\n%s\n%s", code, what, h.stdout.String(), h.stderr.String())
		case <-deadline:
			t.Fatalf("%s did not come in %v:\n%s", what, within, h.stderr.String())
		case <-tick.C:
			if ready() {
				return
			}
		}
	}
}

// exit waits for headroom's exit code, failing the test if it has not
// ended within of what the test did (after), and logs what it printed.
func (h *runningHeadroom) exit(t *testing.T, within time.Duration, after string) (code int, stdout, stderr string) {
	t.Helper()
	select {
	case code = <-h.done:
	case <-time.After(within):
		t.Fatalf("headroom did not end within %v of %s:\n%s", within, after, h.stderr.String())
	}
	stdout, stderr = h.stdout.String(), h.stderr.String()
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	return code, stdout, stderr
}

// headroomOK runs headroom with args, logs what it printed and how long
// it took, and fails the test unless it exited 0.
func headroomOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	start := time.Now()
	code, stdout, stderr := runHeadroom(t, args...)
	t.Logf("exit %d in %v\n%s\n%s", code, time.Since(start).Round(time.Second), stdout, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	return stdout, stderr
}

// shopLogFor captures d of the shop's traffic at rate transactions per
// second into dir.
func shopLogFor(t *testing.T, dir string, d time.Duration, rate int) string {
	t.Helper()
	ctx := context.Background()
	prodSettings, _ := demo.Settings(demo.NoChange)
	prod := pgclustertest.StartT(t, pgcluster.Options{Settings: prodSettings})
	if err := workload.SetupShop(ctx, prod); err != nil {
		t.Fatal(err)
	}
	if err := demo.EnableStatementLog(ctx, prod); err != nil {
		t.Fatal(err)
	}
	if _, err := workload.RunShop(ctx, prod, d, rate); err != nil {
		t.Fatal(err)
	}
	log, err := demo.StoppedLog(prod)
	if err != nil {
		t.Fatal(err)
	}
	b := readFile(t, log)
	return writeFile(t, filepath.Join(dir, "production.log"), b)
}

// TestHeadroomAB (by hand: PGREHEARSE_HEADROOM_AB=1, a few minutes): a
// candidate without the index of the shop's lookup by email holds less
// of the log's load than the control, their intervals apart, and the
// first query to break on the candidate is that lookup.
func TestHeadroomAB(t *testing.T) {
	if os.Getenv("PGREHEARSE_HEADROOM_AB") == "" {
		t.Skip("the A/B headroom runs by hand: PGREHEARSE_HEADROOM_AB=1 (a few minutes)")
	}
	dir := t.TempDir()
	logPath := shopLogFor(t, dir, 8*time.Second, 100)
	// Server-side durations: the machine's scheduling stays out of the
	// latencies.
	ctl, cand := shopPair(shopRehearsalTargets(t, 2))
	// PGREHEARSE_HEADROOM_CHANGE=none: an A/A of the same length.
	aa := os.Getenv("PGREHEARSE_HEADROOM_CHANGE") == "none"
	if !aa {
		mustExec(t, cand, workload.ShopDatabase, "DROP INDEX "+workload.ShopEmailIndex)
	}
	jsonPath := filepath.Join(dir, "headroom.json")
	if keep := os.Getenv("PGREHEARSE_HEADROOM_JSON"); keep != "" {
		jsonPath = keep
	}
	maxK := os.Getenv("PGREHEARSE_HEADROOM_MAXK")
	if maxK == "" {
		maxK = "8"
	}
	headroomOK(t, "--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"),
		"--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
		"--max-k", maxK, "--json", jsonPath, "--html", filepath.Join(dir, "headroom.html"), logPath)
	out := readJSON[headroom.Outcome](t, jsonPath)
	c, d := out.Side(headroom.Control).Answer, out.Side(headroom.Candidate).Answer
	if aa {
		top := func(a *headroom.Answer) float64 {
			if a.AtLeast {
				return 1e9
			}
			return a.Hi
		}
		if c == nil || d == nil || top(c) < d.Lo || top(d) < c.Lo {
			t.Errorf("A/A intervals apart: control %+v, candidate %+v", c, d)
		}
		return
	}
	if c == nil || d == nil || d.AtLeast || (!c.AtLeast && c.Lo <= d.Hi) || c.Lo <= d.Hi {
		t.Errorf("control %+v, candidate %+v: want the candidate's interval below the control's", c, d)
	}
	fb := out.Side(headroom.Candidate).FirstBreak
	if fb != nil && fb.Cause != nil {
		fb.Break = *fb.Cause
	}
	if fb == nil || !strings.Contains(fb.Query, "email") {
		t.Errorf("first break on the candidate %+v, want the lookup by email", fb)
	}
}

// TestHeadroomFold: --by fold overlays k slices of the log on one window:
// a step at k replays every statement of the log (k slices of 1/k) in
// 1/k of its time, so its statements are those of 1x and its achieved k
// near k, with no error from the slices' keys colliding; one target
// alone is searched.
//
// By hand, PGREHEARSE_HEADROOM_FOLD_LOG=60s folds a log of that length
// instead of the 3 s one (a 60 s log folded 3 times runs in 20 s).
func TestHeadroomFold(t *testing.T) {
	var logPath string
	args := []string{"--boundary-rounds", "1"}
	if d, err := time.ParseDuration(os.Getenv("PGREHEARSE_HEADROOM_FOLD_LOG")); err == nil {
		logPath = shopLogFor(t, t.TempDir(), d, 100)
		args = append(args, "--base-rounds", "1")
	} else {
		logPath = shopLog(t)
		args = append(args, "--base-rounds", "2")
	}
	tg := shopHeadroomTarget(t, nil)
	jsonPath := filepath.Join(t.TempDir(), "headroom.json")
	headroomOK(t, append(args, "--control", tg.DSN("postgres"), "--by", "fold", "--max-k", "3",
		"--json", jsonPath, logPath)...)
	out := readJSON[headroom.Outcome](t, jsonPath)
	so := out.Side(headroom.Control)
	if out.By != headroom.ByFold || len(out.Sides) != 1 || so == nil || so.Baseline == nil {
		t.Fatalf("by %s, %d sides", out.By, len(out.Sides))
	}
	base := so.Steps[0].Measurement.Statements
	folded := 0
	for _, st := range so.Steps {
		m := st.Measurement
		if m == nil || st.Status != headroom.StatusDone {
			t.Fatalf("step %d: %+v", st.Seq, st)
		}
		if st.K != float64(int(st.K)) {
			t.Errorf("step %d at %gx: a fold overlays whole slices", st.Seq, st.K)
		}
		if m.Failed != 0 {
			t.Errorf("step %d at %gx: %d statements failed", st.Seq, st.K, m.Failed)
		}
		if st.K < 2 {
			continue
		}
		folded++
		// Sessions cut by a slice's edge may lose a statement or two.
		if d := m.Statements - base; d < -base/50 || d > base/50 {
			t.Errorf("step %d at %gx: %d statements, 1x ran %d", st.Seq, st.K, m.Statements, base)
		}
		if v := st.Verdict; v == nil || v.AchievedK < 0.7*st.K || v.AchievedK > 1.2*st.K {
			t.Errorf("step %d at %gx: achieved %+v", st.Seq, st.K, st.Verdict)
		}
	}
	if folded == 0 {
		t.Error("no folded step")
	}
}

func TestHeadroomUsage(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	writeFile(t, log, []byte("x\n"))
	checkUsage(t, []usageCase{
		{[]string{"--candidate", "host=b", log}, "--control DSN"},
		{[]string{"--control", "host=a", "--candidate", "host=a", log}, "the same server"},
		{[]string{"--control", "host=a", "--slo", "p95>+50%", log}, "--slo"},
		{[]string{"--control", "host=a", "--slo", "cpu<+5%", log}, "unknown metric"},
		{[]string{"--control", "host=a", "--by", "clients", log}, "speed or fold"},
		{[]string{"--control", "host=a", "--max-k", "1", log}, "--max-k"},
		{[]string{"--control", "host=a", "--by", "fold", "--max-k", "1.5", log}, "at least 2 by fold"},
		{[]string{"--control", "host=a", "--speed", "0", log}, "--speed must be above 0"},
		{[]string{"--control", "host=a", "--base-rounds", "0", log}, "--base-rounds"},
		{[]string{"--control", "host=a", "--by", "fold", "--control-log", "a.log", log}, "cannot be split"},
		{[]string{"--control", "host=a", "--candidate", "host=b", "--control-log", "a.log", log}, "go together"},
		{[]string{"--control", "host=a", "--reset", "zfs", log}, "unknown reset"},
		{[]string{"--control", "host=a", "--reset", "none", "--reset-cmd", "true", log}, "not both"},
		{[]string{"--control", "host=a", "--control-cluster", "/tmp", log}, "go with --reset datadir"},
		{[]string{"--control", "host=a"}, "requires at least 1 arg"},
		{[]string{"--control", "host=a", "--shards", "0", log}, "--shards must be at least 1"},
		{[]string{"--control", "host=a", "--shards", "2", log}, "--coord-dsn DSN"},
		{[]string{"--control", "host=a", "--coord-dsn", "host=c", log}, "--shards N, N > 1"},
		{[]string{"--control", "host=a", "--shards", "2", "--coord-dsn", "host=a", log}, "--coord-dsn is a target"},
		{[]string{"--control", "host=a", "--reset", "none", "--try", "i:CREATE INDEX ON t (a)", log}, "--try needs a reset that undoes it"},
		{[]string{"--control", "host=a", "--try", "CREATE INDEX ON t (a)", log}, "--try"},
		{[]string{"--control", "host=a", "--try", "i:SELECT 1", "--try", "i:SELECT 2", log}, "given twice"},
	}, func(args []string) (int, string) {
		code, _, stderr := runHeadroom(t, args...)
		return code, stderr
	})
}

// TestHeadroomReplayerLimit (by hand: PGREHEARSE_HEADROOM_REPLAYER=1,
// best with GOMAXPROCS=1 so that one core bounds the replayer): pgbench's
// select-only traffic at 2000 transactions per second
// (PGREHEARSE_HEADROOM_CLIENTS sessions, 8 by default), asked up to 32
// times over, is more than one replayer, or the sessions' own round
// trips, can send: the answer names the replayer or the round trips, not
// the target, which times the statements in its own log.
// PGREHEARSE_HEADROOM_SHARDS=N runs every step in N shard processes.
func TestHeadroomReplayerLimit(t *testing.T) {
	if os.Getenv("PGREHEARSE_HEADROOM_REPLAYER") == "" {
		t.Skip("the replayer's limit runs by hand: PGREHEARSE_HEADROOM_REPLAYER=1 GOMAXPROCS=1")
	}
	ctx := context.Background()
	noLog := []string{"PGOPTIONS=-c log_min_duration_statement=-1"}
	prod := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	if _, err := prod.PgbenchEnv(ctx, noLog, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatal(err)
	}
	clients := os.Getenv("PGREHEARSE_HEADROOM_CLIENTS")
	if clients == "" {
		clients = "8"
	}
	if _, err := prod.Pgbench(ctx, "-S", "-M", "prepared", "-c", clients, "-j", "2", "-R", "2000", "-T", "4", "postgres"); err != nil {
		t.Fatal(err)
	}
	logPath := pgclustertest.StoppedLog(t, prod)
	tg := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"log_min_duration_statement": "0",
		"log_line_prefix": workload.LogLinePrefix, "lc_messages": "C", "logging_collector": "on", "log_rotation_size": "0"}})
	if _, err := tg.PgbenchEnv(ctx, noLog, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(t.TempDir(), "headroom.json")
	args := []string{"--control", tg.DSN("postgres"), "--reset", "none", "--max-k", "32",
		"--control-log", filepath.Join(tg.LogDir(), "*.log"), "--json", jsonPath}
	if n := os.Getenv("PGREHEARSE_HEADROOM_SHARDS"); n != "" {
		// Every step in n shard processes (each with GOMAXPROCS as
		// given: one core each with GOMAXPROCS=1).
		coord := startCoord(t)
		args = append(args, "--shards", n, "--coord-dsn", coord)
	}
	headroomOK(t, append(args, logPath)...)
	out := readJSON[headroom.Outcome](t, jsonPath)
	if a := out.Side(headroom.Control).Answer; a == nil || (a.Bound != judge.BoundReplayer && a.Bound != judge.BoundRoundTrips) {
		t.Errorf("answer %+v: want the replayer or the round trips named", a)
	}
}
