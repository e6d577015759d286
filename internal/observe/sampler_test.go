package observe

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// The building blocks a sweep step uses, against pgbench: the reader's
// counts move by exactly pgbench's calls, and the wait sampler counts the
// database's backends, idle ones included, and nothing of other
// databases.
func TestWaitSamplerAndStatementsReader(t *testing.T) {
	functionalCase(t)
	c := startPgbench(t, pgssSettings(nil))
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres", "CREATE DATABASE other")
	connect := func(db string) *pgx.Conn {
		conn := pgclustertest.Connect(ctx, t, c.DSN(db))
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	connect("postgres") // idle here: Client/ClientRead in every round
	conn := connect("postgres")
	// A session of the other database waits on a lock all along: its
	// Lock wait must not be counted.
	pgclustertest.Exec(t, c, "other", "CREATE TABLE t (a int)")
	holder, waiter := connect("other"), connect("other")
	if _, err := holder.Exec(ctx, "BEGIN; LOCK TABLE t"); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "BEGIN; LOCK TABLE t; COMMIT")
		waited <- err
	}()
	defer func() {
		if _, err := holder.Exec(ctx, "COMMIT"); err != nil {
			t.Error(err)
		}
		if err := <-waited; err != nil {
			t.Error(err)
		}
	}()
	waitForOne(ctx, t, conn, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'", "the other database's session never waited on the lock")

	if _, err := NewStatementsReader(ctx, connect("other")); err == nil {
		t.Error("a reader of a database without pg_stat_statements: want an error")
	}
	r, err := NewStatementsReader(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	const clients, perClient = 2, 300
	before, after, waits, rounds := window(t, r, conn, func() { pgbench(t, c, "-n", "-S", "-c", "2", "-t", "300") })

	var total, idle int64
	for _, w := range waits {
		total += w.Samples
		if w.Type == "" || w.Event == "" || (w.Type == "CPU") != (w.Event == "running") {
			t.Errorf("wait %+v", w)
		}
		if w.Type == "Client" && w.Event == "ClientRead" {
			idle = w.Samples
		}
		if w.Type == "Lock" {
			t.Errorf("another database's lock wait is counted: %+v", w)
		}
	}
	if idle < rounds || total > rounds*(clients+1) {
		t.Errorf("%d rounds: %d Client/ClientRead samples of %d, want one idle session each round and at most %d backends: %+v",
			rounds, idle, total, clients+1, waits)
	}

	ids := make([]int64, 0, len(after))
	for id := range after {
		ids = append(ids, id)
	}
	texts, err := r.Texts(ctx, ids, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var selectID int64
	for id, text := range texts {
		if text == "SELECT abalance FROM pgbench_accounts WHERE aid = $1" {
			selectID = id
		}
	}
	a, b := after[selectID], before[selectID]
	if selectID == 0 || a.Calls-b.Calls != clients*perClient || a.Plans-b.Plans != clients*perClient {
		t.Errorf("select-only's query %d: %+v then %+v, want %d more calls and plans", selectID, b, a, clients*perClient)
	}
	if cut, _ := r.Texts(ctx, []int64{selectID}, 6); cut[selectID] != "SELECT" {
		t.Errorf("text cut to 6 characters: %q", cut[selectID])
	}
}

// OwnQueryIDs are exactly the ids whose calls move between two Counts
// when nothing but a WaitSampler runs on the reader's connection, which
// pg_stat_statements tracks (the session does not set track = none).
// Where the server shows no query ids, an error says why; where it
// computes none, pg_stat_statements counts nothing to leave out.
func TestOwnQueryIDs(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: pgssSettings(nil)})
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	r, err := NewStatementsReader(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	before, after, _, _ := window(t, r, conn, func() {})
	own, err := r.OwnQueryIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	moved := map[int64]bool{}
	for id, a := range after {
		if a.Calls > before[id].Calls {
			moved[id] = true
		}
	}
	if !maps.Equal(own, moved) {
		t.Errorf("own query ids %v, want those whose calls moved: %v", own, moved)
	}

	for _, tc := range []struct {
		compute string
		fails   bool
	}{{"regress", true}, {"off", false}} {
		if _, err := conn.Exec(ctx, "SET compute_query_id = "+tc.compute); err != nil {
			t.Fatal(err)
		}
		own, err := r.OwnQueryIDs(ctx)
		if tc.fails && (err == nil || !strings.Contains(err.Error(), "compute_query_id = "+tc.compute)) {
			t.Errorf("compute_query_id = %s: %v, %v; want an error naming it", tc.compute, own, err)
		}
		if !tc.fails && (err != nil || len(own) != 0) {
			t.Errorf("compute_query_id = %s: %v, %v; want none", tc.compute, own, err)
		}
	}
}

// window measures as a sweep's step does: r's counts before and after,
// and a WaitSampler on r's connection conn in between, while during
// runs. It returns the counts, and the sampler's waits and rounds (at
// least one).
func window(t *testing.T, r *StatementsReader, conn *pgx.Conn, during func()) (before, after map[int64]QueryCounts, waits []WaitCount, rounds int64) {
	t.Helper()
	ctx := context.Background()
	before, err := r.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := StartWaitSampler(ctx, conn, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	during()
	if waits, rounds, err = ws.Stop(); err != nil || rounds < 1 {
		t.Fatalf("%d sampling rounds, %v", rounds, err)
	}
	if after, err = r.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	return before, after, waits, rounds
}

func TestCutChars(t *testing.T) {
	functionalCase(t)
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"SELECT 1", 6, "SELECT"},
		{"SELECT 1", 100, "SELECT 1"},
		{"é€x", 2, "é€"},
		{"abc", 0, ""},
	} {
		if got := cutChars(tc.s, tc.n); got != tc.want {
			t.Errorf("cutChars(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// Stop while a sample is in flight: a sample is held in flight by a lock
// on pg_authid, which pg_stat_activity joins.
//   - Released within stopWait, Stop waits for it and leaves the
//     connection usable: a sweep step reads pg_stat_statements on it
//     next. Before the fix, Stop cancelled the sample's query, pgx closed
//     the connection, and the step's hot queries came out empty, now and
//     then, under load.
//   - Held all along, the sample is cut stopWait after Stop, which says
//     so: a frozen target cannot hang a sweep's step.
func TestWaitSamplerStop(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	// sampling starts a sampler and returns it with its connection once
	// its sample waits on the lock, and the lock's transaction.
	sampling := func(t *testing.T) (*pgx.Conn, *WaitSampler, pgx.Tx) {
		connect := func() *pgx.Conn {
			conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
			t.Cleanup(func() { conn.Close(context.Background()) })
			return conn
		}
		conn, holder, watcher := connect(), connect(), connect()
		ws, err := StartWaitSampler(ctx, conn, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := holder.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		if _, err := tx.Exec(ctx, "LOCK TABLE pg_authid IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		waitOnLock(t, watcher, conn.PgConn().PID())
		return conn, ws, tx
	}

	t.Run("released", func(t *testing.T) {
		conn, ws, tx := sampling(t)
		stopped := make(chan error, 1)
		go func() {
			_, _, err := ws.Stop()
			stopped <- err
		}()
		// Stop must wait for the sample; a Stop that returns while the
		// lock is held has given up on it.
		select {
		case err := <-stopped:
			t.Errorf("Stop returned while its sample waited on a lock (err %v)", err)
			stopped <- err
		case <-time.After(200 * time.Millisecond):
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-stopped; err != nil {
			t.Errorf("Stop: %v", err)
		}
		if err := conn.Ping(ctx); err != nil {
			t.Errorf("the connection after Stop: %v", err)
		}
	})
	t.Run("held", func(t *testing.T) {
		conn, ws, _ := sampling(t)
		_, _, err := ws.Stop()
		if err == nil || !strings.Contains(err.Error(), "its connection was cut") {
			t.Errorf("Stop: %v, want the cut said", err)
		}
		if !conn.IsClosed() {
			t.Error("the sampler's connection is still open")
		}
	})
}

// waitOnLock polls until the backend pid waits on a lock.
func waitOnLock(t *testing.T, watcher *pgx.Conn, pid uint32) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting bool
		// pg_stat_get_activity, not the view: the view joins pg_authid.
		if err := watcher.QueryRow(context.Background(), "SELECT count(*) > 0 FROM pg_stat_get_activity($1) WHERE wait_event_type = 'Lock'", pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sampler's query never waited on the lock")
		}
	}
}

// waitForOne polls query, a count, on conn until it is 1; never says
// what did not happen when 30 s pass first.
func waitForOne(ctx context.Context, t *testing.T, conn *pgx.Conn, query, never string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(never)
		}
	}
}
