package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// The orders workload (as package replay's sync tests run it): producers
// insert orders and commit; consumers, in other sessions, ship each
// order once its producer says it committed: a shipment that references
// the order (a foreign key) and an update of the order. Replayed with a
// consumer ahead of its producer, the shipment fails (23503) and the
// order stays new.
const (
	shardOrdersDB     = "shop"
	shardOrdersSchema = `CREATE TABLE orders (id bigint PRIMARY KEY, qty int NOT NULL, state text NOT NULL DEFAULT 'new');
		CREATE TABLE shipments (order_id bigint PRIMARY KEY REFERENCES orders (id), carrier text NOT NULL)`
)

// ordersLog runs the workload on a cluster logging every statement and
// returns its log, its final state and each session's application
// (producer-N, consumer-N) by session id.
func ordersLog(t testing.TB, producers, consumers, perProducer int, pace time.Duration) (log, state string, apps map[string]string) {
	t.Helper()
	cp := newCapture(t, shardOrdersDB, shardOrdersSchema)
	runOrders(t, cp.connect, execArgs, producers, consumers, perProducer, pace)
	state = shardOrdersState(t, cp.quietDSN())
	if want := fmt.Sprintf("%d shipped", producers*perProducer); !strings.HasPrefix(state, want) {
		t.Fatalf("the original did not ship every order: %.80s", state)
	}
	log, apps = cp.stop(`(?:producer|consumer)-\d+`, producers+consumers)
	return log, state, apps
}

// runOrders runs the orders workload in sessions that connect opens,
// named producer-N and consumer-N, and fails t if a statement fails. The
// producers run their statements with execArgs, the consumers with
// consume (execArgs, or another way to send the same).
func runOrders(t testing.TB, connect func(app string) *pgconn.PgConn, consume func(*pgconn.PgConn, string, ...string) error,
	producers, consumers, perProducer int, pace time.Duration) {
	t.Helper()
	ctx := context.Background()
	exec := execArgs
	ready := make(chan int64, producers*perProducer)
	errs := make(chan error, producers+consumers)
	var pwg, cwg sync.WaitGroup
	for p := range producers {
		conn := connect(fmt.Sprintf("producer-%d", p))
		pwg.Go(func() {
			defer conn.Close(ctx)
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for k := range perProducer {
				<-tick.C
				id := int64((p+1)*1_000_000 + k)
				err := exec(conn, "BEGIN")
				if err == nil {
					err = exec(conn, "INSERT INTO orders (id, qty) VALUES ($1, $2)", strconv.FormatInt(id, 10), strconv.Itoa(k%7+1))
				}
				if err == nil {
					err = exec(conn, "COMMIT")
				}
				if err != nil {
					errs <- fmt.Errorf("producer %d: %w", p, err)
					return
				}
				ready <- id
			}
		})
	}
	for i := range consumers {
		conn := connect(fmt.Sprintf("consumer-%d", i))
		cwg.Go(func() {
			defer conn.Close(ctx)
			for id := range ready {
				arg := strconv.FormatInt(id, 10)
				err := consume(conn, "BEGIN")
				if err == nil {
					err = consume(conn, "INSERT INTO shipments (order_id, carrier) VALUES ($1, 'post')", arg)
				}
				if err == nil {
					err = consume(conn, "UPDATE orders SET state = 'shipped' WHERE id = $1", arg)
				}
				if err == nil {
					err = consume(conn, "COMMIT")
				}
				if err != nil {
					errs <- fmt.Errorf("consumer %d: %w", i, err)
					return
				}
			}
		})
	}
	pwg.Wait()
	close(ready)
	waitErrs(t, &cwg, errs)
}

// capture is a new cluster logging every statement, with a database and
// its schema, for a workload whose sessions are named by their
// application.
type capture struct {
	t  testing.TB
	c  *pgcluster.Cluster
	db string
}

func newCapture(t testing.TB, db, schema string) *capture {
	t.Helper()
	return &capture{t: t, c: pgclustertest.StartLogged(t, workload.LogSettings(), db, schema), db: db}
}

// connect opens a session of the workload, named app.
func (cp *capture) connect(app string) *pgconn.PgConn {
	conn := pgclustertest.PgConn(context.Background(), cp.t, cp.c.DSN(cp.db)+" application_name="+app)
	return conn
}

// quietDSN reaches the database without logging, to read its state.
func (cp *capture) quietDSN() string {
	return cp.c.DSN(cp.db) + " options='-c log_min_duration_statement=-1'"
}

// stop stops the server and returns its log and the application of each
// session by session id; apps is the pattern of the applications, n how
// many sessions the workload ran.
func (cp *capture) stop(apps string, n int) (log string, byID map[string]string) {
	t := cp.t
	t.Helper()
	log = pgclustertest.StoppedLog(t, cp.c)
	b := readFile(t, log)
	// workload.LogLinePrefix: "%m [%p] %q%u@%d/%a %c %e ".
	line := regexp.MustCompile(`(?m)\] \S+@\S+/(` + apps + `) (\S+) `)
	byID = map[string]string{}
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		byID[m[2]] = m[1]
	}
	if len(byID) != n {
		t.Fatalf("sessions in the log: %v", byID)
	}
	return log, byID
}

// execArgs runs sql on conn: with the simple protocol without args, the
// extended one with them.
func execArgs(conn *pgconn.PgConn, sql string, args ...string) error {
	ctx := context.Background()
	if len(args) == 0 {
		_, err := conn.Exec(ctx, sql).ReadAll()
		return err
	}
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return conn.ExecParams(ctx, sql, bs, nil, nil, nil).Read().Err
}

// checkSyncedOrders checks m, the merged result of the orders workload
// replayed in shards onto target with --sync object: nothing failed only
// on the target, target's final state is the original's (want), and the
// shards waited on one another with no timeout and no shard lost.
func checkSyncedOrders(t *testing.T, m *results.Result, target *pgcluster.Cluster, want string) {
	t.Helper()
	if o := m.Outcomes; o.FailedOnlyOnTarget != 0 || o.Ran == 0 {
		t.Errorf("outcomes %+v: want none failed only on the target", o)
	}
	if got := shardOrdersState(t, target.DSN(shardOrdersDB)); got != want {
		t.Errorf("final state differs from the original's:\n got %.120s\nwant %.120s", got, want)
	}
	if s := m.Sync; s == nil || s.Scope != results.SyncAcrossShards || s.Waited == 0 || s.Timeouts != 0 || s.ShardLost != 0 {
		t.Errorf("sync %+v", s)
	}
}

// shardOrdersState is the tables' content as one text: the orders by
// state, then every order and shipment.
func shardOrdersState(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn := pgclustertest.PgConn(ctx, t, dsn)
	defer conn.Close(ctx)
	q := `SELECT (SELECT coalesce(string_agg(n || ' ' || state, ', ' ORDER BY state), '') FROM (SELECT state, count(*) n FROM orders GROUP BY state) s)
	|| E'\n' || coalesce((SELECT string_agg(id || ':' || qty || ':' || state, ',' ORDER BY id) FROM orders), '')
	|| E'\n' || coalesce((SELECT string_agg(order_id || ':' || carrier, ',' ORDER BY order_id) FROM shipments), '')`
	res := conn.ExecParams(ctx, q, nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 {
		t.Fatalf("state: %v", res.Err)
	}
	return string(res.Rows[0][0])
}

// freshShop makes the target's database anew, with the schema.
func freshShop(t testing.TB, c *pgcluster.Cluster) {
	t.Helper()
	for _, step := range [][2]string{{"postgres", "DROP DATABASE IF EXISTS " + shardOrdersDB + " WITH (FORCE)"},
		{"postgres", "CREATE DATABASE " + shardOrdersDB}, {shardOrdersDB, shardOrdersSchema}} {
		mustExec(t, c, step[0], step[1])
	}
}

// forcedPlan plans the log into 3 shards with the producers in shards 0
// and 1 (by their number's parity) and the consumers in shard 2: every shipment waits for a commit
// of another shard.
func forcedPlan(t testing.TB, dir, log string, apps map[string]string) string {
	t.Helper()
	return planBy(t, dir, log, 3, apps, func(app string) int {
		if n, ok := strings.CutPrefix(app, "producer-"); ok {
			k, _ := strconv.Atoi(n)
			return k % 2
		}
		return 2
	})
}

// planBy plans the log into n shards, each session in the shard shardOf
// gives its application, and checks that dependencies cross shards.
func planBy(t testing.TB, dir, log string, n int, apps map[string]string, shardOf func(app string) int) string {
	t.Helper()
	plan := filepath.Join(dir, "plan.json")
	args := []string{"plan", "--shards", strconv.Itoa(n), "--out", plan}
	for sid, app := range apps {
		args = append(args, "--force", fmt.Sprintf("%s=%d", sid, shardOf(app)))
	}
	if code, out := runCmd(t, append(args, log)...); code != ExitOK {
		t.Fatalf("plan exited %d:\n%s", code, out)
	}
	p := readPlan(t, plan)
	if p.Forced != len(apps) || p.Dependencies.Cross == 0 {
		t.Fatalf("plan: %d forced, dependencies %+v", p.Forced, p.Dependencies)
	}
	return plan
}

// runAndMerge runs n shard processes of a replay with args, each of
// which must exit ExitOK, and returns their merged result.
func runAndMerge(t testing.TB, n int, dir string, args ...string) *results.Result {
	t.Helper()
	ps := runShards(t, n, dir, args...)
	for _, p := range ps {
		if p.code != ExitOK {
			t.Errorf("shard %d exited %d:\n%s", p.k, p.code, p.out.String())
		}
	}
	code, out, m := mergeShards(t, dir, ps)
	if code != ExitOK {
		t.Fatalf("merge exited %d:\n%s", code, out)
	}
	return m
}

// coordAndTarget starts the two clusters of a sharded replay: one with
// an empty database for the coordination (its DSN is returned) and the
// target.
func coordAndTarget(t testing.TB) (coordDSN string, target *pgcluster.Cluster) {
	t.Helper()
	return startCoord(t), pgclustertest.StartT(t, pgcluster.Options{})
}

// TestShardsDependentWorkload is issue 22's second acceptance test: the
// dependent producer/consumer workload, replayed in 3 shard processes
// whose plan puts the producers and the consumers in different shards,
// synchronized across them through the coordination database, against
// an identical target: no statement fails only on the target, and the
// final tables equal the original's, at speed 1 and at speed 0.
func TestShardsDependentWorkload(t *testing.T) {
	// A functional case (issue 44): it holds that the merge has every
	// shard's lag, counted; the lag's timing target is BenchmarkShardsLag's.
	slowCase(t, 12*time.Second)
	log, want, apps := ordersLog(t, 2, 2, 30, 20*time.Millisecond)
	dir := t.TempDir()
	plan := forcedPlan(t, dir, log, apps)
	coord, target := coordAndTarget(t)
	for _, speed := range []string{"1", "0"} {
		t.Run("speed"+speed, func(t *testing.T) {
			if speed == "0" {
				// The second case of the capability, at speed 0.
				longCase(t)
			}
			freshShop(t, target)
			d := filepath.Join(dir, speed)
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			m := runAndMerge(t, 3, d, "--shards", "3", "--plan", plan, "--coord-dsn", coord, "--run-id", "orders-"+speed,
				"--target", target.DSN("postgres"), "--speed", speed, "--sync", "object", "--findings=false", log)
			checkSyncedOrders(t, m, target, want)
			t.Logf("speed %s: %s", speed, syncSummary(m))
			if speed != "1" {
				return
			}
			// The merged lag against one process's on the same log and
			// an identical target. Its p99 is a timing: on a shared
			// 2-core machine it is the other processes' (under make
			// test-busy's CPU loops, 840 and 1,575 ms merged against
			// about 100 ms single, twice in a row, where a quiet machine
			// gives 3.5 to 57 ms), so its target (within 2x, and 20 ms)
			// is BenchmarkShardsLag's, under the timing lock. What the
			// test holds is that the merge has every shard's lag: one
			// per statement replayed, as many as the single process.
			freshShop(t, target)
			code, out, one := runReplay(t, "--target", target.DSN("postgres"), "--speed", "1", "--sync", "object", "--findings=false", log)
			if code != ExitOK || one == nil || one.Lag == nil || m.Lag == nil {
				t.Fatalf("single replay exited %d:\n%s", code, out)
			}
			t.Logf("lag p99: single process %.2f ms, 3 shards merged %.2f ms", one.Lag.P99, m.Lag.P99)
			if m.Lag.Count != one.Lag.Count {
				t.Errorf("the merged lag counts %d statements, the single process's %d: a shard's lags are missing", m.Lag.Count, one.Lag.Count)
			}
		})
	}
}

func syncSummary(m *results.Result) string {
	s, w := m.Sync, m.SyncWait
	if s == nil {
		s = &results.Sync{}
	}
	if w == nil {
		w = &results.Distribution{}
	}
	line := fmt.Sprintf("%d statements, %d waited (p50 %.2f ms, p99 %.2f ms), %d deadlocks", m.Statements.Total, s.Waited, w.P50, w.P99, s.Deadlocks)
	if m.Lag != nil {
		line += fmt.Sprintf("; lag p50 %.2f p99 %.2f ms", m.Lag.P50, m.Lag.P99)
	}
	return line
}

// TestShardsKilled: one shard of three is killed in the middle of a
// synchronized replay. The others go on, their waits for its commits
// given up under their own reason, and finish within the sync timeout of
// the log's end; the merge of what they wrote is marked incomplete and
// names the killed shard.
func TestShardsKilled(t *testing.T) {
	longCase(t)
	ctx := context.Background()
	log, _, apps := ordersLog(t, 2, 2, 100, 20*time.Millisecond)
	dir := t.TempDir()
	plan := forcedPlan(t, dir, log, apps)
	coord, target := coordAndTarget(t)
	freshShop(t, target)
	const syncTimeout = 5 * time.Second
	args := []string{"--shards", "3", "--plan", plan, "--coord-dsn", coord, "--run-id", "killed",
		"--target", target.DSN("postgres"), "--speed", "1", "--sync-timeout", syncTimeout.String(), "--findings=false", log}
	ps := make([]*shardProc, 3)
	for k := range ps {
		ps[k] = startShard(t, k, dir, args...)
	}
	// Kill shard 1 (a producer) a second into the replay, by the start
	// the rendezvous fixed.
	conn := pgclustertest.PgConn(ctx, t, coord)
	defer conn.Close(ctx)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := conn.ExecParams(ctx, "SELECT clock_timestamp() > start_at + interval '1 second' FROM pgrehearse_coord.runs WHERE run = 'killed'", nil, nil, nil, nil).Read()
		if r.Err == nil && len(r.Rows) == 1 && string(r.Rows[0][0]) == "t" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shards did not start:\n%s\n%s\n%s", ps[0].out.String(), ps[1].out.String(), ps[2].out.String())
		}
		select {
		case <-ps[1].done:
			t.Fatalf("shard 1 ended before it was killed:\n%s", ps[1].out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := ps[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-ps[1].done
	// The log lasts 2 s: what remains of it, then at most a sync
	// timeout, with room for a loaded machine.
	for _, k := range []int{0, 2} {
		ps[k].wait(t, 2*time.Second+syncTimeout+30*time.Second)
		t.Logf("shard %d ended %v after the kill, exit %d", k, time.Since(killed).Round(time.Millisecond), ps[k].code)
		if _, err := os.Stat(ps[k].json); err != nil {
			t.Fatalf("shard %d wrote no result (exit %d):\n%s", k, ps[k].code, ps[k].out.String())
		}
	}
	code, out, m := mergeShards(t, dir, ps)
	if code != ExitIncomplete || !m.IncompleteBecause(results.IncompleteMissingParts) {
		t.Fatalf("merge exited %d, incomplete %v:\n%s", code, m.IncompleteReasons, out)
	}
	if !strings.Contains(out, "shard 1: no result") || !strings.Contains(strings.Join(m.Incomplete, " "), "shard 1") {
		t.Errorf("the merge does not name the killed shard:\n%s\n%v", out, m.Incomplete)
	}
	// The consumers' waits for the killed producer's commits ended as
	// the shard's loss, not at the timeout. (Shard 0's producer inserts
	// other orders, ordered by row: it waits for shard 1 only where two
	// keys share a bucket, so it may or may not have lost a wait.)
	f := m.ShardFailures()
	if len(f) != 1 || f[0].Shard != 1 || !f[0].Missing || !slices.Contains(f[0].LostBy, 2) {
		t.Errorf("shard failures %+v", f)
	}
	if s := m.Sync; s == nil || s.ShardLost == 0 {
		t.Errorf("sync %+v: no wait gave up for the lost shard", s)
	}
	t.Logf("merged: %s", syncSummary(m))
}

// mixLog runs the mixing workload (workload.RunMix, updates only, on 8
// rows) in sessions mix-0 ... and returns its log, the final values and
// the sessions' applications.
func mixLog(t testing.TB, sessions, transactions int) (log, state string, apps map[string]string) {
	t.Helper()
	cp := newCapture(t, workload.MixDatabase, workload.MixSchema)
	if err := workload.RunMix(context.Background(), cp.c.DSN(workload.MixDatabase), workload.MixOptions{Sessions: sessions, Transactions: transactions, Rows: 8, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	state = mixValues(t, cp.quietDSN())
	log, apps = cp.stop(`mix-\d+`, sessions)
	return log, state, apps
}

func mixValues(t testing.TB, dsn string) string {
	t.Helper()
	v, err := workload.MixValues(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestShardsRowLockOrder: the mixing workload's sessions split over 2
// shards, synchronized through the coordination database, end with the
// original's values: a write of a row waits for the other shard's last
// write of it inside its block (its parameters cross the shards with
// it), so the rows' lock order holds across shards as in one process.
func TestShardsRowLockOrder(t *testing.T) {
	longCase(t)
	log, want, apps := mixLog(t, 4, 120)
	dir := t.TempDir()
	plan := planBy(t, dir, log, 2, apps, func(app string) int {
		k, _ := strconv.Atoi(strings.TrimPrefix(app, "mix-"))
		return k % 2
	})
	coord, target := coordAndTarget(t)
	for run := range 2 {
		for _, step := range [][2]string{{"postgres", "DROP DATABASE IF EXISTS " + workload.MixDatabase + " WITH (FORCE)"},
			{"postgres", "CREATE DATABASE " + workload.MixDatabase}, {workload.MixDatabase, workload.MixSchema}} {
			mustExec(t, target, step[0], step[1])
		}
		d := filepath.Join(dir, strconv.Itoa(run))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		m := runAndMerge(t, 2, d, "--shards", "2", "--plan", plan, "--coord-dsn", coord, "--run-id", fmt.Sprintf("mix-%d", run),
			"--target", target.DSN("postgres"), "--speed", "0", "--sync", "object", "--findings=false", log)
		// No wait given up on a deadlock either: kept in the original's
		// lock order, the replay meets none.
		if s := m.Sync; s == nil || s.Scope != results.SyncAcrossShards || s.ByRow == 0 || s.KeyNotLogged != 0 || s.Deadlocks != 0 {
			t.Errorf("sync %+v", s)
		}
		if got := mixValues(t, target.DSN(workload.MixDatabase)); got != want {
			t.Errorf("run %d: values differ from the original's:\n got %s\nwant %s", run, got, want)
		}
		t.Logf("run %d: %s", run, syncSummary(m))
	}
}
