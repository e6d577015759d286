package rehearse

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// BenchmarkRehearsal times a 3+3 round rehearsal at speed 1 of a log of
// the demo's shop traffic (pgbench -M prepared at 200 transactions/s,
// PGREHEARSE_BENCH_SECONDS long, 30 by default), with server-side timings
// from each target's log, for each way of resetting a throwaway target.
// It reports the whole time and what the resets took (prepare, the
// rounds' resets and releases, close) as a share of it. Timing-sensitive:
// run it under flock /tmp/timing.lock.
func BenchmarkRehearsal(b *testing.B) {
	secs := 30 * time.Second
	if s := os.Getenv("PGREHEARSE_BENCH_SECONDS"); s != "" {
		d, err := time.ParseDuration(s + "s")
		if err != nil {
			b.Fatal(err)
		}
		secs = d
	}
	logPath := shopLog(b, secs)
	for _, mode := range []reset.Mode{reset.ModeTemplate, reset.ModeDataDir} {
		b.Run(string(mode), func(b *testing.B) {
			ctl, cand := shopTarget(b), shopTarget(b)
			resetter := func(c *pgcluster.Cluster) reset.Resetter {
				if mode == reset.ModeDataDir {
					return &reset.DataDir{Cluster: c}
				}
				return &reset.Template{DSN: c.DSN("postgres"), Databases: []string{workload.ShopDatabase}}
			}
			var out *Outcome
			b.ResetTimer()
			for range b.N {
				var err error
				out, err = Run(context.Background(), Config{
					Control: Target{DSN: ctl.DSN("postgres"), Reset: resetter(ctl),
						Logs: []string{filepath.Join(ctl.LogDir(), "*.log")}},
					Candidate: Target{DSN: cand.DSN("postgres"), Reset: resetter(cand),
						Logs: []string{filepath.Join(cand.LogDir(), "*.log")}},
					Rounds: 3,
					Replay: replayAt(logPath, workload.LogLinePrefix, 1, nil, nil),
				})
				if err != nil {
					b.Fatal(err)
				}
				if out.Partial || len(out.Control) != 3 || len(out.Candidate) != 3 {
					b.Fatalf("rehearsal partial: %+v", out.Records)
				}
				for _, res := range append(out.Control, out.Candidate...) {
					if res.Statements.Failed != 0 {
						b.Fatalf("%s: %d statements failed %v", res.Source, res.Statements.Failed, res.ErrorsBySQLState)
					}
				}
			}
			b.StopTimer()
			total := out.EndedAt.Sub(out.StartedAt).Seconds()
			resets := out.ResetOverhead().Seconds()
			b.ReportMetric(total, "s/rehearsal")
			b.ReportMetric(out.ReplaySeconds, "s-replay")
			b.ReportMetric(out.PrepareSeconds, "s-prepare")
			b.ReportMetric(out.ResetSeconds, "s-resets")
			b.ReportMetric(out.ReleaseSeconds, "s-releases")
			b.ReportMetric(out.CloseSeconds, "s-close")
			b.ReportMetric(100*resets/total, "%reset")
			b.ReportMetric(out.Control[0].WallSeconds, "s-round")
		})
	}
}

// shopLog captures secs of the shop's traffic on a production cluster.
func shopLog(b *testing.B, secs time.Duration) string {
	ctx := context.Background()
	settings := workload.LogSettings()
	settings["log_min_duration_statement"] = "-1"
	settings["log_connections"] = "off"
	settings["log_disconnections"] = "off"
	prod := pgclustertest.StartT(b, pgcluster.Options{Settings: settings})
	if err := workload.SetupShop(ctx, prod); err != nil {
		b.Fatal(err)
	}
	if err := demo.EnableStatementLog(ctx, prod); err != nil {
		b.Fatal(err)
	}
	if _, err := workload.RunShop(ctx, prod, secs, 200); err != nil {
		b.Fatal(err)
	}
	if err := prod.StopServerSmart(10 * time.Second); err != nil {
		b.Fatal(err)
	}
	files, err := prod.LogFiles("*.log")
	if err != nil || len(files) != 1 {
		b.Fatalf("log files %v, %v", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "production.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// shopTarget is a target with the shop's data, logging every statement.
func shopTarget(b *testing.B) *pgcluster.Cluster {
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: workload.LogSettings()})
	if err := workload.SetupShop(context.Background(), c); err != nil {
		b.Fatal(err)
	}
	return c
}
