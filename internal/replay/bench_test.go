package replay

import (
	"context"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

var tpsRe = regexp.MustCompile(`number of transactions actually processed: (\d+)`)

// BenchmarkReplayVsPgbench captures a pgbench run's log, then on the same
// server runs pgbench again without logging (the baseline) and replays the
// captured log at speed 0 with as many sessions: replay statements/s next
// to pgbench's. BENCH=ReplayVsPgbench bench/replay.sh runs it. BENCH_CLIENTS (8), BENCH_SECONDS
// (10), BENCH_MODE (prepared) and BENCH_SELECT_ONLY=1 tune it.
func BenchmarkReplayVsPgbench(b *testing.B) {
	ctx := context.Background()
	clients := strconv.Itoa(envInt("BENCH_CLIENTS", 8))
	secs := strconv.Itoa(envInt("BENCH_SECONDS", 10))
	mode := os.Getenv("BENCH_MODE")
	if mode == "" {
		mode = "prepared"
	}
	perTx := 7.0 // BEGIN, 5 statements, END
	script := []string{}
	if os.Getenv("BENCH_SELECT_ONLY") == "1" {
		perTx, script = 1, []string{"-S"}
	}
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{
		"logging_collector": "on", "log_destination": "stderr", "log_line_prefix": workload.LogLinePrefix,
		"lc_messages": "C", "log_rotation_size": "0",
	}})
	if _, err := c.Pgbench(ctx, "-i", "-q", "-s", "10", "postgres"); err != nil {
		b.Fatal(err)
	}
	pgbench := func() float64 {
		args := append([]string{"-n", "-M", mode, "-c", clients, "-j", clients, "-T", secs}, script...)
		out, err := c.Pgbench(ctx, append(args, "postgres")...)
		if err != nil {
			b.Fatal(err)
		}
		m := tpsRe.FindSubmatch(out)
		if m == nil {
			b.Fatalf("pgbench output: %s", out)
		}
		n, _ := strconv.ParseFloat(string(m[1]), 64)
		return n
	}
	setLogging(b, c, true)
	secsF, _ := strconv.ParseFloat(secs, 64)
	captured := pgbench() * perTx / secsF
	setLogging(b, c, false)
	baseline := pgbench() * perTx / secsF
	files, err := c.LogFiles("*.log")
	if err != nil || len(files) == 0 {
		b.Fatal(files, err)
	}
	b.ResetTimer()
	for b.Loop() {
		rd, err := logread.Open(files[len(files)-1], logread.Options{Prefix: workload.LogLinePrefix})
		if err != nil {
			b.Fatal(err)
		}
		r, err := New(Options{Target: c.DSN("postgres"), Speed: 0})
		if err != nil {
			b.Fatal(err)
		}
		res, err := r.Run(ctx, ctx, []event.Source{rd})
		rd.Close()
		if err != nil {
			b.Fatal(err)
		}
		ran := float64(res.Statements.Executed + res.Statements.Failed)
		rate := ran / res.WallSeconds
		b.ReportMetric(rate, "replay_stmt/s")
		b.ReportMetric(baseline, "pgbench_stmt/s")
		b.ReportMetric(captured, "pgbench_logged_stmt/s")
		b.ReportMetric(rate/baseline, "replay/pgbench")
		b.Logf("replay: %.0f statements in %.2f s = %.0f/s over %d sessions; pgbench -M %s -c %s: %.0f statements/s (%.0f/s while logging); ratio %.2f; failed %d, skipped %v",
			ran, res.WallSeconds, rate, res.Sessions.Total, mode, clients, baseline, captured, rate/baseline, res.Statements.Failed, res.Statements.Skipped)
		if s := res.Sync; s != nil {
			b.Logf("sync %s: %d waited, %d deadlocks given up; %d ordered by row, %d with the key not logged", s.Mode, s.Waited, s.Deadlocks, s.ByRow, s.KeyNotLogged)
		}
	}
}

// BenchmarkLag200Sessions replays 200 sessions issuing 5,000 statements/s
// in all at speed 1 against a local server and reports the schedule lag.
func BenchmarkLag200Sessions(b *testing.B) {
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{"max_connections": "300"}})
	secs := envInt("BENCH_SECONDS", 10)
	var l testLog
	for i := range 200 {
		s := l.session("postgres", "postgres", 0)
		// Spread the sessions over the 40 ms period.
		for at := time.Duration(i) * 200 * time.Microsecond; at < time.Duration(secs)*time.Second; at += 40 * time.Millisecond {
			s.query(at, 50*time.Microsecond, "SELECT 1")
		}
		s.disconnect(time.Duration(secs) * time.Second)
	}
	path := l.write(b)
	for b.Loop() {
		res := replayFile(b, path, Options{Target: c.DSN("postgres"), Speed: 1})
		ran := res.Statements.Executed + res.Statements.Failed
		b.ReportMetric(res.Lag.P50, "lag_p50_ms")
		b.ReportMetric(res.Lag.P99, "lag_p99_ms")
		b.ReportMetric(res.Lag.Max, "lag_max_ms")
		b.ReportMetric(float64(ran)/res.WallSeconds, "stmt/s")
	}
}

// BenchmarkDryRunDispatch is the replayer's own cost per statement, no
// server: a log of 100 sessions of 1,000 statements each (half of them
// executions with two parameters) read from its file and dry-run at
// speed 0, through the dispatcher, the queues and the sessions.
func BenchmarkDryRunDispatch(b *testing.B) {
	var l testLog
	for i := range 100 {
		s := l.session("postgres", "postgres", 0)
		for k := range 1000 {
			at := time.Duration(k)*time.Millisecond + time.Duration(i)*time.Microsecond
			if k%2 == 0 {
				s.query(at, 10*time.Microsecond, "SELECT * FROM t WHERE id = "+strconv.Itoa(k))
			} else {
				s.execute(at, 10*time.Microsecond, "", "SELECT * FROM t WHERE id = $1 AND name = $2", strconv.Itoa(k), "name "+strconv.Itoa(i))
			}
		}
		s.disconnect(1001 * time.Millisecond)
	}
	path := l.write(b)
	for b.Loop() {
		res := replayFile(b, path, Options{DryRun: true, Speed: 0})
		if res.Statements.Executed != 100*1000 {
			b.Fatalf("%+v", res.Statements)
		}
		b.ReportMetric(res.WallSeconds*1e9/float64(res.Statements.Executed), "ns/stmt")
	}
}
