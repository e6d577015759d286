package replay

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/source"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// The orders workload of issue 10: producers insert orders with ids they
// choose and commit; consumers in other sessions ship each order as soon
// as its producer says it is committed. With the foreign key, a consumer
// inserts a shipment referencing the order and updates it; without, it
// only updates the order by id, and a replay that runs the update before
// the insert diverges without any error.
const (
	ordersSchema = `CREATE TABLE orders (id bigint PRIMARY KEY, qty int NOT NULL, state text NOT NULL DEFAULT 'new')`
	shipSchema   = `CREATE TABLE shipments (order_id bigint PRIMARY KEY REFERENCES orders (id), carrier text NOT NULL)`
	ordersDB     = "shop"
)

// ordersCapture is a capture of the orders workload.
type ordersCapture struct {
	log   string // the stderr log
	state string // the tables at the end
	fk    bool
	stmts int // statements the clients sent
}

func ordersSchemaSQL(fk bool) string {
	if fk {
		return ordersSchema + "; " + shipSchema
	}
	return ordersSchema
}

// captureOrders runs the workload on a new cluster that logs every
// statement, and returns its log and final state. Each of the producers
// makes perProducer orders, one every pace.
func captureOrders(tb testing.TB, fk bool, producers, consumers, perProducer int, pace time.Duration) ordersCapture {
	tb.Helper()
	ctx := context.Background()
	c := pgclustertest.StartLogged(tb, workload.LogSettings(), ordersDB, ordersSchemaSQL(fk))
	ready := make(chan int64, producers*perProducer)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var stmts int
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	connect := func() *pgconn.PgConn {
		conn, err := pgconn.Connect(ctx, c.DSN(ordersDB))
		if err != nil {
			tb.Fatal(err)
		}
		return conn
	}
	var pwg sync.WaitGroup
	for p := range producers {
		conn := connect()
		pwg.Go(func() {
			defer conn.Close(ctx)
			tick := time.NewTicker(pace)
			defer tick.Stop()
			n := 0
			for k := range perProducer {
				<-tick.C
				id := int64((p+1)*1_000_000 + k)
				args := [][]byte{[]byte(strconv.FormatInt(id, 10)), []byte(strconv.Itoa(k%7 + 1))}
				var err error
				if k%2 == 0 {
					err = simple(ctx, conn, "BEGIN")
					err = firstOf(err, extended(ctx, conn, "INSERT INTO orders (id, qty) VALUES ($1, $2)", args...))
					err = firstOf(err, simple(ctx, conn, "COMMIT"))
					n += 3
				} else {
					err = extended(ctx, conn, "INSERT INTO orders (id, qty) VALUES ($1, $2)", args...)
					n++
				}
				if err != nil {
					fail(fmt.Errorf("producer %d: %w", p, err))
					return
				}
				ready <- id
			}
			mu.Lock()
			stmts += n
			mu.Unlock()
		})
	}
	for range consumers {
		conn := connect()
		wg.Go(func() {
			defer conn.Close(ctx)
			n := 0
			for id := range ready {
				arg := []byte(strconv.FormatInt(id, 10))
				var err error
				if fk {
					err = simple(ctx, conn, "BEGIN")
					err = firstOf(err, extended(ctx, conn, "INSERT INTO shipments (order_id, carrier) VALUES ($1, $2)", arg, []byte("post")))
					err = firstOf(err, extended(ctx, conn, "UPDATE orders SET state = 'shipped' WHERE id = $1", arg))
					err = firstOf(err, simple(ctx, conn, "COMMIT"))
					n += 4
				} else {
					err = extended(ctx, conn, "UPDATE orders SET state = 'shipped' WHERE id = $1", arg)
					n++
				}
				if err != nil {
					fail(fmt.Errorf("consumer: %w", err))
					return
				}
			}
			mu.Lock()
			stmts += n
			mu.Unlock()
		})
	}
	pwg.Wait()
	close(ready)
	wg.Wait()
	if firstErr != nil {
		tb.Fatal(firstErr)
	}
	state := ordersState(tb, c.DSN(ordersDB)+" options='-c log_min_duration_statement=-1'", fk)
	if want := fmt.Sprintf("%d shipped", producers*perProducer); !strings.Contains(state, want) {
		tb.Fatalf("the original did not ship every order: %s", stateSummary(state))
	}
	return ordersCapture{log: pgclustertest.StoppedLog(tb, c), state: state, fk: fk, stmts: stmts}
}

func firstOf(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func simple(ctx context.Context, conn *pgconn.PgConn, sql string) error {
	_, err := conn.Exec(ctx, sql).ReadAll()
	return err
}

func extended(ctx context.Context, conn *pgconn.PgConn, sql string, args ...[]byte) error {
	return conn.ExecParams(ctx, sql, args, nil, nil, nil).Read().Err
}

// ordersState is the tables' content as one text: a first line counting
// orders by state, then every row.
func ordersState(tb testing.TB, dsn string, fk bool) string {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	q := `SELECT (SELECT coalesce(string_agg(n || ' ' || state, ', ' ORDER BY state), '') FROM (SELECT state, count(*) n FROM orders GROUP BY state) s)
	|| E'\n' || coalesce((SELECT string_agg(id || ':' || qty || ':' || state, ',' ORDER BY id) FROM orders), '')`
	if fk {
		q += ` || E'\n' || coalesce((SELECT string_agg(order_id || ':' || carrier, ',' ORDER BY order_id) FROM shipments), '')`
	}
	res := conn.ExecParams(ctx, q, nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 {
		tb.Fatalf("state: %v", res.Err)
	}
	return string(res.Rows[0][0])
}

func stateSummary(state string) string {
	first, _, _ := strings.Cut(state, "\n")
	return first
}

// freshOrders makes the target's database anew, empty, with the schema.
func freshOrders(tb testing.TB, c *pgcluster.Cluster, fk bool) {
	tb.Helper()
	pgclustertest.Exec(tb, c, "postgres", "DROP DATABASE IF EXISTS "+ordersDB+" WITH (FORCE)")
	pgclustertest.Exec(tb, c, "postgres", "CREATE DATABASE "+ordersDB)
	pgclustertest.Exec(tb, c, ordersDB, ordersSchemaSQL(fk))
}

// replayOrders replays a capture against a fresh copy on c.
func replayOrders(tb testing.TB, c *pgcluster.Cluster, cp ordersCapture, opts Options) (*results.Result, string) {
	tb.Helper()
	freshOrders(tb, c, cp.fk)
	opts.Target = c.DSN("postgres")
	res := replayLog(tb, cp.log, workload.LogLinePrefix, opts)
	if t, ok := tb.(*testing.T); ok {
		checkInvariant(t, res)
	}
	return res, ordersState(tb, c.DSN(ordersDB), cp.fk)
}

func syncLine(res *results.Result) string {
	s, w := res.Sync, res.SyncWait
	if w == nil {
		w = &results.Distribution{}
	}
	line := fmt.Sprintf("%s: %d waited, total %.0f ms, p50 %.2f p99 %.2f max %.2f ms, %d timeouts, %d deadlocks",
		s.Mode, s.Waited, w.TotalMS, w.P50, w.P99, w.Max, s.Timeouts, s.Deadlocks)
	if res.Lag != nil {
		line += fmt.Sprintf("; lag p50 %.2f p99 %.2f max %.2f ms", res.Lag.P50, res.Lag.P99, res.Lag.Max)
	}
	line += fmt.Sprintf("; %.2f s, catalog %.0f ms", res.WallSeconds, s.CatalogMS)
	if len(s.Notes) > 0 {
		line += "; notes: " + strings.Join(s.Notes, "; ")
	}
	return line
}

// TestSyncOrders is issue 10's acceptance test: the orders workload,
// captured on a real server with every statement logged, replays against
// a fresh identical copy at speeds 1, 2 and 0 with the default settings
// with no statement failing only on the target and the same final
// tables; with and without the foreign key. The same capture replayed
// with Sync off usually diverges (a race, retried a bounded number of
// times), and the comparison then reports it as diverged. make test
// replays the foreign key's case at speeds 1 and 0 (issue 44: make test
// within 15 minutes); speed 2 stays without it, and make test-long
// (PGREHEARSE_LONG) replays both at the three speeds.
func TestSyncOrders(t *testing.T) {
	// Functional: it compares tables, counts and errors, never a time
	// (issue 44: 30 s or more that no longer hold the sequential tests).
	slowCase(t, 34*time.Second)
	for _, fk := range []bool{true, false} {
		t.Run(fmt.Sprintf("fk=%v", fk), func(t *testing.T) {
			// The two cases at once, each on a target of its own (issue
			// 44): the package's longest test was their sum.
			t.Parallel()
			target := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"max_connections": "100"}})
			const producers, perProducer = 4, 250
			const producersTimes = producers * perProducer
			cp := captureOrders(t, fk, producers, 4, perProducer, 4*time.Millisecond)
			t.Logf("captured %d statements: %s", cp.stmts, stateSummary(cp.state))
			synchronized := []float64{1, 2, 0}
			if fk && os.Getenv("PGREHEARSE_LONG") == "" {
				synchronized = []float64{1, 0}
			}
			var synced *results.Result
			for _, speed := range synchronized {
				res, state := replayOrders(t, target, cp, Options{Speed: speed})
				synced = res
				t.Logf("speed %v, sync %s; %s", speed, syncLine(res), stateSummary(state))
				if res.Sync == nil || res.Sync.Mode != "object" {
					t.Errorf("speed %v: sync %+v, want object by default", speed, res.Sync)
				}
				if n := res.Outcomes.FailedOnlyOnTarget; n != 0 {
					t.Errorf("speed %v: %d statements failed only on the target: %v %v", speed, n, res.ErrorsBySQLState, res.Errors)
				}
				if got := res.Statements.Executed; got != int64(cp.stmts) {
					t.Errorf("speed %v: %d statements executed, the clients sent %d (%+v)", speed, got, cp.stmts, res.Statements)
				}
				if state != cp.state {
					t.Errorf("speed %v: the target's tables differ from the original's: %s, original %s", speed, stateSummary(state), stateSummary(cp.state))
				}
				if res.Sync.Timeouts != 0 || res.Sync.Deadlocks != 0 {
					t.Errorf("speed %v: %d timeouts, %d deadlocks on an identical target", speed, res.Sync.Timeouts, res.Sync.Deadlocks)
				}
				// Every INSERT and UPDATE names its row by its primary
				// key as a bind parameter: all are ordered by row (the
				// final tables above show that the order held).
				byRow := int64(2 * producersTimes)
				if fk {
					byRow = 3 * producersTimes
				}
				if res.Sync.ByRow != byRow || res.Sync.KeyNotLogged != 0 {
					t.Errorf("speed %v: %d statements ordered by row, %d with their key not logged; want %d and 0", speed, res.Sync.ByRow, res.Sync.KeyNotLogged, byRow)
				}
			}
			// Commit mode, stricter, holds too.
			res, state := replayOrders(t, target, cp, Options{Speed: 0, Sync: syncdep.Commit})
			t.Logf("speed 0, sync %s; %s", syncLine(res), stateSummary(state))
			if res.Outcomes.FailedOnlyOnTarget != 0 || state != cp.state || res.Sync.Mode != "commit" {
				t.Errorf("commit mode: %d failed only on the target, %s (original %s)", res.Outcomes.FailedOnlyOnTarget, stateSummary(state), stateSummary(cp.state))
			}
			// Load mode (rehearse's default, issue 58), which orders
			// only writes and locks, keeps every write as the original
			// had it: no error, the same tables.
			res, state = replayOrders(t, target, cp, Options{Speed: 0, Sync: syncdep.Load})
			t.Logf("speed 0, sync %s; %s", syncLine(res), stateSummary(state))
			if res.Outcomes.FailedOnlyOnTarget != 0 || state != cp.state || res.Sync.Mode != "load" || res.Sync.Timeouts != 0 {
				t.Errorf("load mode: %d failed only on the target %v, %s (original %s), sync %+v", res.Outcomes.FailedOnlyOnTarget, res.ErrorsBySQLState,
					stateSummary(state), stateSummary(cp.state), res.Sync)
			}
			// Whether a free replay diverges depends on timing, which
			// the test cannot force: it is tried at several speeds
			// until one does, and the divergence report is checked
			// then. On a loaded machine none may diverge: that is
			// logged, not a failure (no product assertion failed).
			speeds := []float64{0, 1, 2, 0, 1, 2}
			diverged := false
			for _, speed := range speeds {
				res, state := replayOrders(t, target, cp, Options{Speed: speed, Sync: syncdep.Off})
				t.Logf("speed %v, sync off: %d failed only on the target %v; %s; %.2f s", speed, res.Outcomes.FailedOnlyOnTarget, res.ErrorsBySQLState, stateSummary(state), res.WallSeconds)
				if res.Sync.Mode != "off" {
					t.Errorf("sync %+v, want off", res.Sync)
				}
				if res.Outcomes.FailedOnlyOnTarget > 0 || state != cp.state {
					// Compared with the synchronized replay, the free one
					// is reported as diverged, naming the queries that did
					// other work (rows per call, ordering errors), not as
					// a regression of the target.
					rep, err := compare.Compare(synced, res, compare.Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("report: %s", rep.Verdict.Status)
					if rep.Verdict.Status == compare.VerdictPass && res.Outcomes.FailedOnlyOnTarget == 0 {
						// A difference within the comparison's tolerance
						// of rows per call (compare.MaxRowsPerCallDiff,
						// 1%: one order of a thousand left unshipped, seen
						// in CI at 05:10), which it rightly passes: not
						// what this checks; another try diverges further.
						continue
					}
					diverged = true
					if rep.Verdict.Status != compare.VerdictDiverged || len(rep.Divergence) == 0 {
						t.Errorf("synced vs off: verdict %q, divergence %+v", rep.Verdict.Status, rep.Divergence)
					}
					rowsDiffer := false
					for _, d := range rep.Divergence {
						if d.CandidateRowsPerCall != nil && *d.CandidateRowsPerCall < *d.BaselineRowsPerCall && strings.Contains(d.Query, "UPDATE orders") {
							rowsDiffer = true
						}
					}
					if !fk && !rowsDiffer {
						t.Errorf("without the foreign key, the UPDATE that found no order is not listed by rows per call: %+v", rep.Divergence)
					}
					break
				}
			}
			if !diverged {
				t.Logf("with sync off the replay kept the original's order in all %d tries (speeds %v): the race that sync prevents did not happen this time, so the divergence report was not checked", len(speeds), speeds)
			}
		})
	}
}

// TestSyncDeadlockWithRowLock: a log built so that a sync wait deadlocks
// with a row lock on the target. B's transaction updates row 1, then
// reads the table after A's UPDATE of the same row committed, so B's
// read depends on A's commit; the log says A's UPDATE was not blocked,
// but on the target it is blocked by B's row lock (the target diverged
// from the original: here, the log was written so). B waits for A's
// commit while A waits for B's lock: the server sees one lock wait and no
// deadlock, and a plain wait would last until the timeout. The replay
// finds the cycle, lets B's statement run, counts it, and finishes well
// within the timeout, at speed 1 and 0.
func TestSyncDeadlockWithRowLock(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	var l testLog
	ms := time.Millisecond
	a := l.session("postgres", "postgres", 0)
	b := l.session("postgres", "postgres", 0)
	b.query(1*ms, ms, "BEGIN")
	b.query(2*ms, ms, "UPDATE t SET v = v + 10 WHERE id = 1")
	// Quick in the log, it holds A up on the target so that B's
	// UPDATE comes first at speed 0 too.
	a.query(1*ms, ms, "SELECT pg_sleep(0.2)")
	a.query(5*ms, ms, "UPDATE t SET v = v + 1 WHERE id = 1")
	a.disconnect(100 * ms)
	b.query(30*ms, ms, "SELECT v FROM t WHERE id = 1")
	b.query(40*ms, ms, "COMMIT")
	b.disconnect(100 * ms)
	path := l.write(t)
	for _, speed := range []float64{1, 0} {
		pgclustertest.Exec(t, c, "postgres", "DROP TABLE IF EXISTS t; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
		start := time.Now()
		res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: speed})
		took := time.Since(start)
		t.Logf("speed %v: took %v; %s", speed, took, syncLine(res))
		if res.Sync.Deadlocks != 1 || res.Sync.Timeouts != 0 {
			t.Errorf("speed %v: %d deadlocks unblocked, %d timeouts; want 1 and 0", speed, res.Sync.Deadlocks, res.Sync.Timeouts)
		}
		if took >= DefaultSyncTimeout/2 {
			t.Errorf("speed %v: took %v, want well within the %v timeout", speed, took, DefaultSyncTimeout)
		}
		if res.Statements.Executed != 6 || res.Statements.Failed != 0 {
			t.Errorf("speed %v: statements %+v", speed, res.Statements)
		}
		var v string
		if err := queryRow(ctx, c.DSN("postgres"), "SELECT v FROM t WHERE id = 1", &v); err != nil || v != "11" {
			t.Errorf("speed %v: v = %s (%v), want both updates (11)", speed, v, err)
		}
	}
}

// queryRow reads one text value.
func queryRow(ctx context.Context, dsn, sql string, v *string) error {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	res := conn.ExecParams(ctx, sql, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return res.Err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return fmt.Errorf("%d rows", len(res.Rows))
	}
	*v = string(res.Rows[0][0])
	return nil
}

// TestSyncTimeout: a statement whose dependency is held up on the target
// for longer than SyncTimeout (a sleep that was quick in the original)
// runs after the timeout, and the give-up is counted.
func TestSyncTimeout(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, c, "postgres", "CREATE TABLE t (id int PRIMARY KEY, v int)")
	var l testLog
	ms := time.Millisecond
	a := l.session("postgres", "postgres", 0)
	b := l.session("postgres", "postgres", 0)
	a.query(1*ms, ms, "SELECT pg_sleep(1.5)")
	a.query(5*ms, ms, "INSERT INTO t VALUES (1, 0)")
	a.disconnect(100 * ms)
	b.query(30*ms, ms, "SELECT count(*) FROM t")
	b.disconnect(100 * ms)
	path := l.write(t)
	obs := &syncObserver{fp: fp("SELECT count(*) FROM t")}
	start := time.Now()
	res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 1, SyncTimeout: 300 * ms, Sink: obs})
	t.Logf("took %v; %s", time.Since(start), syncLine(res))
	if res.Sync.Timeouts != 1 || res.Sync.Waited != 1 || res.Sync.TimeoutSeconds != 0.3 {
		t.Errorf("sync %+v, want one wait given up at 0.3 s", res.Sync)
	}
	if res.SyncWait == nil || res.SyncWait.Max < 300 || res.SyncWait.Max > 1000 {
		t.Errorf("the wait took %+v ms, want about 300", res.SyncWait)
	}
	if obs.giveUps[SyncTimeout] != 1 {
		t.Errorf("observer saw give-ups %v", obs.giveUps)
	}
	// The wait is not schedule lag.
	if obs.wait < 300*ms || obs.lag > 100*ms {
		t.Errorf("the waiting statement: sync wait %v, lag %v; want >= 300 ms and the wait left out of the lag", obs.wait, obs.lag)
	}
}

// syncObserver counts give-ups, and keeps the lag and sync wait of the
// statements of one fingerprint.
type syncObserver struct {
	nopSink
	fp        string
	mu        sync.Mutex
	giveUps   map[string]int
	lag, wait time.Duration
}

func (o *syncObserver) Statement(s Sample) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s.Fingerprint == o.fp {
		o.lag, o.wait = max(o.lag, s.Lag), max(o.wait, s.SyncWait)
	}
	if s.SyncGiveUp != "" {
		if o.giveUps == nil {
			o.giveUps = map[string]int{}
		}
		o.giveUps[s.SyncGiveUp]++
	}
}

// TestSyncFilters: a dependency on a session the filters removed, or on
// a commit before the time window, is not waited for (it would never
// come); a dependency on a session inside them is.
func TestSyncFilters(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	var l testLog
	ms := time.Millisecond
	early := l.session("postgres", "postgres", 0)
	early.query(10*ms, ms, "INSERT INTO t VALUES (1, 0)")
	early.disconnect(20 * ms)
	batch := l.sessionApp("postgres", "postgres", "batch", 60*ms)
	batch.query(100*ms, ms, "SELECT pg_sleep(3)") // would hold its INSERT up, if replayed
	batch.query(110*ms, ms, "INSERT INTO t VALUES (2, 0)")
	batch.disconnect(200 * ms)
	inner := l.session("postgres", "postgres", 60*ms)
	inner.query(100*ms, ms, "SELECT pg_sleep(0.3)") // holds its INSERT up by 0.3 s
	inner.query(120*ms, ms, "INSERT INTO t VALUES (3, 0)")
	inner.disconnect(200 * ms)
	app := l.session("postgres", "postgres", 60*ms)
	app.query(150*ms, ms, "UPDATE t SET v = v + 1")
	app.disconnect(300 * ms)
	path := l.write(t)
	pgclustertest.Exec(t, c, "postgres", "CREATE TABLE t (id int PRIMARY KEY, v int)")
	obs := &syncObserver{fp: fp("UPDATE t SET v = v + 1")}
	start := time.Now()
	res := replaySelected(t, path, Options{Target: c.DSN("postgres"), Speed: 1, SyncTimeout: 5 * time.Second, Sink: obs},
		source.Selection{Start: logStart.Add(50 * ms).UnixMicro(), Applications: []string{"test"}})
	took := time.Since(start)
	t.Logf("took %v; %s; the UPDATE waited %v", took, syncLine(res), obs.wait)
	if res.Sync.Waited != 1 || res.Sync.Timeouts != 0 || obs.wait < 100*ms || obs.wait > 2*time.Second {
		t.Errorf("sync %+v, the UPDATE waited %v: want one wait, for the session inside the filters", res.Sync, obs.wait)
	}
	if res.Statements.Executed != 3 || res.Filtered.Sessions != 1 {
		t.Errorf("statements %+v, filtered %+v", res.Statements, res.Filtered)
	}
	var v string
	if err := queryRow(ctx, c.DSN("postgres"), "SELECT string_agg(id || ':' || v, ',') FROM t", &v); err != nil || v != "3:1" {
		t.Errorf("t = %q (%v), want 3:1", v, err)
	}
}

// orderObserver notes the order in which statements finished, and the
// most connections open at once.
type orderObserver struct {
	nopSink
	mu        sync.Mutex
	order     []string
	open, max int
}

func (o *orderObserver) Statement(s Sample) {
	o.mu.Lock()
	o.order = append(o.order, s.Fingerprint)
	o.mu.Unlock()
}

func (o *orderObserver) SessionOpened() {
	o.mu.Lock()
	o.open++
	o.max = max(o.max, o.open)
	o.mu.Unlock()
}

func (o *orderObserver) SessionClosed() {
	o.mu.Lock()
	o.open--
	o.mu.Unlock()
}

// TestSyncSpeed0Sessions: at speed 0, synchronized, a session that began
// after another ended in the log starts after it ended on the target (no
// more connections at once than the original), while a session that
// began beside a running one does not wait for that one's backlog, as
// the start barrier of an unsynchronized replay makes it do.
func TestSyncSpeed0Sessions(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ms := time.Millisecond
	var inTurn testLog
	a := inTurn.session("postgres", "postgres", 0)
	a.query(1*ms, ms, "SELECT pg_sleep(0.3)")
	a.disconnect(5 * ms)
	b := inTurn.session("postgres", "postgres", 10*ms)
	b.query(20*ms, ms, "SELECT 1")
	b.disconnect(30 * ms)
	// A third in turn: its barrier stands on the second's (see
	// TestSpeed0BarrierChain).
	d := inTurn.session("postgres", "postgres", 40*ms)
	d.query(45*ms, ms, "SELECT 3")
	d.disconnect(50 * ms)
	obs := &orderObserver{}
	replayFile(t, inTurn.write(t), Options{Target: c.DSN("postgres"), Speed: 0, Sink: obs})
	if want := []string{fp("SELECT pg_sleep(0.3)"), fp("SELECT 1"), fp("SELECT 3")}; obs.max != 1 || !slices.Equal(obs.order, want) {
		t.Errorf("sessions in turn: %d open at once, order %v; want 1, %v", obs.max, obs.order, want)
	}

	var beside testLog
	a = beside.session("postgres", "postgres", 0)
	a.query(1*ms, ms, "SELECT pg_sleep(0.3)")
	a.query(50*ms, ms, "SELECT 2")
	a.disconnect(100 * ms)
	b = beside.session("postgres", "postgres", 10*ms)
	b.query(20*ms, ms, "SELECT 1")
	b.disconnect(30 * ms)
	path := beside.write(t)
	for _, tc := range []struct {
		mode  syncdep.Mode
		first string
	}{{syncdep.Object, "SELECT 1"}, {syncdep.Off, "SELECT pg_sleep(0.3)"}} {
		obs := &orderObserver{}
		replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 0, Sync: tc.mode, Sink: obs})
		if len(obs.order) != 3 || obs.order[0] != fp(tc.first) {
			t.Errorf("sync %v: sessions side by side finished in order %v, want %q first", tc.mode, obs.order, tc.first)
		}
	}
}

// TestSpeed0BarrierChain: a start barrier stands on the previous new
// session's, and still waits for what that one did not cover (three
// sessions in turn: TestSyncSpeed0Sessions). A session begun after one
// ended and beside another that had not waits for the first through the
// second's barrier. Unsynchronized, a
// session that got another event after the second session's barrier was
// taken holds the third back until that event completed too.
func TestSpeed0BarrierChain(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ms := time.Millisecond
	var a, b, d *testSession
	var obs *orderObserver
	// b has not ended when c begins: c waits for a through b's barrier.
	var open testLog
	a = open.session("postgres", "postgres", 0)
	a.query(1*ms, ms, "SELECT pg_sleep(0.3)")
	a.disconnect(5 * ms)
	b = open.session("postgres", "postgres", 10*ms)
	b.query(20*ms, ms, "SELECT 1")
	d = open.session("postgres", "postgres", 40*ms)
	d.query(45*ms, ms, "SELECT 3")
	d.disconnect(50 * ms)
	b.disconnect(100 * ms)
	obs = &orderObserver{}
	replayFile(t, open.write(t), Options{Target: c.DSN("postgres"), Speed: 0, Sink: obs})
	if len(obs.order) != 3 || obs.order[0] != fp("SELECT pg_sleep(0.3)") {
		t.Errorf("a session begun after another ended, beside a third: finished in order %v, want the sleep first", obs.order)
	}

	var later testLog
	a = later.session("postgres", "postgres", 0)
	a.query(1*ms, ms, "SELECT pg_sleep(0.2)")
	b = later.session("postgres", "postgres", 10*ms)
	b.query(20*ms, ms, "SELECT 1")
	b.disconnect(30 * ms)
	a.query(50*ms, ms, "SELECT pg_sleep(0.1)")
	d = later.session("postgres", "postgres", 60*ms)
	d.query(70*ms, ms, "SELECT 3")
	d.disconnect(80 * ms)
	a.disconnect(100 * ms)
	obs = &orderObserver{}
	replayFile(t, later.write(t), Options{Target: c.DSN("postgres"), Speed: 0, Sync: syncdep.Off, Sink: obs})
	if len(obs.order) != 4 || obs.order[3] != fp("SELECT 3") {
		t.Errorf("sync off: finished in order %v, want %q last", obs.order, "SELECT 3")
	}
}

// TestSyncDDLAfterReads: DDL waits for the statements of other sessions
// that ended before it in the log, reads included, not only for commits:
// a DROP TABLE logged after another session's last reads of the table
// (that session still connected) does not run before them on the target,
// where they are held up by a sleep that was quick in the original.
func TestSyncDDLAfterReads(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	var l testLog
	ms := time.Millisecond
	reader := l.session("postgres", "postgres", 0)
	reader.query(1*ms, ms, "SELECT pg_sleep(0.3)")
	for i := range 20 {
		reader.query(time.Duration(10+i)*ms, ms, "SELECT count(*) FROM t")
	}
	reader.disconnect(500 * ms)
	dropper := l.session("postgres", "postgres", 100*ms)
	dropper.query(200*ms, ms, "DROP TABLE t")
	dropper.disconnect(300 * ms)
	path := l.write(t)
	for _, speed := range []float64{0, 1} {
		pgclustertest.Exec(t, c, "postgres", "DROP TABLE IF EXISTS t; CREATE TABLE t (id int)")
		res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: speed})
		t.Logf("speed %v: %s", speed, syncLine(res))
		if res.Statements.Failed != 0 || res.Statements.Executed != 22 {
			t.Errorf("speed %v: statements %+v, errors %v", speed, res.Statements, res.ErrorsBySQLState)
		}
	}
}
