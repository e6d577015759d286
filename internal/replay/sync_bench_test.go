package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// What synchronized replay costs. BENCH=Sync bench/replay.sh runs these;
// every figure is a ratio or a pair measured in the same run, because the
// machine is shared.

// ownScript is pgbench-style traffic whose sessions share nothing: each
// client updates, reads and appends to tables of its own (pgbench puts
// :client_id into the text in simple mode), so no statement depends on
// another session's commit.
const ownScript = `\set aid random(1, 1000)
\set delta random(-5000, 5000)
BEGIN;
UPDATE acct_:client_id SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM acct_:client_id WHERE aid = :aid;
INSERT INTO hist_:client_id (aid, delta, mtime) VALUES (:aid, :delta, CURRENT_TIMESTAMP);
END;
`

// syncCapture captures secs seconds of pgbench traffic of one kind:
// "own" (ownScript, -M simple), "select" (-S, -M prepared) or "tpcb"
// (pgbench's own, -M prepared: every session updates the same tables).
func syncCapture(b *testing.B, kind string, clients, secs int) (*pgcluster.Cluster, string, []string) {
	ctx := context.Background()
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{
		"logging_collector": "on", "log_destination": "stderr", "log_line_prefix": workload.LogLinePrefix,
		"lc_messages": "C", "log_rotation_size": "0", "max_connections": "300",
	}})
	var settle []string
	args := []string{"-n", "-c", itoa(clients), "-j", itoa(clients), "-T", itoa(secs)}
	switch kind {
	case "own":
		var schema strings.Builder
		for i := range clients {
			fmt.Fprintf(&schema, "CREATE TABLE acct_%d (aid int PRIMARY KEY, abalance int NOT NULL); INSERT INTO acct_%d SELECT g, 0 FROM generate_series(1, 1000) g;", i, i)
			fmt.Fprintf(&schema, "CREATE TABLE hist_%d (aid int, delta int, mtime timestamptz);", i)
			settle = append(settle, fmt.Sprintf("VACUUM acct_%d", i), fmt.Sprintf("TRUNCATE hist_%d", i))
		}
		pgclustertest.Exec(b, c, "postgres", schema.String())
		script := filepath.Join(b.TempDir(), "own.sql")
		if err := os.WriteFile(script, []byte(ownScript), 0o644); err != nil {
			b.Fatal(err)
		}
		args = append(args, "-M", "simple", "-f", script)
	case "select", "tpcb":
		if _, err := c.Pgbench(ctx, "-i", "-q", "-s", "10", "postgres"); err != nil {
			b.Fatal(err)
		}
		args = append(args, "-M", "prepared")
		if kind == "select" {
			args = append(args, "-S")
		}
		settle = []string{"VACUUM pgbench_branches", "VACUUM pgbench_tellers", "VACUUM pgbench_accounts", "TRUNCATE pgbench_history"}
	default:
		b.Fatalf("unknown traffic %q", kind)
	}
	setLogging(b, c, true)
	if out, err := c.Pgbench(ctx, append(args, "postgres")...); err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	setLogging(b, c, false)
	files, err := c.LogFiles("*.log")
	if err != nil || len(files) == 0 {
		b.Fatal(files, err)
	}
	return c, files[len(files)-1], append(settle, "CHECKPOINT")
}

// BenchmarkSyncThroughput: speed-0 throughput of --sync object against
// --sync off on the same capture, BENCH_ROUNDS (3) rounds in turn, each
// replay from a vacuumed, checkpointed server. BENCH_SYNC_TRAFFIC
// ("own,select,tpcb") chooses the captures (see syncCapture);
// BENCH_CLIENTS (8) and BENCH_SECONDS (5) size them.
func BenchmarkSyncThroughput(b *testing.B) {
	clients := envInt("BENCH_CLIENTS", 8)
	secs := envInt("BENCH_SECONDS", 5)
	rounds := envInt("BENCH_ROUNDS", 3)
	for b.Loop() {
		for _, kind := range strings.Split(envString("BENCH_SYNC_TRAFFIC", "own,select,tpcb"), ",") {
			c, log, settle := syncCapture(b, kind, clients, secs)
			var ratios, cpuRatios []float64
			for round := range rounds {
				rate, cpu := map[syncdep.Mode]float64{}, map[syncdep.Mode]float64{}
				var synced *results.Result
				modes := []syncdep.Mode{syncdep.Off, syncdep.Object}
				for i := range modes {
					pgclustertest.Exec(b, c, "postgres", settle...)
					mode := modes[(i+round)%2]
					res := replayLog(b, log, workload.LogLinePrefix, Options{Target: c.DSN("postgres"), Speed: 0, Sync: mode})
					if res.Statements.Failed > 0 {
						b.Errorf("%s, sync %v: %d failed: %v", kind, mode, res.Statements.Failed, res.ErrorsBySQLState)
					}
					ran := float64(res.Statements.Executed + res.Statements.Failed)
					rate[mode] = ran / res.WallSeconds
					cpu[mode] = res.ClientCPUSeconds / ran * 1e6
					if mode == syncdep.Object {
						synced = res
					}
				}
				ratios = append(ratios, rate[syncdep.Object]/rate[syncdep.Off])
				cpuRatios = append(cpuRatios, cpu[syncdep.Object]/cpu[syncdep.Off])
				b.Logf("%s round %d: off %.0f stmt/s (replayer CPU %.1f µs/stmt), object %.0f stmt/s (%.1f µs/stmt): rate %.3f, CPU %.3f; %s", kind, round+1,
					rate[syncdep.Off], cpu[syncdep.Off], rate[syncdep.Object], cpu[syncdep.Object], ratios[len(ratios)-1], cpuRatios[len(cpuRatios)-1], syncLine(synced))
			}
			b.Logf("%s: object/off throughput median %.3f of %d rounds (%s); replayer CPU per statement object/off median %.3f (%s)",
				kind, median(ratios), rounds, fmtRatios(ratios), median(cpuRatios), fmtRatios(cpuRatios))
			b.ReportMetric(median(ratios), kind+"_object/off")
			b.ReportMetric(median(cpuRatios), kind+"_cpu_object/off")
		}
	}
}

func fmtRatios(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, strconv.FormatFloat(r, 'f', 3, 64))
	}
	return strings.Join(s, " ")
}

// BenchmarkSyncLag200Sessions is BenchmarkLag200Sessions with writes: 200
// sessions at 5,000 statements/s in all at speed 1, each inserting into
// and reading a table of its own (no session depends on another), replayed
// with --sync off and object in turn, BENCH_ROUNDS (3) times.
func BenchmarkSyncLag200Sessions(b *testing.B) {
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{"max_connections": "300"}})
	secs := envInt("BENCH_SECONDS", 10)
	rounds := envInt("BENCH_ROUNDS", 3)
	const n = 200
	var schema strings.Builder
	for i := range n {
		fmt.Fprintf(&schema, "CREATE TABLE own_%d (id int, v int);", i)
	}
	pgclustertest.Exec(b, c, "postgres", schema.String())
	var l testLog
	for i := range n {
		s := l.session("postgres", "postgres", 0)
		k := 0
		for at := time.Duration(i) * 200 * time.Microsecond; at < time.Duration(secs)*time.Second; at += 40 * time.Millisecond {
			if k%2 == 0 {
				s.query(at, 50*time.Microsecond, fmt.Sprintf("INSERT INTO own_%d VALUES (%d, 1)", i, k))
			} else {
				s.query(at, 50*time.Microsecond, fmt.Sprintf("SELECT v FROM own_%d WHERE id = %d", i, k-1))
			}
			k++
		}
		s.disconnect(time.Duration(secs) * time.Second)
	}
	path := l.write(b)
	for b.Loop() {
		var p99 = map[syncdep.Mode][]float64{}
		for round := range rounds {
			modes := []syncdep.Mode{syncdep.Off, syncdep.Object}
			for i := range modes {
				mode := modes[(i+round)%2]
				res := replayFile(b, path, Options{Target: c.DSN("postgres"), Speed: 1, Sync: mode})
				ran := res.Statements.Executed + res.Statements.Failed
				p99[mode] = append(p99[mode], res.Lag.P99)
				b.Logf("round %d, sync %v: %.0f stmt/s, lag p50 %.3f p99 %.3f max %.2f ms; %s", round+1, mode,
					float64(ran)/res.WallSeconds, res.Lag.P50, res.Lag.P99, res.Lag.Max, syncLine(res))
			}
		}
		b.Logf("lag p99 median of %d rounds: off %.3f ms (%s), object %.3f ms (%s)", rounds,
			median(p99[syncdep.Off]), fmtRatios(p99[syncdep.Off]), median(p99[syncdep.Object]), fmtRatios(p99[syncdep.Object]))
		b.ReportMetric(median(p99[syncdep.Object]), "object_lag_p99_ms")
		b.ReportMetric(median(p99[syncdep.Off]), "off_lag_p99_ms")
	}
}

// BenchmarkSyncDependent: the orders workload of TestSyncOrders (with the
// foreign key), BENCH_PRODUCERS (8) producers and as many consumers, each
// producer making an order every 4 ms for BENCH_SECONDS (5): replayed at
// speed 1 with --sync object, its schedule lag (sync waits left out) and
// its waits; and at speed 0, object against off.
func BenchmarkSyncDependent(b *testing.B) {
	producers := envInt("BENCH_PRODUCERS", 8)
	secs := envInt("BENCH_SECONDS", 5)
	rounds := envInt("BENCH_ROUNDS", 3)
	pace := 4 * time.Millisecond
	cp := captureOrders(b, true, producers, producers, secs*int(time.Second/pace), pace)
	target := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{"max_connections": "100"}})
	for b.Loop() {
		var lags, ratios []float64
		for round := range rounds {
			res, state := replayOrders(b, target, cp, Options{Speed: 1})
			if res.Outcomes.FailedOnlyOnTarget != 0 || state != cp.state {
				b.Errorf("speed 1: %d failed only on the target, %s (original %s)", res.Outcomes.FailedOnlyOnTarget, stateSummary(state), stateSummary(cp.state))
			}
			lags = append(lags, res.Lag.P99)
			b.Logf("round %d, speed 1, %d statements: %s", round+1, res.Statements.Executed, syncLine(res))
			rate := map[syncdep.Mode]float64{}
			for _, mode := range []syncdep.Mode{syncdep.Object, syncdep.Off} {
				res, _ := replayOrders(b, target, cp, Options{Speed: 0, Sync: mode})
				rate[mode] = float64(res.Statements.Executed+res.Statements.Failed) / res.WallSeconds
				b.Logf("round %d, speed 0, sync %v: %.0f stmt/s, %d failed only on the target; %s", round+1, mode, rate[mode], res.Outcomes.FailedOnlyOnTarget, syncLine(res))
			}
			ratios = append(ratios, rate[syncdep.Object]/rate[syncdep.Off])
		}
		b.Logf("%d rounds: speed 1 lag p99 (sync waits left out) median %.2f ms (%s); speed 0 object/off median %.3f (%s)",
			rounds, median(lags), fmtRatios(lags), median(ratios), fmtRatios(ratios))
		b.ReportMetric(median(lags), "speed1_lag_p99_ms")
		b.ReportMetric(median(ratios), "speed0_object/off")
	}
}
