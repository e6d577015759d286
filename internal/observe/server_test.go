package observe

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
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
func startPgbench(t testing.TB, settings map[string]string) *pgcluster.Cluster {
	t.Helper()
	return initPgbench(t, pgclustertest.StartT(t, pgcluster.Options{Settings: settings}))
}

// initPgbench fills c with pgbench's tables (scale 1) and creates
// pg_stat_statements.
func initPgbench(t testing.TB, c *pgcluster.Cluster) *pgcluster.Cluster {
	t.Helper()
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	return c
}

func startCollector(t testing.TB, dsn string, opts Options) *Collector {
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

// roundWaiter lets a test wait for a condition on a Collector, checked on
// its sampling goroutine after every round, rather than sleeping and
// hoping the round came.
type roundWaiter struct {
	mu   sync.Mutex
	cond func(*Collector) bool
	met  chan struct{}
}

func (w *roundWaiter) afterRound(o *Collector) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cond != nil && w.cond(o) {
		close(w.met)
		w.cond = nil
	}
}

// wait blocks until cond holds after a round, or fails t after a minute.
func (w *roundWaiter) wait(t *testing.T, what string, cond func(*Collector) bool) {
	t.Helper()
	met := make(chan struct{})
	w.mu.Lock()
	w.cond, w.met = cond, met
	w.mu.Unlock()
	select {
	case <-met:
	case <-time.After(time.Minute):
		t.Fatalf("the collector did not get %s in a minute", what)
	}
}

// startWaitable is startCollector with a roundWaiter.
func startWaitable(t *testing.T, dsn string, opts Options) (*Collector, *roundWaiter) {
	w := &roundWaiter{}
	opts.afterRound = w.afterRound
	return startCollector(t, dsn, opts), w
}

func stop(t testing.TB, o *Collector) *Evidence {
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

func pgbenchTPS(t testing.TB, out []byte) float64 {
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
	functionalCase(t)
	c := startPgbench(t, pgssSettings(nil))
	ctx := context.Background()
	for _, mode := range []string{"simple", "prepared"} {
		t.Run(mode, func(t *testing.T) {
			pgclustertest.Exec(t, c, "postgres", "SELECT pg_stat_statements_reset()")
			o := startCollector(t, c.DSN("postgres"), Options{Interval: 300 * time.Millisecond, SampleInterval: 20 * time.Millisecond})
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
			// statements; none of the observer's. The server's counts
			// are flushed by each backend at most once a second and
			// on exit, so the edges may be off by a few.
			tp := e.Throughput
			if tp == nil || tp.TotalTransactions < want*99/100 || tp.TotalTransactions > want+50 {
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
func waitGone(t testing.TB, c *pgcluster.Cluster, app string) {
	t.Helper()
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	for range 200 {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			waitFlushed(t, conn, time.Now())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s backends still there after 2 s", app)
}

// waitFlushed waits until the statistics of backends that left
// pg_stat_activity before left can be read. From PostgreSQL 15 they are
// at once: an exiting backend flushes them to shared memory
// (before_shmem_exit) before it leaves pg_stat_activity (on_shmem_exit).
// Before 15 it sends them to the statistics collector, whose file a
// reader sees up to half a second later: wait for a file written after
// left.
func waitFlushed(t testing.TB, conn *pgx.Conn, left time.Time) {
	t.Helper()
	ctx := context.Background()
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version >= 150000 {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var fresh bool
		if err := conn.QueryRow(ctx, "SELECT pg_stat_get_snapshot_timestamp() > $1", left).Scan(&fresh); err != nil {
			t.Fatal(err)
		}
		if fresh {
			return
		}
	}
	t.Fatal("no statistics snapshot newer than the backends' exit after 10 s")
}

func pgbench(t testing.TB, c *pgcluster.Cluster, args ...string) []byte {
	t.Helper()
	out, err := c.Pgbench(context.Background(), append(args, "postgres")...)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, "pgbench")
	return out
}

func hasWarning(e *Evidence, word string) bool {
	for _, w := range e.Warnings {
		if strings.Contains(w, word) {
			return true
		}
	}
	return false
}

// A pg_stat_statements_reset() between two runs of pgbench is detected,
// and the deltas still count both runs exactly (a snapshot between the
// first run and the reset loses nothing). end minus start would give the
// second run less the first.
func TestResetInTheMiddle(t *testing.T) {
	functionalCase(t)
	c := startPgbench(t, pgssSettings(nil))
	o, rounds := startWaitable(t, c.DSN("postgres"), Options{Interval: 100 * time.Millisecond})
	pgbench(t, c, "-n", "-c", "2", "-t", "150")
	ran := time.Now()
	rounds.wait(t, "a snapshot after the first run", func(o *Collector) bool {
		return o.pgss != nil && o.pgss.prev != nil && o.pgss.prev.at.After(ran)
	})
	pgclustertest.Exec(t, c, "postgres", "SELECT pg_stat_statements_reset()")
	pgbench(t, c, "-n", "-c", "2", "-t", "100")
	e := stop(t, o)
	for name, sql := range pgbenchStatements {
		q := e.query(fp(t, sql))
		if q == nil || q.Calls != 500 {
			t.Errorf("%s: %+v, want 500 calls", name, q)
		} else if !q.Restarted {
			t.Errorf("%s: not marked restarted", name)
		}
	}
	if len(e.Statements.Resets) != 1 || !hasWarning(e, "reset 1 time") {
		t.Errorf("resets %v, warnings %q", e.Statements.Resets, e.Warnings)
	}
	resets := 0
	for _, iv := range e.Statements.Intervals {
		if iv.Reset {
			resets++
		}
	}
	if resets != 1 {
		t.Errorf("%d intervals with a reset, want 1", resets)
	}
}

// With pg_stat_statements.max at its minimum (100) and hundreds of
// distinct queries, entries are evicted: the evidence says so, and a hot
// query, which eviction spares, keeps exact counts.
func TestEviction(t *testing.T) {
	functionalCase(t)
	c := startPgbench(t, pgssSettings(map[string]string{"pg_stat_statements.max": "100"}))
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	o := startCollector(t, c.DSN("postgres"), Options{Interval: 100 * time.Millisecond})
	pgbench(t, c, "-n", "-S", "-c", "2", "-t", "500")
	// Queries of 1 to 400 columns: each its own query id.
	for i := 1; i <= 400; i++ {
		cols := strings.Repeat("1, ", i-1) + "1"
		if _, err := conn.Exec(ctx, "SELECT "+cols); err != nil {
			t.Fatal(err)
		}
	}
	pgbench(t, c, "-n", "-S", "-c", "2", "-t", "500")
	e := stop(t, o)
	if e.Statements.Evicted == 0 || !hasWarning(e, "evicted") {
		t.Fatalf("no eviction seen: %d evicted, warnings %q", e.Statements.Evicted, e.Warnings)
	}
	q := e.query(fp(t, pgbenchStatements["select"]))
	if q == nil || q.Calls != 2000 {
		t.Errorf("select-only: %+v, want 2000 calls", q)
	}
	t.Logf("%d evicted, %d entries restarted, %d queries", e.Statements.Evicted, e.Statements.EntriesRestarted, len(e.Statements.Queries))
}

// Eight clients updating pgbench's single branch wait for each other's
// transactions: the profile shows Lock waits, on the branch update.
func TestContentionWaits(t *testing.T) {
	// Sequential: it wants 4 rounds of the 1 s interval within pgbench's 4 s, which
	// a busy machine may delay.
	c := startPgbench(t, pgssSettings(nil))
	o := startCollector(t, c.DSN("postgres"), Options{Interval: time.Second})
	pgbench(t, c, "-n", "-c", "8", "-T", "4")
	e := stop(t, o)
	lock := int64(0)
	for _, w := range e.Waits.Events {
		if w.Type == "Lock" && (w.Event == "transactionid" || w.Event == "tuple") {
			lock += w.Samples
		}
	}
	if lock == 0 {
		t.Fatalf("no Lock/transactionid or tuple waits in %+v", e.Waits.Events)
	}
	branches := fp(t, pgbenchStatements["branches"])
	var bw *QueryWaits
	for i := range e.Waits.ByQuery {
		if e.Waits.ByQuery[i].Fingerprint == branches {
			bw = &e.Waits.ByQuery[i]
		}
	}
	if bw == nil || len(bw.Events) == 0 || bw.Events[0].Type != "Lock" {
		t.Errorf("branch update waits: %+v", bw)
	}
	if bw != nil && len(bw.OverTime) == 0 {
		t.Error("the top query has no series over time")
	}
	if q := e.query(branches); q == nil || q.WaitSamples != bw.Samples {
		t.Errorf("branch update's pg_stat_statements entry has no waits: %+v", q)
	}
	ws := e.Waits.OverTime
	if ws == nil || len(ws.Series) == 0 || len(ws.Rounds) < 4 {
		t.Errorf("over time: %+v", ws)
	}
	tp := e.Throughput
	if tp == nil || tp.MeanTPS <= 0 || slices.Max(tp.ConnectionsMax) != 8 {
		t.Errorf("throughput: %+v", tp)
	}
	t.Logf("%d rounds, %d samples: %+v", e.Waits.Rounds, e.Waits.Samples, e.Waits.Events)
}

// With track_planning off the evidence warns that planning is invisible.
func TestTrackPlanningOff(t *testing.T) {
	functionalCase(t)
	c := startPgbench(t, pgssSettings(map[string]string{"pg_stat_statements.track_planning": "off"}))
	o := startCollector(t, c.DSN("postgres"), Options{})
	pgbench(t, c, "-n", "-c", "1", "-t", "50")
	e := stop(t, o)
	if !hasWarning(e, "track_planning is off") || e.Statements.TrackPlanning {
		t.Errorf("warnings %q", e.Warnings)
	}
	if q := e.query(fp(t, pgbenchStatements["select"])); q == nil || q.Calls != 50 || q.Plans != 0 {
		t.Errorf("select: %+v", q)
	}
}

// Without pg_stat_statements the observer still samples waits and TPS,
// and says what is missing.
func TestWithoutPGSS(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	if out, err := c.Pgbench(context.Background(), "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	o := startCollector(t, c.DSN("postgres"), Options{})
	pgbench(t, c, "-n", "-c", "2", "-t", "100")
	e := stop(t, o)
	if e.Statements != nil || !e.Capabilities.PGSS.Is(ExtUnavailable) || !hasWarning(e, "pg_stat_statements is not available") {
		t.Errorf("pgss %q, statements %v, warnings %q", e.Capabilities.PGSS, e.Statements != nil, e.Warnings)
	}
	if e.Throughput == nil || e.Throughput.TotalTransactions < 200 {
		t.Errorf("throughput %+v", e.Throughput)
	}
	// Not created here, whether or not the server has it packaged.
	if e.Capabilities.WaitSampling.Is(ExtInstalled) || e.Capabilities.WaitSource != "pg_stat_activity" ||
		!strings.Contains(strings.Join(e.Notes, " "), "sampled from pg_stat_activity") {
		t.Errorf("pg_wait_sampling %q, notes %q", e.Capabilities.WaitSampling, e.Notes)
	}
}

// BenchmarkObserverOverhead is the observer's cost on the workload:
// pgbench's select-only TPS with and without an observer at the default
// intervals, alternated three times on the same cluster, and the
// observer's own busy share of the time. A target, so a benchmark, not a
// timed test (on a shared two-CPU machine one pgbench run differs from the
// next by ±30%); it reports the medians as tps-ratio and busy-%:
//
//	go test -run '^$' -bench ObserverOverhead -benchtime 1x ./internal/observe
func BenchmarkObserverOverhead(b *testing.B) {
	c := startPgbench(b, pgssSettings(nil))
	run := func() float64 {
		return pgbenchTPS(b, pgbench(b, c, "-n", "-S", "-M", "prepared", "-c", "2", "-j", "1", "-T", "3"))
	}
	run() // warm the cache
	b.ResetTimer()
	for range b.N {
		var ratios, busy []float64
		for i := range 3 {
			without := run()
			o := startCollector(b, c.DSN("postgres"), Options{})
			with := run()
			e := stop(b, o)
			ratios = append(ratios, with/without)
			busy = append(busy, e.Sampling.BusyShare)
			b.Logf("round %d: %.0f TPS without, %.0f with the observer: ratio %.3f; observer busy %.1f ms in %.1f s (%.2f%%), %d samples",
				i+1, without, with, with/without, e.Sampling.BusyMS, e.DurationS, 100*e.Sampling.BusyShare, e.Sampling.Rounds)
		}
		slices.Sort(ratios)
		slices.Sort(busy)
		b.ReportMetric(ratios[1], "tps-ratio")
		b.ReportMetric(100*busy[1], "busy-%")
	}
}

// On an idle server the observer sees no transactions: its own, dozens
// a second, are left out.
func TestIdleServerNoOwnTransactions(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: pgssSettings(nil)})
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
	o, rounds := startWaitable(t, c.DSN("postgres"), Options{Interval: 500 * time.Millisecond, SampleInterval: 20 * time.Millisecond})
	// Long enough for its own transactions to show if they were not
	// left out: 100 of them, over 2 s of pg_stat_database readings.
	rounds.wait(t, "100 transactions of its own over 2 s", func(o *Collector) bool {
		return o.stats.ownXacts >= 100 && o.lastXactAt.Sub(o.start) >= 2*time.Second
	})
	e := stop(t, o)
	if tp := e.Throughput; tp == nil || tp.TotalTransactions > 2 || e.Sampling.OwnTransactions < 100 {
		t.Errorf("idle server: %+v transactions, the observer's own %d", tp, e.Sampling.OwnTransactions)
	}
	if e.Statements.Totals.Calls != 0 || e.Waits.Samples != 0 {
		t.Errorf("idle server: %d calls, %d active samples", e.Statements.Totals.Calls, e.Waits.Samples)
	}
}

// The work counters of pg_stat_statements (PostgreSQL 13+) are read: an
// update writes WAL records and bytes and dirties shared blocks, and
// after a checkpoint its first change of a page writes a full-page image.
func TestWorkCounters(t *testing.T) {
	functionalCase(t)
	c := startPgbench(t, pgssSettings(map[string]string{"full_page_writes": "on"}))
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	o := startCollector(t, c.DSN("postgres"), Options{Interval: time.Minute, SampleInterval: 50 * time.Millisecond})
	const calls = 200
	for i := range calls {
		// Rows 400 apart: a page of its own each.
		if _, err := conn.Exec(ctx, "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = $1", 1+i*400); err != nil {
			t.Fatal(err)
		}
	}
	e := stop(t, o)
	q := e.query(fp(t, "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1"))
	if q == nil {
		t.Fatal("the update is not in the evidence")
	}
	if q.Calls != calls {
		t.Errorf("%d calls, want %d", q.Calls, calls)
	}
	if q.WALBytes <= 0 || q.WALRecords < calls || q.WALFPI <= 0 || q.SharedBlksDirtied <= 0 {
		t.Errorf("work counters not read: wal_bytes %d, wal_records %d, wal_fpi %d, shared_blks_dirtied %d",
			q.WALBytes, q.WALRecords, q.WALFPI, q.SharedBlksDirtied)
	}
	t.Logf("per call: %.0f WAL bytes, %.2f records, %.2f FPI, %.2f dirtied, %.2f written", float64(q.WALBytes)/calls,
		float64(q.WALRecords)/calls, float64(q.WALFPI)/calls, float64(q.SharedBlksDirtied)/calls, float64(q.SharedBlksWritten)/calls)
	if tot := e.Statements.Totals; tot.WALBytes < q.WALBytes || tot.SharedBlksDirtied < q.SharedBlksDirtied {
		t.Errorf("totals %+v below the update's", tot)
	}
}

// functionalCase marks t as a functional case, which measures no time:
// it asserts counts, errors, messages, results or files, with generous
// time bounds or none. Go runs such tests in parallel (at most -parallel
// at once, GOMAXPROCS by default) and only after every sequential test
// of the package has finished: the tests that time real servers (pacing,
// lag, throughput, overhead, comparisons), left sequential, still run
// alone, undisturbed.
func functionalCase(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// Mark keeps pg_stat_statements' deltas from the start to the moment
// asked for as the evidence's window, beside the whole observation's: a
// replay's schedule window (results.Window). Only the first Mark counts.
func TestMarkWindow(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: pgssSettings(nil)})
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const sql = "SELECT count(*) FROM generate_series(1, 100)"
	run := func(n int) {
		for range n {
			if _, err := conn.Exec(ctx, sql); err != nil {
				t.Fatal(err)
			}
		}
	}
	// No periodic snapshot between the start and the stop: the window
	// is Mark's alone.
	o, w := startWaitable(t, c.DSN("postgres"), Options{Interval: time.Hour, SampleInterval: 20 * time.Millisecond})
	run(20)
	o.Mark()
	w.wait(t, "the window's snapshot", func(o *Collector) bool { return o.pgss.window != nil })
	run(30)
	o.Mark()
	e := stop(t, o)
	q := e.query(fp(t, sql))
	if q == nil || q.Calls != 50 {
		t.Fatalf("the whole observation: %+v, want 50 calls", q)
	}
	win := e.Statements.Window
	if win == nil || win.End == "" {
		t.Fatalf("no window: %+v", e.Statements)
	}
	var wq *WindowQuery
	for i := range win.Queries {
		if win.Queries[i].Fingerprint == q.Fingerprint {
			wq = &win.Queries[i]
		}
	}
	if wq == nil || wq.Calls != 20 || wq.TotalExecMS <= 0 || wq.TotalExecMS >= q.TotalExecMS || wq.Restarted {
		t.Errorf("the window: %+v, want the first 20 calls of %+v", wq, q)
	}
	if !(win.End > e.Start && win.End < e.End) {
		t.Errorf("the window ends at %s, outside the observation's %s to %s", win.End, e.Start, e.End)
	}
}
