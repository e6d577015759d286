package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// BenchmarkShards measures a replay split over 1, 2 and 3 shard
// processes against one target at speed 0, with the commits waited for
// across shards (a coordination database) and within each shard only:
// statements per second of the merge (executed and failed over the wall
// time from the first shard's start to the last one's end), each shard's
// most memory, and the sync waits. The log is the orders workload (8
// producers, 8 consumers), the plan by balance (not forced). Run it under
// the shared timing lock:
//
//	flock /tmp/timing.lock go test -run '^$' -bench BenchmarkShards -benchtime 3x ./internal/cli/
func BenchmarkShards(b *testing.B) {
	log, _, _ := ordersLog(b, 8, 8, 150, 2*time.Millisecond)
	dir := b.TempDir()
	coord := startCoord(b)
	target := pgclustertest.StartT(b, pgcluster.Options{})
	plans := map[int]string{}
	for _, n := range []int{2, 3} {
		plans[n] = filepath.Join(dir, fmt.Sprintf("plan%d.json", n))
		if code, out := runCmd(b, "plan", "--shards", fmt.Sprint(n), "--out", plans[n], log); code != ExitOK {
			b.Fatalf("plan: %d\n%s", code, out)
		}
	}
	run := 0
	for _, n := range []int{1, 2, 3} {
		for _, across := range []bool{true, false} {
			if n == 1 && !across {
				continue
			}
			name := fmt.Sprintf("shards=%d/sync=%s", n, map[bool]string{true: "across", false: "within"}[across])
			b.Run(name, func(b *testing.B) {
				var rate, rss, p50, p99 float64
				for range b.N {
					freshShop(b, target)
					run++
					d := filepath.Join(dir, fmt.Sprint(run))
					os.Mkdir(d, 0o755)
					args := []string{"--target", target.DSN("postgres"), "--speed", "0", "--findings=false"}
					if n > 1 {
						args = append(args, "--shards", fmt.Sprint(n), "--plan", plans[n])
						if across {
							args = append(args, "--coord-dsn", coord, "--run-id", fmt.Sprintf("bench-%d", run))
						}
					}
					ps := runShards(b, n, d, append(args, log)...)
					for _, p := range ps {
						if p.code != ExitOK && p.code != ExitRegression {
							b.Fatalf("shard %d exit %d:\n%s", p.k, p.code, p.out.String())
						}
						rss = max(rss, float64(p.rss))
					}
					m := readShardResult(b, ps[0].json)
					if n > 1 {
						var code int
						var out string
						if code, out, m = mergeShards(b, d, ps); code != ExitOK && code != ExitRegression {
							b.Fatalf("merge exit %d:\n%s", code, out)
						}
					}
					s := m.Statements
					rate += float64(s.Executed+s.Failed) / m.WallSeconds
					if m.SyncWait != nil {
						p50, p99 = max(p50, m.SyncWait.P50), max(p99, m.SyncWait.P99)
					}
					b.Logf("%s: %d statements in %.2f s, %.0f/s, %d failed only on the target; %s",
						name, s.Total, m.WallSeconds, float64(s.Executed+s.Failed)/m.WallSeconds, m.Outcomes.FailedOnlyOnTarget, syncSummary(m))
				}
				b.ReportMetric(rate/float64(b.N), "stmts/s")
				b.ReportMetric(rss/(1<<20), "MB-rss-max")
				b.ReportMetric(p50, "ms-syncwait-p50")
				b.ReportMetric(p99, "ms-syncwait-p99")
			})
		}
	}
}

// BenchmarkShardsManySessions replays 10,000 sessions in one process,
// then split over 4 shards at speed 0, synchronized across them: the
// single process is the baseline of the same run.
//
//	flock /tmp/timing.lock go test -run '^$' -bench BenchmarkShardsManySessions -benchtime 1x ./internal/cli/
func BenchmarkShardsManySessions(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 10000 {
		pid := 2000 + i
		user, db := "u1", "db1"
		pre := func() string {
			at = at.Add(100 * time.Microsecond)
			return fmt.Sprintf("%s [%d] %s@%s/app 65e1a5e0.%x ", at.Format("2006-01-02 15:04:05.000000 MST"), pid, user, db, pid)
		}
		fmt.Fprintf(&sb, "%sLOG:  connection authorized: user=%s database=%s application_name=app\n", pre(), user, db)
		fmt.Fprintf(&sb, "%sLOG:  duration: 0.100 ms  statement: INSERT INTO t VALUES (%d)\n", pre(), i)
		fmt.Fprintf(&sb, "%sLOG:  duration: 0.100 ms  statement: SELECT count(*) FROM t WHERE id = %d\n", pre(), i)
		fmt.Fprintf(&sb, "%sLOG:  disconnection: session time: 0:00:00.001 user=%s database=%s host=[local]\n", pre(), user, db)
	}
	log := filepath.Join(dir, "sessions.log")
	writeFile(b, log, []byte(sb.String()))
	coord := startCoord(b)
	target := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{"max_connections": "200"}})
	mustExec(b, target, "postgres", "CREATE ROLE u1 LOGIN", "CREATE DATABASE db1 OWNER u1")
	run := 0
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			for range b.N {
				mustExec(b, target, "db1", "DROP TABLE IF EXISTS t; CREATE TABLE t (id int); ALTER TABLE t OWNER TO u1")
				run++
				d := filepath.Join(dir, fmt.Sprint(run))
				os.Mkdir(d, 0o755)
				args := []string{"--prefix", replayTestPrefix, "--target", target.DSN("postgres"), "--speed", "0", "--findings=false"}
				if n > 1 {
					args = append(args, "--shards", fmt.Sprint(n), "--coord-dsn", coord, "--run-id", fmt.Sprintf("many-%d", run))
				}
				ps := runShards(b, n, d, append(args, log)...)
				m := readShardResult(b, ps[0].json)
				if n > 1 {
					var code int
					var out string
					if code, out, m = mergeShards(b, d, ps); code != ExitOK {
						b.Fatalf("merge exit %d:\n%s", code, out)
					}
				} else if ps[0].code != ExitOK {
					b.Fatalf("replay exit %d:\n%s", ps[0].code, ps[0].out.String())
				}
				var rss []string
				for _, s := range m.Shards {
					rss = append(rss, fmt.Sprintf("shard %d: %d statements, max RSS %.0f MB (%.0f MB seen by the parent), %.1f s, CPU %.1f s",
						s.Shard, s.Statements, float64(s.MaxRSSBytes)/(1<<20), float64(ps[s.Shard].rss)/(1<<20), s.WallSeconds, s.CPUSeconds))
				}
				if n == 1 {
					rss = append(rss, fmt.Sprintf("one process: max RSS %.0f MB", float64(ps[0].rss)/(1<<20)))
				}
				st := m.Statements
				b.Logf("10000 sessions over %d shards: %d sessions, %d statements (%d executed, %d failed), %.1f s, %.0f statements/s; %s",
					n, m.Sessions.Total, st.Total, st.Executed, st.Failed, m.WallSeconds, float64(st.Executed+st.Failed)/m.WallSeconds, strings.Join(rss, "; "))
				b.ReportMetric(float64(st.Executed+st.Failed)/m.WallSeconds, "stmts/s")
				b.ReportMetric(m.WallSeconds, "s-wall")
			}
		})
	}
}

// BenchmarkShardsLag compares the schedule lag of 3 shards merged with
// one process's, at speed 1, on the orders workload (the producers and
// consumers in different shards, synchronized across them) against an
// identical target: the ratio of the p99s.
//
//	flock /tmp/timing.lock go test -run '^$' -bench BenchmarkShardsLag -benchtime 3x ./internal/cli/
func BenchmarkShardsLag(b *testing.B) {
	log, _, apps := ordersLog(b, 4, 4, 200, 5*time.Millisecond)
	dir := b.TempDir()
	plan := forcedPlan(b, dir, log, apps)
	coord := startCoord(b)
	target := pgclustertest.StartT(b, pgcluster.Options{})
	var one, three float64
	for i := range b.N {
		d := filepath.Join(dir, fmt.Sprint(i))
		os.Mkdir(d, 0o755)
		freshShop(b, target)
		ps := runShards(b, 1, d, "--target", target.DSN("postgres"), "--speed", "1", "--findings=false", log)
		single := readShardResult(b, ps[0].json)
		freshShop(b, target)
		ps = runShards(b, 3, d, "--shards", "3", "--plan", plan, "--coord-dsn", coord, "--run-id", fmt.Sprintf("lag-%d", i),
			"--target", target.DSN("postgres"), "--speed", "1", "--findings=false", log)
		code, out, m := mergeShards(b, d, ps)
		if code != ExitOK || single.Lag == nil || m.Lag == nil {
			b.Fatalf("merge exit %d:\n%s", code, out)
		}
		b.Logf("lag p50/p99: one process %.2f/%.2f ms, 3 shards %.2f/%.2f ms (ratio of p99 %.2f); sync wait p50/p99: one %s, shards %s",
			single.Lag.P50, single.Lag.P99, m.Lag.P50, m.Lag.P99, m.Lag.P99/single.Lag.P99, waitText(single), waitText(m))
		one += single.Lag.P99
		three += m.Lag.P99
	}
	b.ReportMetric(one/float64(b.N), "ms-lag-p99-one")
	b.ReportMetric(three/float64(b.N), "ms-lag-p99-3shards")
	// The target, which TestShardsDependentWorkload held until a busy
	// machine's timings failed it (issue 44): the shards' rendezvous
	// keeps them on one schedule, within 2x the single process's p99,
	// and 20 ms, below which scheduling decides the p99.
	if three > 2*one+20*float64(b.N) {
		b.Errorf("merged lag p99 %.2f ms on average, more than twice the single process's %.2f ms", three/float64(b.N), one/float64(b.N))
	}
}

func waitText(r *results.Result) string {
	if r.SyncWait == nil {
		return "none"
	}
	return fmt.Sprintf("%.2f/%.2f ms", r.SyncWait.P50, r.SyncWait.P99)
}
