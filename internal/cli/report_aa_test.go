package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// The A/A workload: the shop's traffic (pgbench -M prepared: lookups by
// email, orders summed, pgbench's tpcb-like transactions) beside an
// application's mix sent with the simple protocol (literals in the log):
// a join, a range count, an update with an insert in a transaction, and
// statements that fail (a duplicate key, a division by zero). Its writes
// are repeatable: replayed again on the same target they touch the same
// rows and fail the same way, so that rounds without a reset stay alike.
const (
	aaJoinScript = `\set c random(1, 50000)
SELECT c.name, o.total FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id = :c ORDER BY o.created_at DESC LIMIT 5;
`
	aaRangeScript = `\set h random(1, 500)
SELECT count(*) FROM orders WHERE created_at >= '2026-01-01'::timestamptz + :h * interval '1 hour' AND created_at < '2026-01-01'::timestamptz + (:h + 1) * interval '1 hour';
`
	aaWriteScript = `\set c random(1, 50000)
BEGIN;
UPDATE customers SET name = 'Customer ' || :c WHERE id = :c;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :c, 0, now());
COMMIT;
`
)

// aaEnv is a captured workload and two identical targets logging every
// statement, ready for replays.
type aaEnv struct {
	log     string // the capture's stderr log
	targets [2]*pgcluster.Cluster
	logs    [2]string // each target's stderr log
	prefix  string    // the capture's log_line_prefix
}

// aaSetup starts a "production" cluster and two targets with the same
// data, captures d of the A/A workload at about rate transactions a
// second on production, and stops it. prefix is production's
// log_line_prefix, targetPrefix the targets'.
func aaSetup(t testing.TB, d time.Duration, rate int, prefix, targetPrefix string) *aaEnv {
	t.Helper()
	ctx := context.Background()
	settings := workload.LogSettings()
	settings["log_line_prefix"] = prefix
	settings["log_min_duration_statement"] = "-1" // on after the setup
	prod := pgclustertest.StartT(t, pgcluster.Options{Settings: settings})
	env := &aaEnv{prefix: prefix}
	targetSettings := maps.Clone(settings)
	targetSettings["log_line_prefix"] = targetPrefix
	for i := range env.targets {
		env.targets[i] = pgclustertest.StartT(t, pgcluster.Options{Settings: targetSettings})
	}
	setupShops(t, prod, env.targets[0], env.targets[1])
	// Logging starts once all are set up, so that the capture starts
	// with its traffic.
	for _, c := range []*pgcluster.Cluster{prod, env.targets[0], env.targets[1]} {
		if err := demo.EnableStatementLog(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	var scripts []string
	for name, s := range map[string]string{"join.sql": aaJoinScript, "range.sql": aaRangeScript, "write.sql": aaWriteScript} {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(s))
		scripts = append(scripts, "-f", p)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(3)
	go func() {
		defer wg.Done()
		_, err := workload.RunShop(ctx, prod, d, rate)
		errs <- err
	}()
	go func() {
		defer wg.Done()
		args := append([]string{"-n", "-M", "simple", "-c", "2", "-j", "1", "-T", strconv.Itoa(int(d.Seconds())),
			"-R", strconv.Itoa(max(1, rate/3)), "--random-seed=11"}, scripts...)
		_, err := prod.Pgbench(ctx, append(args, workload.ShopDatabase)...)
		errs <- err
	}()
	go func() {
		defer wg.Done()
		errs <- aaFailures(ctx, prod, d)
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if env.log, err = demo.StoppedLog(prod); err != nil {
		t.Fatal(err)
	}
	for i, c := range env.targets {
		logs, err := c.LogFiles("*.log")
		if err != nil || len(logs) != 1 {
			t.Fatalf("target %d's logs %v: %v", i, logs, err)
		}
		env.logs[i] = logs[0]
	}
	return env
}

// aaFailures sends, ten times a second for d, statements that fail the
// same way on every server: a duplicate key and a division by zero.
func aaFailures(ctx context.Context, c *pgcluster.Cluster, d time.Duration) error {
	cfg, err := pgconn.ParseConfig(c.DSN(workload.ShopDatabase))
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = "aa-app"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		sql := fmt.Sprintf("INSERT INTO customers (id, email, name, created_at) VALUES (%d, 'dup', 'dup', now())", 1+i%1000)
		if i%2 == 1 {
			sql = fmt.Sprintf("SELECT %d / (%d - %d)", i, i%7, i%7)
		}
		if _, err := conn.Exec(ctx, sql).ReadAll(); err == nil {
			return fmt.Errorf("%s did not fail", sql)
		}
	}
	return nil
}

// replay replays the capture onto target i at speed 1 with its log read
// afterwards, into out.
func (env *aaEnv) replay(t testing.TB, i int, out string) {
	t.Helper()
	code, stdout, stderr := runCLI(context.Background(), "", "replay", "--target", env.targets[i].DSN("postgres"), "--speed", "1",
		"--prefix", env.prefix, "--target-log", env.logs[i], "--json", out, env.log)
	if code != ExitOK {
		t.Fatalf("replay onto target %d: exit %d\n%s%s", i, code, stdout, stderr)
	}
}

// BenchmarkAAReplays measures what two identical targets differ by: it
// captures PGREHEARSE_AA_SECONDS (default 30) of the A/A workload and
// replays it PGREHEARSE_AA_ROUNDS times (default 3) onto each of two
// identical targets, alternating A B B A A B..., each with the target's
// own log for server-side timings. The results are kept in
// PGREHEARSE_AA_DIR when set; docs/noise-measured.md says how the default floors
// were derived from them. Run it alone, under the timing lock:
//
//	flock /tmp/timing.lock go test -run '^$' -bench BenchmarkAAReplays -benchtime 1x ./internal/cli/
func BenchmarkAAReplays(b *testing.B) {
	secs, rounds := envInt("PGREHEARSE_AA_SECONDS", 30), envInt("PGREHEARSE_AA_ROUNDS", 3)
	dir := os.Getenv("PGREHEARSE_AA_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		env := aaSetup(b, time.Duration(secs)*time.Second, 150, workload.LogLinePrefix, workload.LogLinePrefix)
		if err := copyFile(env.log, filepath.Join(dir, "capture.log")); err != nil {
			b.Fatal(err)
		}
		order := []int{0, 1, 1, 0}
		n := [2]int{}
		for k := 0; n[0] < rounds || n[1] < rounds; k++ {
			side := order[k%len(order)]
			if n[side] >= rounds {
				continue
			}
			n[side]++
			out := filepath.Join(dir, fmt.Sprintf("%c%d.json", 'A'+side, n[side]))
			start := time.Now()
			env.replay(b, side, out)
			b.Logf("%s in %.1f s", out, time.Since(start).Seconds())
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// noCodePrefix is a log_line_prefix without %e: the log names errors by
// their message only, as many production servers' do.
const noCodePrefix = "%m [%p] %q%u@%d/%a %c "

// TestReportIdenticalReplays is the acceptance test of a single-run
// report on real PostgreSQL. A workload with writes and errors is
// captured on a production server whose log_line_prefix lacks %e, and
// replayed once onto each of two identical targets (which log %e), each
// with its own log for server-side timings.
//   - The report of the two replays (one run a side) does not fail a rule,
//     lists no regression beyond the default floors and says that
//     run-to-run noise was not measured.
//   - The report of the capture against a replay is not "diverged": the
//     capture's errors, known by message only, are the replay's coded
//     ones.
//   - Its page, in headless Chromium, draws both replays over time and
//     fits a 1280-pixel window without scrolling sideways.
func TestReportIdenticalReplays(t *testing.T) {
	longCase(t)
	env := aaSetup(t, 8*time.Second, 80, noCodePrefix, workload.LogLinePrefix)
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	ctx := context.Background()
	if code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", noCodePrefix, "--json", path("capture.json"), env.log); code != ExitOK {
		t.Fatalf("analyze the capture: exit %d\n%s", code, stderr)
	}
	env.replay(t, 0, path("a.json"))
	env.replay(t, 1, path("b.json"))

	// The capture's errors got their SQLSTATE from their messages.
	var capture struct {
		Errors map[string]int64 `json:"errors_by_sqlstate"`
	}
	if err := json.Unmarshal(readFile(t, path("capture.json")), &capture); err != nil {
		t.Fatal(err)
	}
	if capture.Errors["23505"] == 0 || capture.Errors["22012"] == 0 || capture.Errors["unknown"] != 0 {
		t.Errorf("the capture's errors by SQLSTATE: %v; want 23505 and 22012 from their messages", capture.Errors)
	}

	code, stdout, stderr := runCLI(ctx, "", "report", path("a.json"), path("b.json"), "--fail-on", "p95>+20%,mean>+20%",
		"--json", path("ab.json"), "--html", path("ab.html"))
	t.Logf("report of two identical replays:\n%s", stdout)
	// A replay that fell behind its schedule leaves the latency unjudged
	// (issue 44): exit 5, and the verdict says so.
	lagged := false
	for _, f := range []string{"a.json", "b.json"} {
		res, err := results.ReadFile(path(f))
		if err != nil {
			t.Fatal(err)
		}
		_, l := res.Lagged()
		lagged = lagged || l
	}
	wantStatus := "pass"
	if lagged {
		wantStatus = "incomplete"
		if code != ExitIncomplete || !strings.HasPrefix(stdout, "LATENCY NOT JUDGED: ") {
			t.Errorf("two identical replays, one lagging: exit %d\n%s", code, stderr)
		}
	} else if code != ExitOK {
		t.Errorf("two identical replays: exit %d\n%s", code, stderr)
	}
	var ab struct {
		Verdict struct {
			Status          string `json:"status"`
			Line            string `json:"line"`
			Regressions     int    `json:"regressions"`
			TailRegressions int    `json:"tail_regressions"`
			NoiseMeasured   bool   `json:"noise_measured"`
		} `json:"verdict"`
		Queries []struct {
			Query   string `json:"query"`
			Status  string `json:"status"`
			Effects *struct {
				Mean struct{ Ratio, Floor float64 } `json:"mean"`
			} `json:"effects"`
		} `json:"queries"`
		NewErrors []any `json:"new_errors"`
	}
	if err := json.Unmarshal(readFile(t, path("ab.json")), &ab); err != nil {
		t.Fatal(err)
	}
	if v := ab.Verdict; v.Status != wantStatus || v.Regressions+v.TailRegressions != 0 || v.NoiseMeasured ||
		!strings.Contains(v.Line, "run-to-run noise not measured") || len(ab.NewErrors) != 0 {
		t.Errorf("two identical replays: verdict %+v, new errors %v", v, ab.NewErrors)
	}
	judged := 0
	for _, q := range ab.Queries {
		if q.Effects != nil {
			judged++
		}
		if strings.Contains(q.Status, "regressed") {
			t.Errorf("%s %s: mean %.2fx", q.Status, q.Query, q.Effects.Mean.Ratio)
		}
	}
	if judged < 8 {
		t.Errorf("only %d queries judged", judged)
	}

	code, stdout, stderr = runCLI(ctx, "", "report", path("capture.json"), path("a.json"), "--json", path("ca.json"))
	if code == ExitDiverged || strings.Contains(stdout, "DIVERGED") || code != ExitOK {
		t.Errorf("the capture without %%e against its replay: exit %d\n%s%s", code, stdout, stderr)
	}
	var ca struct {
		NewErrors []struct {
			SQLState string `json:"sqlstate"`
		} `json:"new_errors"`
	}
	if err := json.Unmarshal(readFile(t, path("ca.json")), &ca); err != nil {
		t.Fatal(err)
	}
	for _, e := range ca.NewErrors {
		if e.SQLState == "23505" || e.SQLState == "22012" {
			t.Errorf("the capture's own errors called new: %+v", ca.NewErrors)
		}
	}

	// The page: both replays over time, nothing wider than 1280 px.
	html := path("ab.html")
	sc := htmltest.SelfCheckAt(t, html, "1280,1000")
	if len(sc.Errors) > 0 || sc.ChartsRendered == 0 || sc.ChartsRendered != len(sc.Charts) {
		t.Errorf("self-check: %d of %d charts drawn, errors %v", sc.ChartsRendered, len(sc.Charts), sc.Errors)
	}
	if sc.PageWidth > sc.ViewportWidth || len(sc.Overflows) > 0 {
		t.Errorf("at 1280 px: page %d px wide in %d; tables scrolling sideways: %+v", sc.PageWidth, sc.ViewportWidth, sc.Overflows)
	}
	for _, id := range []string{"timeline-rate", "timeline-p95"} {
		lines := timelineLines(t, string(readFile(t, html)), id)
		if len(lines) != 2 || lines[0] != "baseline" || lines[1] != "candidate" {
			t.Errorf("%s draws %v, want the baseline's and the candidate's lines", id, lines)
		}
	}
	htmltest.ScreenshotLogged(t, html, "1280,2200")
}

// timelineLines are the names of the line series with points in the
// chart id of a page, read from the options the page hands to ECharts.
func timelineLines(t *testing.T, page, id string) []string {
	t.Helper()
	start := strings.Index(page, "var PGREHEARSE_CHARTS = ")
	if start < 0 {
		t.Fatal("no chart options in the page")
	}
	rest := page[start+len("var PGREHEARSE_CHARTS = "):]
	end := strings.Index(rest, ";</script>")
	var charts map[string]struct {
		Series []struct {
			Name string `json:"name"`
			Type string `json:"type"`
			Data []any  `json:"data"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(rest[:end]), &charts); err != nil {
		t.Fatalf("chart options: %v", err)
	}
	var names []string
	for _, s := range charts[id].Series {
		if s.Type == "line" && len(s.Data) > 0 {
			names = append(names, s.Name)
		}
	}
	return names
}
