package cli

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// The compatibility suite's commands on each PostgreSQL major: replay
// with --sync, rehearse with template resets, findings, sweep, and a
// sharded replay's coordination database. Under `make test` each runs on
// one major, a different one per capability, so that every version is
// started; `make test-versions` (PGREHEARSE_VERSIONS=all) runs each on
// every major of pgcluster.Majors.

// versionsFor returns the majors a capability's test runs on: smoke
// alone under `make test`, every one under `make test-versions`.
func versionsFor(smoke int) []int {
	if pgclustertest.LongVersions() {
		return pgcluster.Majors
	}
	return []int{smoke}
}

// TestVersionsReplaySync replays the dependent orders workload (its log
// written by the installed server) onto each major with --sync, at the
// original pace and as fast as possible: nothing fails only on the
// target, and its tables end as the original's did.
func TestVersionsReplaySync(t *testing.T) {
	parallelCase(t)
	log, want, _ := ordersLog(t, 2, 2, 30, 20*time.Millisecond)
	for _, major := range versionsFor(13) {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			target := pgclustertest.StartVersion(t, major, nil)
			for _, speed := range []string{"1", "0"} {
				t.Run("speed"+speed, func(t *testing.T) {
					freshShop(t, target)
					code, out, res := runReplay(t, "--target", target.DSN("postgres"), "--speed", speed, "--sync", "object", "--findings=false", log)
					if code != ExitOK || res == nil {
						t.Fatalf("replay exited %d:\n%s", code, out)
					}
					if o := res.Outcomes; o.FailedOnlyOnTarget != 0 || o.Ran == 0 {
						t.Errorf("outcomes %+v: want none failed only on the target", o)
					}
					if got := shardOrdersState(t, target.DSN(shardOrdersDB)); got != want {
						t.Errorf("final state differs from the original's:\n got %.120s\nwant %.120s", got, want)
					}
					// As fast as possible, a shipment comes before its
					// order's commit unless it waits for it.
					if s := res.Sync; s == nil || s.Timeouts != 0 || speed == "0" && s.Waited == 0 {
						t.Errorf("sync %+v", s)
					}
				})
			}
		})
	}
}

// TestVersionsRehearseTemplate rehearses the orders workload, two rounds
// a side, with control and candidate on each major and --reset template
// (CREATE DATABASE ... TEMPLATE, with STRATEGY FILE_COPY only from 15):
// every round starts from the same empty tables, so none fails (a round
// on the tables of the one before would fail on its keys), the targets'
// own databases are as they were, and no copy is left.
func TestVersionsRehearseTemplate(t *testing.T) {
	parallelCase(t)
	log, _, _ := ordersLog(t, 2, 2, 30, 20*time.Millisecond)
	for _, major := range versionsFor(14) {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			ctl, cand := pgclustertest.StartVersion(t, major, nil), pgclustertest.StartVersion(t, major, nil)
			freshShop(t, ctl)
			freshShop(t, cand)
			before := shardOrdersState(t, ctl.DSN(shardOrdersDB))
			out := filepath.Join(t.TempDir(), "rounds")
			code, stdout, stderr := runRehearse(t, "", "--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"),
				"--rounds", "2", "--speed", "0", "--sync", "object", "--plans=false", "--out", out, log)
			if code != ExitOK {
				t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "REHEARSAL: 2 rounds per side, reset template / template") {
				t.Errorf("standard output:\n%s", stdout)
			}
			back, err := rehearse.ReadOutcome(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Control) != 2 || len(back.Candidate) != 2 || back.Partial {
				t.Fatalf("rounds kept: %d+%d, partial %v", len(back.Control), len(back.Candidate), back.Partial)
			}
			for side, rs := range map[results.Side][]*results.Result{results.SideControl: back.Control, results.SideCandidate: back.Candidate} {
				for i, res := range rs {
					if res.Statements.Failed != 0 || res.Statements.Executed == 0 {
						t.Errorf("%s round %d: %d executed, %d failed: %v", side, i+1, res.Statements.Executed, res.Statements.Failed, res.ErrorsBySQLState)
					}
				}
			}
			for _, c := range []*pgcluster.Cluster{ctl, cand} {
				if got := shardOrdersState(t, c.DSN(shardOrdersDB)); got != before {
					t.Errorf("a target's own tables changed: %.80s", got)
				}
				if left := queryLines(t, c, "postgres", "SELECT datname FROM pg_database WHERE starts_with(datname, '"+reset.NamePrefix+"')"); len(left) != 0 {
					t.Errorf("databases of the reset left: %v", left)
				}
			}
		})
	}
}

// TestVersionsFindings runs findings on each major's own csvlog of 800
// single-row inserts, with that server's catalog (--dsn): the batch
// inserts are found, with the table's partial indexes as evidence.
func TestVersionsFindings(t *testing.T) {
	parallelCase(t)
	for _, major := range versionsFor(16) {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			ctx := context.Background()
			settings, _ := versionLogSettings(major)
			c := pgclustertest.StartVersion(t, major, settings)
			insertEvents(ctx, t, c).Close(ctx)
			// Stopped, the server has written its whole log.
			csvLog := pgclustertest.StoppedLogOf(t, c, "*.csv")
			if err := c.StartServer(ctx); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(ctx, "", "findings", "--dsn", c.DSN("postgres"), csvLog)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			for _, want := range []string{"batch-inserts: events", "partial_indexes 2", "events_kind_1"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// TestVersionsSweep sweeps pgbench's select-only script over 1 and 2
// clients on each major (--target, --init): every step measures
// transactions, and the sampler reads the server without an error.
func TestVersionsSweep(t *testing.T) {
	parallelCase(t)
	for _, major := range versionsFor(17) {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			c := pgclustertest.StartVersion(t, major, map[string]string{"shared_preload_libraries": "pg_stat_statements"})
			mustExec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
			jsonPath := filepath.Join(t.TempDir(), "sweep.json")
			var code int
			var stdout, stderr string
			// A 1 s step on a busy machine (load 44 in make test) may get
			// fewer than the two progress reports a step needs: the sweep
			// says so and stops, as it must; the test tries again, up to
			// three times, as it cannot force the machine to be quiet.
			for attempt := 1; ; attempt++ {
				code, stdout, stderr = runCLI(context.Background(), "", "sweep", "--target", c.DSN("postgres"), "--init", "--scale", "1",
					"-b", "select-only", "--clients", "1,2", "--warmup", "0s", "--duration", "1s", "--json", jsonPath)
				if code == ExitOK || attempt == 3 || !strings.Contains(stderr, "pgbench reported no progress inside the measured window") {
					break
				}
				t.Logf("attempt %d: a step got too few progress reports on a busy machine; again", attempt)
			}
			if code != ExitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "peak:") {
				t.Errorf("tables lack the peak:\n%s", stdout)
			}
			for _, l := range strings.Split(stderr, "\n") {
				if strings.Contains(strings.ToLower(l), "error") || strings.Contains(l, "can't scan") {
					t.Errorf("the sweep said: %s", l)
				}
			}
			res, b := readSweepJSON(t, jsonPath)
			if len(res.Configs) != 1 || len(res.Configs[0].Steps) != 2 {
				t.Fatalf("JSON: %s", b)
			}
			for _, s := range res.Configs[0].Steps {
				if s.TPS <= 0 {
					t.Errorf("%d clients: %.0f TPS", s.Clients, s.TPS)
				}
			}
		})
	}
}

// TestVersionsShardCoordination replays the orders workload in 3 shard
// processes, producers and consumers in different shards, with the
// coordination database and the target on each major: the shards meet
// at one start, wait for each other's commits through it, and the
// target's tables end as the original's did.
func TestVersionsShardCoordination(t *testing.T) {
	parallelCase(t)
	log, want, apps := ordersLog(t, 2, 2, 30, 20*time.Millisecond)
	dir := t.TempDir()
	plan := forcedPlan(t, dir, log, apps)
	for _, major := range versionsFor(18) {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			co := pgclustertest.StartVersion(t, major, nil)
			mustExec(t, co, "postgres", "CREATE DATABASE coord")
			target := pgclustertest.StartVersion(t, major, nil)
			freshShop(t, target)
			d := filepath.Join(dir, strconv.Itoa(major))
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			m := runAndMerge(t, 3, d, "--shards", "3", "--plan", plan, "--coord-dsn", co.DSN("coord"), "--run-id", "orders-"+strconv.Itoa(major),
				"--target", target.DSN("postgres"), "--speed", "0", "--sync", "object", "--findings=false", log)
			checkSyncedOrders(t, m, target, want)
		})
	}
}
