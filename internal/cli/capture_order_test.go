package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// orderSchema is crossSessionOrder's: accounts whose updates
// do not commute (v*2+1 then v*3+1 is not v*3+1 then v*2+1), jobs a
// notifier inserts, and steps a session leaves prepared.
const orderSchema = `CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO acct SELECT g, 0 FROM generate_series(1, 3) g;
CREATE TABLE jobs (id int PRIMARY KEY, payload text NOT NULL);
CREATE TABLE steps (id int PRIMARY KEY, note text NOT NULL)`

// crossSessionOrder is issue 59's third acceptance case, on the cluster
// of TestCaptureAnswerDivergence (started with max_prepared_transactions):
// pgx clients through the proxy with two-phase commit across sessions
// (one prepares, another commits), an advisory lock one session holds
// while another waits for it and a third's try fails, and LISTEN/NOTIFY
// (the listener reads the job its notification announced); one session
// also leaves a transaction prepared and an advisory lock held as it
// ends. Replayed at speed 0 onto a copy of the start with --cleanup:
// exit 0, no statement failing only on the target, no answer differing
// (the try answers false again), no sync wait given up (without the
// advisory order, b took the lock first and the replay ended DEGRADED,
// 3 of 3 runs), the final tables equal, the leftovers named and nothing
// left prepared.
func crossSessionOrder(t *testing.T, c *pgcluster.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, db := range []string{"ord_orig", "ord_copy", "ord_load"} {
		mustExec(t, c, "postgres", "CREATE DATABASE "+db)
		mustExec(t, c, db, orderSchema)
	}
	rc := startCapture(t, c.DSN("ord_orig"))
	runOrderWorkload(ctx, t, c, rc)
	rc.stopOK(t)

	code, text, res := runReplay(t, "--target", c.DSN("ord_copy"), "--database-map", "ord_orig=ord_copy", "--speed", "0", "--findings=false", "--observe=false", "--cleanup", rc.dir)
	t.Logf("replay:\n%s", text)
	if res == nil {
		t.Fatalf("no result:\n%s", text)
	}
	o := res.Outcomes
	if code != ExitOK || o.FailedOnlyOnTarget != 0 || o.AnswerDiffers != 0 || o.AnswerDiffersUnexplained != 0 {
		t.Errorf("exit %d, %d statements failed only on the target, %d answers differ (%d unexplained): want exit 0 and none", code,
			o.FailedOnlyOnTarget, o.AnswerDiffers, o.AnswerDiffersUnexplained)
	}
	if st := res.Sync; st == nil || st.Timeouts != 0 || st.Deadlocks != 0 || len(res.Degraded) > 0 {
		t.Errorf("sync %+v, degraded %v: want no wait given up", st, res.Degraded)
	}
	// The failed try was compared, and answered false again.
	try := fingerprint.Compute("SELECT pg_try_advisory_lock($1)")[0].Fingerprint
	for _, q := range res.Queries {
		if q.Fingerprint == try && (q.Answered != 1 || len(q.AnswerDiffers) > 0) {
			t.Errorf("the try: %d calls compared, differing %v; want 1 alike", q.Answered, q.AnswerDiffers)
		}
	}
	for _, q := range []string{"SELECT id, v FROM acct ORDER BY id", "SELECT id, payload FROM jobs ORDER BY id", "SELECT id, note FROM steps ORDER BY id"} {
		if a, b := rowsOf(ctx, t, c, "ord_orig", q), rowsOf(ctx, t, c, "ord_copy", q); a != b {
			t.Errorf("%s: orig %s, copy %s", q, a, b)
		}
	}
	// What the workload left: named, the prepared one rolled back.
	l := res.Leftovers
	if l == nil || len(l.Prepared) != 1 || l.Prepared[0].Gid != "gx_left" || l.Prepared[0].Database != "ord_copy" ||
		l.Prepared[0].Reason != results.LeftoverStillPrepared || l.Prepared[0].Cleanup != results.LeftoverRolledBack {
		t.Errorf("leftovers %+v: want gx_left in copy, rolled back", l)
	}
	if l == nil || len(l.AdvisoryLocks) != 1 || l.AdvisoryLocks[0].Key != "7" || l.AdvisoryLocks[0].Database != "ord_copy" ||
		l.AdvisoryLocks[0].Reason != results.LeftoverHeldAtSessionEnd {
		t.Errorf("leftovers %+v: want the advisory lock 7 held at a session's end", l)
	}
	if !strings.Contains(text, "left:       1 transaction the replay prepared was still prepared on the target at its end: 'gx_left' (database ord_copy") ||
		!strings.Contains(text, "rolled back at the end, as asked") || !strings.Contains(text, "left:       1 advisory lock held by sessions of the replay as they ended") {
		t.Errorf("the text does not name the leftovers:\n%s", text)
	}
	if n := rowsOf(ctx, t, c, "postgres", "SELECT count(*) FROM pg_prepared_xacts WHERE database = 'ord_copy'"); n != "[[0]]" {
		t.Errorf("prepared transactions left on the target: %s", n)
	}
	// In load mode (rehearse's rounds) reads wait for no commit of
	// data, but the listener's read still follows the notifying commit
	// (without that wait it read no job in 1 of 2 runs: a race this
	// test cannot force), and the locks keep their order.
	code, text, res = runReplay(t, "--target", c.DSN("ord_load"), "--database-map", "ord_orig=ord_load", "--speed", "0", "--sync", "load",
		"--findings=false", "--observe=false", "--cleanup", rc.dir)
	if res == nil {
		t.Fatalf("no result in load mode:\n%s", text)
	}
	if o := res.Outcomes; code != ExitOK || o.FailedOnlyOnTarget != 0 || o.AnswerDiffers != 0 || res.Sync.Timeouts != 0 {
		t.Errorf("load mode: exit %d, %d failed only on the target, %d answers differ, %d sync waits given up; want 0:\n%s", code,
			o.FailedOnlyOnTarget, o.AnswerDiffers, res.Sync.Timeouts, text)
	}
}

// runOrderWorkload runs crossSessionOrder's clients through
// the proxy, each step in the order the comments say: the test waits
// for a session to block on the advisory lock (on the cluster itself,
// not recorded) before the others go on.
func runOrderWorkload(ctx context.Context, t *testing.T, c *pgcluster.Cluster, rc *runningCapture) {
	conn := func() *pgx.Conn {
		cn := pgclustertest.Connect(ctx, t, rc.dsn(c.User(), "ord_orig"))
		t.Cleanup(func() { cn.Close(context.Background()) })
		return cn
	}
	exec := func(cn *pgx.Conn, sql string, args ...any) {
		t.Helper()
		if _, err := cn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	a, b, cc, l, n, d := conn(), conn(), conn(), conn(), conn(), conn()
	exec(l, "LISTEN jobs")
	// Two-phase commit: a prepares, cc commits it later.
	exec(a, "BEGIN")
	exec(a, "UPDATE acct SET v = v + 10 WHERE id = 1")
	exec(a, "PREPARE TRANSACTION 'gx1'")
	// a holds the advisory lock 42 (a bind parameter: pgx sends it as
	// a binary int8) and updates a range; b waits for the lock.
	exec(a, "SELECT pg_advisory_lock($1)", int64(42))
	exec(a, "UPDATE acct SET v = v * 2 + 1 WHERE id BETWEEN 2 AND 2")
	bDone := make(chan error, 1)
	go func() {
		_, err := b.Exec(ctx, "SELECT pg_advisory_lock(42)")
		if err == nil {
			_, err = b.Exec(ctx, "UPDATE acct SET v = v * 3 + 1 WHERE id BETWEEN 2 AND 2")
		}
		if err == nil {
			_, err = b.Exec(ctx, "SELECT pg_advisory_unlock(42)")
		}
		bDone <- err
	}()
	waitAdvisoryBlocked(ctx, t, c)
	// cc's try fails while a holds it; then cc commits a's prepared
	// transaction and reads what it wrote.
	var got bool
	if err := cc.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(42)).Scan(&got); err != nil || got {
		t.Fatalf("the try: %v, %v; want false", got, err)
	}
	exec(cc, "COMMIT PREPARED 'gx1'")
	var v int
	if err := cc.QueryRow(ctx, "SELECT v FROM acct WHERE id = $1", int32(1)).Scan(&v); err != nil || v != 10 {
		t.Fatalf("acct 1 after COMMIT PREPARED: %d, %v", v, err)
	}
	exec(a, "SELECT pg_advisory_unlock($1)", int64(42))
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	// The notifier inserts a job and notifies; the listener reads it.
	exec(n, "BEGIN")
	exec(n, "INSERT INTO jobs VALUES (1, 'payload one')")
	exec(n, "NOTIFY jobs")
	exec(n, "COMMIT")
	if _, err := l.WaitForNotification(ctx); err != nil {
		t.Fatal(err)
	}
	var p string
	if err := l.QueryRow(ctx, "SELECT payload FROM jobs WHERE id = $1", int32(1)).Scan(&p); err != nil || p != "payload one" {
		t.Fatalf("the listener read %q, %v", p, err)
	}
	// d leaves a transaction prepared and ends holding a lock.
	exec(d, "SELECT pg_advisory_lock(7)")
	exec(d, "BEGIN")
	exec(d, "INSERT INTO steps VALUES (1, 'left prepared')")
	exec(d, "PREPARE TRANSACTION 'gx_left'")
	for _, cn := range []*pgx.Conn{a, b, cc, l, n, d} {
		cn.Close(ctx)
	}
	rc.idleAll(ctx, t, c)
	mustExec(t, c, "ord_orig", "ROLLBACK PREPARED 'gx_left'")
}

// waitAdvisoryBlocked polls the cluster until a session waits for an
// advisory lock.
func waitAdvisoryBlocked(ctx context.Context, t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if rowsOf(ctx, t, c, "postgres", "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == "[[1]]" {
			return
		}
	}
	t.Fatal("no session waits for the advisory lock after 30 s")
}

// idleAll waits until the cluster has no client backend of the workload
// left (through the proxy, each closes after its client).
func (rc *runningCapture) idleAll(ctx context.Context, t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if rowsOf(ctx, t, c, "postgres", "SELECT count(*) FROM pg_stat_activity WHERE datname = 'ord_orig' AND backend_type = 'client backend'") == "[[0]]" {
			return
		}
	}
	t.Fatal("the workload's sessions did not end within 30 s")
}

// rowsOf is the rows of a query on db, as text.
func rowsOf(ctx context.Context, t *testing.T, c *pgcluster.Cluster, db, q string) string {
	t.Helper()
	cn := pgclustertest.Connect(ctx, t, c.DSN(db))
	defer cn.Close(ctx)
	rows, err := cn.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(all)
}
