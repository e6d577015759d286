package observe

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// pgssSettings load pg_stat_statements with planning tracked.
func pgssSettings(extra map[string]string) map[string]string {
	s := map[string]string{
		"shared_preload_libraries":          "pg_stat_statements",
		"pg_stat_statements.track_planning": "on",
		"max_connections":                   "50",
	}
	maps.Copy(s, extra)
	return s
}

// startPgbench starts a cluster with pgbench's tables (scale 1: one
// branch, which every transaction updates) and pg_stat_statements.
func startPgbench(t *testing.T, settings map[string]string) *pgcluster.Cluster {
	t.Helper()
	c := pgcluster.StartT(t, pgcluster.Options{Settings: settings})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	if err := c.Exec(ctx, "postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	return c
}

func startObserver(t *testing.T, dsn string, opts Options) *Observer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := Start(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Stop() })
	return o
}

func stop(t *testing.T, o *Observer) *Evidence {
	t.Helper()
	e, err := o.Stop()
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	b, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 6000 {
		b = append(b[:6000], "…"...)
	}
	t.Logf("evidence: %s", b)
	return e
}

// pgbenchStatements are the statements of pgbench's default script, as it
// sends them with values, each fingerprinted as a log would be.
var pgbenchStatements = map[string]string{
	"accounts": "UPDATE pgbench_accounts SET abalance = abalance + -4000 WHERE aid = 12;",
	"select":   "SELECT abalance FROM pgbench_accounts WHERE aid = 12;",
	"tellers":  "UPDATE pgbench_tellers SET tbalance = tbalance + -4000 WHERE tid = 3;",
	"branches": "UPDATE pgbench_branches SET bbalance = bbalance + -4000 WHERE bid = 1;",
	"insert":   "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 12, -4000, CURRENT_TIMESTAMP);",
}

func fp(t *testing.T, sql string) string {
	t.Helper()
	items := fingerprint.Compute(sql)
	if len(items) != 1 || items[0].Unparsed {
		t.Fatalf("fingerprint of %q: %+v", sql, items)
	}
	return items[0].Fingerprint
}

func (e *Evidence) query(fp string) *Query {
	if e.Statements == nil {
		return nil
	}
	for i := range e.Statements.Queries {
		if e.Statements.Queries[i].Fingerprint == fp {
			return &e.Statements.Queries[i]
		}
	}
	return nil
}

var tpsRE = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

func pgbenchTPS(t *testing.T, out []byte) float64 {
	t.Helper()
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no tps in pgbench output:\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// Observing from before pgbench starts until after it ends, the deltas of
// every pgbench statement are exactly its transaction count, in both
// protocols: fingerprints of pg_stat_statements' normalized texts ($1) are
// those of the statements with values, as a log has them.
func TestDeltasMatchPgbench(t *testing.T) {
	c := startPgbench(t, pgssSettings(nil))
	ctx := context.Background()
	for _, mode := range []string{"simple", "prepared"} {
		t.Run(mode, func(t *testing.T) {
			if err := c.Exec(ctx, "postgres", "SELECT pg_stat_statements_reset()"); err != nil {
				t.Fatal(err)
			}
			o := startObserver(t, c.DSN("postgres"), Options{Interval: 300 * time.Millisecond, SampleInterval: 20 * time.Millisecond})
			const clients, perClient = 4, 150
			out, err := c.Pgbench(ctx, "-n", "-M", mode, "-c", strconv.Itoa(clients), "-t", strconv.Itoa(perClient), "postgres")
			if err != nil {
				t.Fatal(err)
			}
			waitGone(t, c, "pgbench")
			e := stop(t, o)
			want := int64(clients * perClient)
			for name, sql := range pgbenchStatements {
				q := e.query(fp(t, sql))
				if q == nil {
					t.Errorf("%s: fingerprint %s not in the evidence", name, fp(t, sql))
					continue
				}
				if q.Calls != want {
					t.Errorf("%s: %d calls, want %d", name, q.Calls, want)
				}
				if q.TotalExecMS <= 0 || q.MeanExecMS <= 0 || len(q.QueryIDs) == 0 || q.Databases[0] != "postgres" {
					t.Errorf("%s: %+v", name, q)
				}
				// Planning is tracked: simple-protocol statements are
				// planned every time; prepared ones keep a generic plan
				// after five executions per session.
				switch mode {
				case "simple":
					if q.Plans != want || q.TotalPlanMS <= 0 {
						t.Errorf("%s: %d plans (%.3f ms), want %d", name, q.Plans, q.TotalPlanMS, want)
					}
				case "prepared":
					if q.Plans == 0 || q.Plans >= want/2 {
						t.Errorf("%s: %d plans for %d prepared executions", name, q.Plans, want)
					}
				}
			}
			if q := e.query(fp(t, pgbenchStatements["insert"])); q != nil && (q.Rows != want || q.WALBytes <= 0) {
				t.Errorf("insert: %d rows, %d WAL bytes", q.Rows, q.WALBytes)
			}
			if q := e.query(fp(t, pgbenchStatements["select"])); q != nil && q.SharedBlksHit+q.SharedBlksRead < want {
				t.Errorf("select: %d blocks hit, %d read for %d calls", q.SharedBlksHit, q.SharedBlksRead, want)
			}
			for _, q := range e.Statements.Queries {
				if strings.Contains(q.Query, "pgrehearse-observe") {
					t.Errorf("the observer's own statement is in the evidence: %s", q.Query)
				}
			}
			if len(e.Statements.Resets) != 0 || e.Statements.Evicted != 0 {
				t.Errorf("resets %v, evicted %d", e.Statements.Resets, e.Statements.Evicted)
			}
			if e.Statements.Snapshots < 2 || len(e.Statements.Intervals) != e.Statements.Snapshots-1 {
				t.Errorf("%d snapshots, %d intervals", e.Statements.Snapshots, len(e.Statements.Intervals))
			}
			// Transactions: pgbench's own plus a few of its setup
			// statements; none of the observer's.
			tp := e.Throughput
			if tp == nil || tp.TotalTransactions < want || tp.TotalTransactions > want+50 {
				t.Errorf("throughput: %+v, want about %d transactions", tp, want)
			}
			if e.Waits.Rounds == 0 || e.Waits.Samples == 0 || e.Sampling.Rounds != e.Waits.Rounds {
				t.Errorf("waits: %d rounds, %d samples", e.Waits.Rounds, e.Waits.Samples)
			}
			for _, w := range e.Warnings {
				t.Errorf("unexpected warning: %s", w)
			}
			t.Logf("pgbench %s: %.0f TPS; observer busy %.1f ms over %.1f s (%.2f%%), %d rounds every %.1f ms",
				mode, pgbenchTPS(t, out), e.Sampling.BusyMS, e.DurationS, 100*e.Sampling.BusyShare, e.Sampling.Rounds, e.Sampling.AchievedIntervalMS)
		})
	}
}

// waitGone waits until the backends of an application have exited, and
// so flushed their statistics.
func waitGone(t *testing.T, c *pgcluster.Cluster, app string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for range 200 {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s backends still there after 2 s", app)
}
