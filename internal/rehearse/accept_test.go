package rehearse

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/compareplans"
	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// The acceptance of issue 20 on real replays: a captured workload
// (pgbench's TPC-B-like transactions and a shop application that looks
// customers up, sums their orders, inserts and deletes events) rehearsed
// 3+3 rounds at speed 1 with server-side timings from each target's log,
// with template resets, then compared across rounds with compare's
// defaults.
//
//   - BenchmarkAcceptanceAA: two identical targets, 5 rehearsals in a
//     row; each must PASS with no regression. The false positives are
//     reported (metric false-positives, target 0).
//   - BenchmarkAcceptanceAB: one change at a time on the candidate; the
//     changed queries must be named first, with intervals excluding 1,
//     and nothing unrelated may be called a regression of any kind
//     (latency, or more server work per call).
//
// Every round is observed (pg_stat_statements deltas), as rehearse does
// by default, so that server work per call is compared too.
//
// They take minutes each and time real servers: benchmarks, run under
// flock /tmp/timing.lock, never part of go test's default run.
// PGREHEARSE_ACCEPT_SECONDS sets the captured log's length (30 s).

// acceptScripts are the application's pgbench scripts, with weights,
// beside pgbench's own tpcb-like@1.
var acceptScripts = map[string]string{
	"lookup@3": `\set n random(1, 50000)
SELECT id, name FROM customers WHERE email = 'user' || :n || '@example.com';
`,
	"orders@2": `\set c random(1, 50000)
SELECT count(*), sum(total) FROM orders WHERE customer_id = :c;
`,
	"events@2": `\set c random(1, 50000)
\set d random(1, 200000)
INSERT INTO events (customer_id, kind, payload) VALUES (:c, 'view', 'page');
DELETE FROM events WHERE id = :d;
`,
}

const eventsSchema = `CREATE TABLE events (
	id bigserial PRIMARY KEY,
	customer_id bigint NOT NULL,
	kind text NOT NULL,
	payload text,
	created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO events (customer_id, kind, payload) SELECT 1 + i % 50000, 'view', 'page' FROM generate_series(1, 200000) i;
CREATE INDEX events_customer_idx ON events (customer_id)`

// acceptChanges are the candidate's changes, and the queries each must
// be found to slow down (a pattern of the query text).
var acceptChanges = map[string]struct {
	sql     []string
	changed *regexp.Regexp
	// work, when set, is the query that must be the first work
	// regression, with an interval of its WAL (or blocks dirtied) per
	// call excluding 1.
	work *regexp.Regexp
	// workCause, when set, is the first cause explain must give the
	// first work regression, explained on both targets as rehearse
	// does after its rounds.
	workCause explain.CauseKind
}{
	// The Heap field report: every insert into a table locks and
	// checks each of its indexes, partial or not.
	"partial-indexes": {
		sql: []string{`DO $$ BEGIN FOR i IN 1..200 LOOP
			EXECUTE format('CREATE INDEX events_p%s ON events (customer_id) WHERE kind = %L', i, 'k' || i);
		END LOOP; END $$`},
		changed: regexp.MustCompile(`(?i)^(INSERT INTO events|DELETE FROM events)`),
	},
	// An index on an updated column: the update is no longer HOT, it
	// writes every index, and the transaction's commit has more WAL.
	// Its latency hardly moves (+0.03-0.2 ms a call, under the floor);
	// its WAL and blocks dirtied per call do (1.67x measured at 100
	// tps), so it must be named first among the work regressions.
	"hot": {
		sql:       []string{"CREATE INDEX pgbench_accounts_abalance ON pgbench_accounts (abalance)"},
		changed:   regexp.MustCompile(`(?i)^(UPDATE pgbench_accounts|END|COMMIT)`),
		work:      regexp.MustCompile(`(?i)^UPDATE pgbench_accounts`),
		workCause: explain.CauseIndexStopsHOT,
	},
	// The lookup of customers by email turns into a sequential scan at
	// random_page_cost 800 (measured with EXPLAIN on the shop's data);
	// the orders lookup keeps its plan until about 1600, the events
	// (200,000 rows, so that their deletes by id keep theirs too) and
	// pgbench's accounts longer (TestAcceptancePlans).
	"random-page-cost": {
		sql:     []string{"ALTER DATABASE " + workload.ShopDatabase + " SET random_page_cost = 800"},
		changed: regexp.MustCompile(`(?i)^SELECT id, name FROM customers WHERE email`),
	},
}

var accepted struct {
	once sync.Once
	path string
	err  error
}

// acceptLog captures the workload once per test binary.
func acceptLog(b testing.TB) string {
	accepted.once.Do(func() {
		secs := 30
		if s := os.Getenv("PGREHEARSE_ACCEPT_SECONDS"); s != "" {
			secs, accepted.err = strconv.Atoi(s)
			if accepted.err != nil {
				return
			}
		}
		accepted.path, accepted.err = captureAccept(time.Duration(secs) * time.Second)
	})
	if accepted.err != nil {
		b.Fatalf("capture the acceptance workload: %v", accepted.err)
	}
	return accepted.path
}

func captureAccept(d time.Duration) (string, error) {
	ctx := context.Background()
	settings := acceptSettings()
	settings["log_min_duration_statement"] = "-1"
	settings["log_connections"] = "off"
	settings["log_disconnections"] = "off"
	prod, err := pgcluster.Start(ctx, pgcluster.Options{Settings: settings})
	if err != nil {
		return "", err
	}
	defer prod.Stop()
	if err := setupAccept(ctx, prod); err != nil {
		return "", err
	}
	if err := demo.EnableStatementLog(ctx, prod); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(testDir, "scripts")
	if err != nil {
		return "", err
	}
	args := []string{"-n", "-M", "prepared", "-c", "4", "-j", "2", "-T", strconv.Itoa(int(d.Seconds())), "-R", "200",
		"--random-seed=7", "-b", "tpcb-like@1"}
	for _, name := range []string{"lookup@3", "orders@2", "events@2"} {
		file, weight, _ := strings.Cut(name, "@")
		path := filepath.Join(dir, file+".sql")
		if err := os.WriteFile(path, []byte(acceptScripts[name]), 0o644); err != nil {
			return "", err
		}
		args = append(args, "-f", path+"@"+weight)
	}
	if _, err := prod.Pgbench(ctx, append(args, workload.ShopDatabase)...); err != nil {
		return "", err
	}
	if err := prod.StopServerSmart(10 * time.Second); err != nil {
		return "", err
	}
	files, err := prod.LogFiles("*.log")
	if err != nil || len(files) != 1 {
		return "", fmt.Errorf("log files %v, %v: want one", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return "", err
	}
	path := filepath.Join(testDir, "accept.log")
	return path, os.WriteFile(path, data, 0o644)
}

// acceptSettings are the servers': every statement logged, and durable
// as production is (pgcluster's defaults turn fsync and synchronous
// commits off, which would hide what a change does to the WAL).
func acceptSettings() map[string]string {
	s := workload.LogSettings()
	maps.Copy(s, map[string]string{"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"})
	return s
}

// setupAccept builds the same data on every server, unlogged, with
// pg_stat_statements for the observer. pgbench_accounts gets fillfactor
// 90, as a table updated in place should have: at pgbench's 100 its
// updates find no room in their page and are HOT only 3% of the time,
// so the control's would not be HOT either and the "hot" change would
// change nothing.
func setupAccept(ctx context.Context, c *pgcluster.Cluster) error {
	if err := workload.SetupShop(ctx, c); err != nil {
		return err
	}
	conn, err := quiet(ctx, c, workload.ShopDatabase)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, sql := range []string{eventsSchema, "VACUUM ANALYZE events",
		"ALTER TABLE pgbench_accounts SET (fillfactor = 90)", "VACUUM FULL pgbench_accounts", "ANALYZE pgbench_accounts"} {
		if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
			return fmt.Errorf("%.40s: %w", sql, err)
		}
	}
	// In the DSN's own database, where the observer looks first: not in
	// the shop, which the template reset copies and which must then
	// have no session.
	pg, err := quiet(ctx, c, "postgres")
	if err != nil {
		return err
	}
	defer pg.Close(ctx)
	_, err = pg.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements").ReadAll()
	return err
}

// acceptTarget is a target with the workload's data and change.
func acceptTarget(b testing.TB, change string) *pgcluster.Cluster {
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: acceptSettings()})
	ctx := context.Background()
	if err := setupAccept(ctx, c); err != nil {
		b.Fatal(err)
	}
	for _, sql := range acceptChanges[change].sql {
		if err := c.Exec(ctx, workload.ShopDatabase, sql); err != nil {
			b.Fatalf("change %s: %v", change, err)
		}
	}
	// The starting state of every target: freshly vacuumed and
	// checkpointed, whatever the change wrote.
	pgclustertest.Exec(b, c, workload.ShopDatabase, "VACUUM ANALYZE")
	return c
}

// acceptRehearse rehearses the log onto ctl and cand and compares.
func acceptRehearse(b testing.TB, logPath string, ctl, cand *pgcluster.Cluster) (*Outcome, *compare.Report, string) {
	dbs := []string{workload.ShopDatabase}
	out, err := Run(context.Background(), Config{
		Control: Target{DSN: ctl.DSN("postgres"), Reset: &reset.Template{DSN: ctl.DSN("postgres"), Databases: dbs},
			Logs: []string{filepath.Join(ctl.LogDir(), "*.log")}},
		Candidate: Target{DSN: cand.DSN("postgres"), Reset: &reset.Template{DSN: cand.DSN("postgres"), Databases: dbs},
			Logs: []string{filepath.Join(cand.LogDir(), "*.log")}},
		Rounds: 3,
		Replay: replayAt(logPath, workload.LogLinePrefix, 1, &observe.Options{}, nil),
	})
	if err != nil {
		b.Fatalf("rehearse: %v", err)
	}
	rep, err := Compare(out, judge.Options{ExpectWork: true})
	if err != nil {
		b.Fatalf("compare: %v", err)
	}
	text := comparisonText(rep)
	if sw := rep.ServerWork; sw == nil || !sw.Compared {
		b.Fatalf("server work not compared: %+v\n%s", sw, text)
	}
	return out, rep, text
}

// explainAccept explains the comparison's regressions on both targets, as
// rehearse does after its rounds, and returns the plans and their text.
func explainAccept(tb testing.TB, out *Outcome, rep *compare.Report, ctl, cand *pgcluster.Cluster) (*compareplans.Result, string) {
	tb.Helper()
	res, err := compareplans.Run(context.Background(), compareplans.Input{Report: rep, Baseline: out.Control, Candidate: out.Candidate},
		compareplans.Options{ControlDSN: ctl.DSN(workload.ShopDatabase), CandidateDSN: cand.DSN(workload.ShopDatabase), Top: -1,
			Database: workload.ShopDatabase})
	if err != nil {
		tb.Fatalf("explain: %v", err)
	}
	return res, plansText(res.Report)
}

// checkWorkCause checks that the first work regression's first cause
// is of kind want.
func checkWorkCause(tb testing.TB, res *compareplans.Result, fp string, want explain.CauseKind, text string) {
	tb.Helper()
	for _, o := range res.Report.Outcomes {
		if o.Fingerprint != fp {
			continue
		}
		if len(o.Causes) == 0 || o.Causes[0].Kind != want {
			tb.Errorf("the first work regression's causes are %+v, want %s first\n%s", o.Causes, want, text)
		}
		return
	}
	tb.Errorf("the first work regression %s was not explained\n%s", fp, text)
}

// queriesOf are rep's queries of the fingerprints fps, in their order:
// of rep.RegressionsByAddedTime, the queries called regressions of
// either kind, by impact; of rep.MoreWork, those that write more per
// call, by WAL added per run.
func queriesOf(rep *compare.Report, fps []string) []compare.QueryDiff {
	var out []compare.QueryDiff
	for _, fp := range fps {
		if q := rep.Query(fp); q != nil {
			out = append(out, *q)
		}
	}
	return out
}

func describeWork(q compare.QueryDiff) string {
	w := q.Work
	return fmt.Sprintf("%s WAL/call %.2fx (%.2f-%.2f) %+.0f B/call, FPI/call %.2fx, dirtied/call %.2fx (%.2f-%.2f), %+.0f kB WAL per run: %.60q",
		q.Status, w.WALBytes.Ratio, w.WALBytes.Low, w.WALBytes.High, w.WALBytes.Delta, w.WALFPI.Ratio,
		w.Dirtied.Ratio, w.Dirtied.Low, w.Dirtied.High, w.AddedWALBytes/1024, q.Query)
}

func describe(q compare.QueryDiff) string {
	e := q.Effects.Of(q.Regressed)
	if e == nil {
		return fmt.Sprintf("%s %.60q", q.Status, q.Query)
	}
	return fmt.Sprintf("%s %s %.2fx (%.2f-%.2f) %+.3f ms/call, impact %.0f ms: %.60q",
		q.Status, q.Regressed, e.Ratio, e.Low, e.High, e.DeltaMS, q.ImpactMS, q.Query)
}

func BenchmarkAcceptanceAA(b *testing.B) {
	logPath := acceptLog(b)
	ctl, cand := acceptTarget(b, ""), acceptTarget(b, "")
	const times = 5
	falsePositives := 0
	for range b.N {
		for i := 1; i <= times; i++ {
			_, rep, text := acceptRehearse(b, logPath, ctl, cand)
			regs, work := queriesOf(rep, rep.RegressionsByAddedTime), queriesOf(rep, rep.MoreWork)
			fp := rep.Verdict.Status != compare.VerdictPass || len(regs) > 0 || len(work) > 0
			if fp {
				falsePositives++
			}
			b.Logf("A/A %d of %d: verdict %s, %d regressions, %d tail regressions, %d more work, noise measured %v",
				i, times, rep.Verdict.Status, rep.Verdict.Regressions, rep.Verdict.TailRegressions, rep.Verdict.MoreWork, rep.Noise.Measured)
			for _, q := range regs {
				b.Logf("  FALSE POSITIVE: %s", describe(q))
			}
			for _, q := range work {
				b.Logf("  FALSE POSITIVE: %s", describeWork(q))
			}
			if fp {
				b.Logf("%s", text)
			}
		}
	}
	b.ReportMetric(float64(falsePositives), "false-positives")
	if falsePositives > 0 {
		b.Errorf("%d of %d A/A rehearsals did not pass", falsePositives, times*b.N)
	}
}

func BenchmarkAcceptanceAB(b *testing.B) {
	logPath := acceptLog(b)
	for _, change := range []string{"partial-indexes", "hot", "random-page-cost"} {
		b.Run(change, func(b *testing.B) {
			ctl, cand := acceptTarget(b, ""), acceptTarget(b, change)
			want := acceptChanges[change].changed
			for range b.N {
				out, rep, text := acceptRehearse(b, logPath, ctl, cand)
				regs, work := queriesOf(rep, rep.RegressionsByAddedTime), queriesOf(rep, rep.MoreWork)
				b.Logf("%s: verdict %s, %d regressions, %d tail regressions, %d more work", change, rep.Verdict.Status,
					rep.Verdict.Regressions, rep.Verdict.TailRegressions, rep.Verdict.MoreWork)
				unrelated := 0
				for _, q := range regs {
					related := want.MatchString(strings.TrimSpace(q.Query))
					if !related {
						unrelated++
					}
					b.Logf("  %v %s", map[bool]string{true: "changed:  ", false: "UNRELATED:"}[related], describe(q))
				}
				for _, q := range work {
					related := want.MatchString(strings.TrimSpace(q.Query))
					if !related {
						unrelated++
					}
					b.Logf("  %v %s", map[bool]string{true: "changed:  ", false: "UNRELATED:"}[related], describeWork(q))
				}
				// Slower beside a dominant regression (the server busier
				// with it): shown, not regressions, so never unrelated ones.
				for _, fp := range rep.SlowerWhileBusier {
					if q := rep.Query(fp); q != nil {
						b.Logf("  beside:    %s (busier with %s)", describe(*q), q.BusierWith)
					}
				}
				// Latency regressions first, then the work regressions:
				// the first of them is what the report names first.
				named := append(regs, work...)
				b.ReportMetric(float64(unrelated), "unrelated")
				switch {
				case len(named) == 0:
					b.Errorf("%s: no regression found\n%s", change, text)
				case !want.MatchString(strings.TrimSpace(named[0].Query)):
					b.Errorf("%s: the first regression is not a changed query\n%s", change, text)
				case unrelated > 0:
					b.Errorf("%s: %d unrelated queries called regressions\n%s", change, unrelated, text)
				}
				if ww := acceptChanges[change].work; ww != nil {
					switch {
					case len(work) == 0:
						b.Errorf("%s: no work regression found\n%s", change, text)
					case !ww.MatchString(strings.TrimSpace(work[0].Query)):
						b.Errorf("%s: the first work regression is not %s\n%s", change, ww, text)
					case work[0].Work.Of(work[0].Work.More).Low <= 1:
						b.Errorf("%s: %q's %s interval holds 1\n%s", change, work[0].Query, work[0].Work.More, text)
					}
				}
				if wc := acceptChanges[change].workCause; wc != "" && len(work) > 0 {
					res, plans := explainAccept(b, out, rep, ctl, cand)
					b.Logf("%s", plans)
					checkWorkCause(b, res, work[0].Fingerprint, wc, plans)
				}
				for _, q := range regs {
					if e := q.Effects.Of(q.Regressed); e != nil && want.MatchString(strings.TrimSpace(q.Query)) && e.Low <= 1 {
						b.Errorf("%s: %q's interval (%.2f-%.2f) holds 1", change, q.Query, e.Low, e.High)
					}
				}
			}
		})
	}
}

// TestAcceptancePlans checks what the random-page-cost change rests on:
// at random_page_cost 800 the lookup by email, and it alone among the
// workload's statements, turns from an index scan into a sequential one.
func TestAcceptancePlans(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if err := setupAccept(ctx, c); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN(workload.ShopDatabase))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, tc := range []struct {
		sql     string
		flipped bool
	}{
		{"SELECT id, name FROM customers WHERE email = 'user' || 123 || '@example.com'", true},
		{"SELECT count(*), sum(total) FROM orders WHERE customer_id = 123", false},
		{"DELETE FROM events WHERE id = 123", false},
		{"UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 123", false},
		{"SELECT abalance FROM pgbench_accounts WHERE aid = 123", false},
	} {
		for _, rpc := range []string{"4", "800"} {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "SET LOCAL random_page_cost = "+rpc); err != nil {
				t.Fatal(err)
			}
			rows, _ := tx.Query(ctx, "EXPLAIN "+tc.sql)
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			tx.Rollback(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seq := strings.Contains(strings.Join(plan, "\n"), "Seq Scan")
			if want := tc.flipped && rpc == "800"; seq != want {
				t.Errorf("random_page_cost %s: %s: sequential scan %v, want %v:\n%s", rpc, tc.sql, seq, want, strings.Join(plan, "\n"))
			}
		}
	}
}

// plansText is a short text of the plans explained, for the tests'
// failures: each query's verdict and the kinds of its causes.
func plansText(rep *explain.Report) string {
	var b strings.Builder
	for _, o := range rep.Outcomes {
		kinds := make([]string, len(o.Causes))
		for i, c := range o.Causes {
			kinds[i] = string(c.Kind)
		}
		fmt.Fprintf(&b, "  %s %v causes %v: %s\n", o.Fingerprint, o.Verdict, kinds, o.Query)
	}
	return b.String()
}
