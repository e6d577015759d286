package cli

import (
	"context"
	"fmt"
	"os"
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
// each must end with the original's tables. It logs each replay's rate
// (statements executed over its wall time) and the ratio of the medians.
// A measurement, not a test of make test: it runs only with
// BENCH_ANSWERS=1 (docs/performance.md, "Answers mode at speed 0").
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
	benchInit(t, c)
	if err := c.Exec(ctx, "postgres", "CREATE DATABASE pristine TEMPLATE "+benchDB); err != nil {
		t.Fatal(err)
	}
	rc := startCapture(t, c.DSN(benchDB))
	if out, err := c.Pgbench(ctx, "-h", rc.host, "-p", rc.port, "-n", "-M", "prepared", "-c", "8", "-j", "2", "-T", seconds, benchDB); err != nil {
		t.Fatalf("pgbench through the proxy: %v\n%s", err, out)
	}
	if code, out := rc.stop(t); code != ExitOK {
		t.Fatalf("capture exited %d:\n%s", code, out)
	}
	want := benchState(t, c)
	rates := map[string][]float64{}
	for i := range runs {
		for _, mode := range []string{"object", "answers"} {
			db := fmt.Sprintf("%s_%d", mode, i)
			if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+db+" TEMPLATE pristine"); err != nil {
				t.Fatal(err)
			}
			load, _ := os.ReadFile("/proc/loadavg")
			began := time.Now()
			code, text, res := runReplay(t, "--target", c.DSN(db), "--database-map", benchDB+"="+db, "--speed", "0", "--sync", mode, "--findings=false", rc.dir)
			took := time.Since(began)
			if code != ExitOK || res == nil {
				t.Fatalf("%s run %d: exit %d\n%s", mode, i+1, code, text)
			}
			if got := benchStateOf(t, c, db); got != want {
				t.Errorf("%s run %d: the tables differ from the original's", mode, i+1)
			}
			rate := float64(res.Statements.Executed) / took.Seconds()
			rates[mode] = append(rates[mode], rate)
			t.Logf("%s run %d: %d statements in %.2f s, %.0f/s; %s; %d answers differ of %d; load %s", mode, i+1, res.Statements.Executed, took.Seconds(), rate,
				oltpSyncSummary(res), res.Outcomes.AnswerDiffers, res.Outcomes.Answered, string(load[:min(len(load), 14)]))
		}
	}
	mo, ma := medianRate(rates["object"]), medianRate(rates["answers"])
	t.Logf("medians: object %.0f/s, answers %.0f/s, answers/object %.3f", mo, ma, ma/mo)
}

// benchStateOf is benchState of another database than benchDB.
func benchStateOf(t *testing.T, c *pgcluster.Cluster, db string) string {
	t.Helper()
	return strings.Join(queryLines(t, c, db, `SELECT
		(SELECT count(*) FROM pgbench_history) || ' ' ||
		(SELECT md5(string_agg(tid || ':' || bid || ':' || aid || ':' || delta, ',' ORDER BY tid, bid, aid, delta)) FROM pgbench_history) || ' ' ||
		(SELECT md5(string_agg(aid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts) || ' ' ||
		(SELECT md5(string_agg(tid || ':' || tbalance, ',' ORDER BY tid)) FROM pgbench_tellers) || ' ' ||
		(SELECT md5(string_agg(bid || ':' || bbalance, ',' ORDER BY bid)) FROM pgbench_branches)`), "")
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
