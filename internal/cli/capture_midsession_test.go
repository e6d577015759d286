package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	capfmt "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/capturerun"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// midSessionSetup is the schema both servers start from: a table only
// in schema app, so that a statement that names it unqualified fails
// without the search_path the sessions set before the recording, and a
// role they switch to.
const midSessionSetup = `CREATE ROLE reader;
CREATE SCHEMA app;
CREATE TABLE app.items (id int PRIMARY KEY, v text);
INSERT INTO app.items SELECT i, 'item ' || i FROM generate_series(1, 20) i;
GRANT USAGE ON SCHEMA app TO reader;
GRANT SELECT ON app.items TO reader`

// TestCaptureSessionsFromTheMiddle is issue #47 item 2's acceptance: a
// pool of 4 pgx connections through a proxy that records nothing sets
// settings (simple and extended protocol, a role, a setting reset) and
// prepares named statements; a recording starts and they execute those
// statements by name; it stops; another starts and stops. No connection
// drops; both captures are complete; each replays onto a copy of the
// server with its sessions' state recreated first (the preamble) and no
// statement failing only on the target, no answer differing. A session
// inside a transaction when the second recording starts is recorded from
// its next idle point, with what it sent before counted as skipped.
func TestCaptureSessionsFromTheMiddle(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{})
	b := pgclustertest.StartT(t, pgcluster.Options{})
	for _, c := range []*pgcluster.Cluster{a, b} {
		mustExec(t, c, "postgres", midSessionSetup)
	}
	rc := startAdminProxy(t, a.DSN("postgres"))
	admin := &capturerun.Client{Addr: rc.admin}

	var pool []*pgx.Conn
	var pids []uint32
	for i := range 4 {
		conn := pgclustertest.Connect(ctx, t, rc.dsn(a.User(), "postgres"))
		t.Cleanup(func() { conn.Close(context.Background()) })
		pool = append(pool, conn)
		pids = append(pids, conn.PgConn().PID())
		pc := conn.PgConn()
		simple := []string{"SET search_path = app, public", "SET work_mem = '8MB'", "RESET work_mem"}
		if i == 0 {
			simple = append(simple, "SET ROLE reader")
		}
		for _, sql := range simple {
			if _, err := pc.Exec(ctx, sql).ReadAll(); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		// A setting through the extended protocol, and one in a
		// transaction rolled back, which is not the session's.
		if _, err := pc.ExecParams(ctx, "SET application_name = 'midsession'", nil, nil, nil, nil).Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := pc.Exec(ctx, "BEGIN; SET search_path = public; ROLLBACK").ReadAll(); err != nil {
			t.Fatal(err)
		}
		for name, sql := range map[string]string{
			"get_item": "SELECT v FROM items WHERE id = $1",
			"whoami":   "SELECT current_user::text || ' ' || current_setting('search_path') || ' ' || current_setting('application_name') || ' ' || current_setting('work_mem')",
			"dropped":  "SELECT 1",
		} {
			if _, err := conn.Prepare(ctx, name, sql); err != nil {
				t.Fatalf("prepare %s: %v", name, err)
			}
		}
		if err := conn.Deallocate(ctx, "dropped"); err != nil {
			t.Fatal(err)
		}
	}
	run := func(tag string) {
		t.Helper()
		for i, conn := range pool {
			var v, who string
			if err := conn.QueryRow(ctx, "get_item", i+1).Scan(&v); err != nil || v != fmt.Sprintf("item %d", i+1) {
				t.Fatalf("%s: get_item on connection %d: %q, %v", tag, i, v, err)
			}
			if err := conn.QueryRow(ctx, "whoami").Scan(&who); err != nil {
				t.Fatalf("%s: whoami on connection %d: %v", tag, i, err)
			}
			want := "app, public midsession 4MB"
			if i == 0 {
				want = "reader " + want
			} else {
				want = a.User() + " " + want
			}
			if who != want {
				t.Errorf("%s: connection %d is %q, want %q", tag, i, who, want)
			}
		}
	}

	dir1, dir2 := filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "two")
	st, err := admin.Start(ctx, capturerun.StartRequest{Out: dir1})
	if err != nil {
		t.Fatal(err)
	}
	if st.Resumed != 4 || st.NotRecorded != 0 || st.Waiting != 0 {
		t.Errorf("r1 started %+v: want the pool's 4 idle sessions taken up at once", st)
	}
	run("r1")
	if st, err = admin.Stop(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if !st.Complete || st.Sessions != 4 || st.OpenAtEnd != 4 {
		t.Errorf("r1 stopped %+v: want complete, 4 sessions open at the end", st)
	}

	// A session inside a transaction when the second recording starts.
	tx := pgclustertest.PgConn(ctx, t, rc.dsn(a.User(), "postgres"))
	defer tx.Close(ctx)
	for _, sql := range []string{"SET search_path = app", "BEGIN", "SELECT count(*) FROM items"} {
		if _, err := tx.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	if st, err = admin.Start(ctx, capturerun.StartRequest{Out: dir2}); err != nil {
		t.Fatal(err)
	}
	if st.Resumed != 4 || st.Waiting != 1 || st.NotRecorded != 0 {
		t.Errorf("r2 started %+v: want the pool taken up, the session in a transaction waiting", st)
	}
	for _, sql := range []string{"SELECT v FROM items WHERE id = 7", "COMMIT", "SELECT 'after the transaction', count(*) FROM items"} {
		if _, err := tx.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	run("r2")
	if st, err = admin.Stop(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if !st.Complete || st.Resumed != 5 || st.ResumedLate != 1 || st.Sessions != 5 ||
		st.SkippedBeforeRecording[string(capfmt.ResumeInTransaction)] != 2 {
		t.Errorf("r2 stopped %+v: want complete, 5 sessions taken up, one late after 2 messages in its transaction", st)
	}

	// State the proxy cannot know: a temporary table made before the
	// recording, which the replay's session lacks.
	tmp := pgclustertest.PgConn(ctx, t, rc.dsn(a.User(), "postgres"))
	defer tmp.Close(ctx)
	if _, err := tmp.Exec(ctx, "CREATE TEMP TABLE scratch AS SELECT 1 AS x").ReadAll(); err != nil {
		t.Fatal(err)
	}
	dir3 := filepath.Join(t.TempDir(), "three")
	if _, err = admin.Start(ctx, capturerun.StartRequest{Out: dir3}); err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Exec(ctx, "SELECT x FROM scratch").ReadAll(); err != nil {
		t.Fatal(err)
	}
	if _, err = admin.Stop(ctx, "r3"); err != nil {
		t.Fatal(err)
	}

	// No connection dropped.
	for i, conn := range pool {
		if err := conn.Ping(ctx); err != nil || conn.PgConn().PID() != pids[i] {
			t.Errorf("connection %d: %v, backend %d, was %d", i, err, conn.PgConn().PID(), pids[i])
		}
	}

	for _, c := range []struct {
		dir                 string
		sessions, statement int64
		skipped             int64
	}{{dir1, 4, 8, 0}, {dir2, 5, 9, 2}} {
		m, err := capfmt.ReadManifest(c.dir)
		if err != nil || !m.Complete || m.SessionsResumed != c.sessions || m.SkippedBeforeRecording.InTransaction != c.skipped {
			t.Errorf("%s: manifest %+v, %v: want complete, %d sessions from the middle, %d messages skipped before", c.dir, m, err, c.sessions, c.skipped)
		}
		code, text, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", c.dir)
		t.Logf("replay of %s:\n%s", c.dir, text)
		if code != ExitOK || res == nil {
			t.Fatalf("replay of %s exited %d", c.dir, code)
		}
		if o := res.Outcomes; o.FailedOnlyOnTarget != 0 || o.AnswerDiffers != 0 || res.Statements.Total != c.statement {
			t.Errorf("replay of %s: statements %+v, outcomes %+v: want %d statements, none failing only on the target, no answer differing",
				c.dir, res.Statements, o, c.statement)
		}
		if p := res.Preamble; p == nil || p.Sessions != c.sessions || p.Failed != 0 || p.Statements == 0 {
			t.Errorf("replay of %s: preamble %+v: want %d sessions recreated, nothing refused", c.dir, p, c.sessions)
		}
		if m := res.Messages; m == nil || m.ResumedSessions != c.sessions || m.BeforeRecording[string(capfmt.ResumeInTransaction)] != c.skipped {
			t.Errorf("replay of %s: messages %+v: want %d sessions from the middle, %d messages skipped before", c.dir, m, c.sessions, c.skipped)
		}
		if !strings.Contains(text, "preamble:") || !strings.Contains(text, "recorded from the middle") {
			t.Errorf("the replay's text does not count the preamble apart:\n%s", text)
		}
	}
	code, text, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", dir3)
	t.Logf("replay of %s:\n%s", dir3, text)
	if res == nil {
		t.Fatalf("replay of %s exited %d", dir3, code)
	}
	if o := res.Outcomes; o.FailedOnlyOnTarget != 1 || o.OnlyOnTargetSessionState != 1 || !strings.Contains(text, "session state from before the recording") {
		t.Errorf("replay of %s: outcomes %+v: want the statement on the temporary table failing only on the target, named as session state from before the recording", dir3, o)
	}
}
