package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	capfile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// startStateSchema is the data the capture starts from: orders large
// enough that a deletion is beyond the tolerance (10%, 1,000 rows),
// items small, events where the workload writes.
const startStateSchema = `
CREATE TABLE orders (id int PRIMARY KEY, note text);
INSERT INTO orders SELECT g, 'order ' || g FROM generate_series(1, 5000) g;
CREATE TABLE items (id int PRIMARY KEY);
INSERT INTO items SELECT generate_series(1, 200);
CREATE TABLE events (id serial PRIMARY KEY, note text);
ANALYZE;`

// TestCaptureStartState takes a capture with --monitor-dsn as a role
// that has only pg_monitor, and checks that its manifest records the
// upstream's WAL position, time, version, system identifier and per table
// its rows. The capture is then replayed onto copies of the starting
// data on another server: onto an identical one with no warning; onto one
// where rows were deleted from orders (and ANALYZEd) and items dropped,
// with a warning naming both, the replay going on; and, with
// --require-start-state, onto such a copy: exit 1, and not one statement
// of the capture ran there; and so does a rehearsal whose control is such
// a copy. The start counts the rows of its tables (the role also has
// pg_read_all_data), and so does the check: a copy missing half of
// orders, never analyzed since (its estimate still says 5,000), is named
// with both counts. The table digests stop a copy with fewer orders
// (exit 6, nothing run), unless the manifest says orders was written
// around the start's digest: the difference is then not proven, said
// so, and the replay runs.
func TestCaptureStartState(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{})
	b := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	mustExec(t, a, "postgres", startStateSchema+"CREATE ROLE monitor LOGIN IN ROLE pg_monitor, pg_read_all_data;")
	for _, db := range []string{"same", "fewer", "strict", "halved", "written"} {
		mustExec(t, b, "postgres", "CREATE DATABASE "+db)
		mustExec(t, b, db, startStateSchema)
	}
	mustExec(t, b, "postgres", startStateSchema)
	// Half of orders deleted and not analyzed: autovacuum may not
	// refresh the estimate behind the check's back.
	mustExec(t, b, "written", "DELETE FROM orders WHERE id > 2000; ANALYZE orders")
	mustExec(t, b, "halved", "ALTER TABLE orders SET (autovacuum_enabled = off); DELETE FROM orders WHERE id > 2500")
	for _, db := range []string{"fewer", "strict", "postgres"} {
		mustExec(t, b, db, "DELETE FROM orders WHERE id > 2000; DROP TABLE items; ANALYZE orders; CREATE EXTENSION pg_stat_statements")
	}

	// The setup's writes reach the statistics first: late, they would
	// read as written around the start's digest, which proves nothing.
	statsSettled(ctx, t, a, "postgres")
	before := time.Now()
	rc := startCapture(t, a.DSN("postgres"), "--monitor-dsn", a.DSN("postgres")+" user=monitor")
	conn := pgclustertest.Connect(ctx, t, rc.dsn(a.User(), "postgres"))
	for i := range 5 {
		if _, err := conn.Exec(ctx, "INSERT INTO events (note) VALUES ($1)", fmt.Sprint("event ", i)); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id <= $1", 100*i).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	code, out := rc.stop(t)
	t.Logf("capture:\n%s", out)
	if code != ExitOK || !regexp.MustCompile(`start +WAL [0-9A-F]+/[0-9A-F]+ at .*, PostgreSQL [0-9][^,]*, 3 tables in 1 databases; rows counted in 3 \(up to 1\.0 GiB\), estimated in 0\n`).MatchString(out) {
		t.Fatalf("capture exited %d, want its start state in the summary:\n%s", code, out)
	}

	m, err := capfile.ReadManifest(rc.dir)
	if err != nil {
		t.Fatal(err)
	}
	st := m.StartState
	if st == nil {
		t.Fatal("the manifest has no start_state")
	}
	want := queryLines(t, a, "postgres", "SELECT current_setting('server_version_num') || ' ' || system_identifier FROM pg_control_system()")
	if got := fmt.Sprintf("%d %s", st.ServerVersionNum, st.SystemIdentifier); len(want) != 1 || got != want[0] {
		t.Errorf("version and system identifier %q, want %q", got, want)
	}
	if !regexp.MustCompile(`^[0-9A-F]+/[0-9A-F]+$`).MatchString(st.LSN) || st.Standby || st.ServerVersion == "" {
		t.Errorf("start state %+v: want a primary's LSN and its version", st)
	}
	// The LSN was read before the workload: the server is past it now.
	if past := queryLines(t, a, "postgres", "SELECT pg_current_wal_insert_lsn() > '"+st.LSN+"'::pg_lsn"); len(past) != 1 || past[0] != "t" {
		t.Errorf("the server's WAL is not past the recorded %s: %q", st.LSN, past)
	}
	if st.Time.Before(before.Add(-time.Minute)) || st.Time.After(m.Start.Add(time.Minute)) {
		t.Errorf("start time %v, want about %v (the capture's start %v)", st.Time, before, m.Start)
	}
	rows := map[string]string{}
	for _, db := range st.Databases {
		if db.Error != "" {
			t.Errorf("database %s: %s", db.Name, db.Error)
		}
		for _, tb := range db.Tables {
			rows[db.Name+"."+tb.Schema+"."+tb.Name] = strconv.FormatInt(tb.Rows, 10) + " " + string(tb.RowsFrom)
			if (tb.Bytes <= 0) != (tb.Name == "events") {
				t.Errorf("%s: %d bytes, want more than 0 for a table with rows", tb.Name, tb.Bytes)
			}
		}
	}
	if st.CountBelow != 1<<30 {
		t.Errorf("count_below %d, want the default 1 GiB", st.CountBelow)
	}
	for k, v := range map[string]string{"postgres.public.orders": "5000 count", "postgres.public.items": "200 count", "postgres.public.events": "0 count"} {
		if rows[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, rows[k], v, rows)
		}
	}

	replayOnto := func(db string, extra ...string) (int, string) {
		t.Helper()
		args := append([]string{"--target", b.DSN(db), "--database-map", "postgres=" + db, "--speed", "0", "--findings=false"}, extra...)
		code, text, _ := runReplay(t, append(args, rc.dir)...)
		t.Logf("replay onto %s (exit %d):\n%s", db, code, text)
		return code, text
	}

	code, text := replayOnto("same")
	if code != ExitOK || strings.Contains(text, "WARNING: the target is not") || !strings.Contains(text, "the target's tables match the starting point") {
		t.Errorf("onto an identical copy: exit %d, want 0, the tables matched and no warning", code)
	}

	if est := queryLines(t, b, "halved", "SELECT reltuples::bigint FROM pg_class WHERE relname = 'orders'"); len(est) != 1 || est[0] != "5000" {
		t.Fatalf("the halved copy's estimate of orders is %q, want 5000 still (never analyzed)", est)
	}
	code, text = replayOnto("halved", "--require-start-state")
	if code != ExitFailure || !strings.Contains(text, "orders: 2,500 rows on the target, 5,000 at the start (both counted)") ||
		strings.Contains(text, "items:") || !strings.Contains(text, "nothing was replayed") {
		t.Errorf("with --require-start-state onto a copy missing half of orders, not analyzed: exit %d, want %d naming orders with both counts", code, ExitFailure)
	}
	if got := queryLines(t, b, "halved", "SELECT count(*) FROM events"); len(got) != 1 || got[0] != "0" {
		t.Errorf("with --require-start-state onto the halved copy a statement ran: events %q, want 0", got)
	}

	// Without --require-start-state the counts only warn, but the
	// table digests the capture stored prove the rows differ: exit 6,
	// the tables named, before any statement.
	code, text = replayOnto("fewer")
	for _, w := range []string{"REPLAY FAILED: the target's data differs from the recording's start", "public.items: no such table on the target", "public.orders: keys "} {
		if !strings.Contains(text, w) {
			t.Errorf("onto a copy with fewer orders: the output lacks %q", w)
		}
	}
	if strings.Contains(text, "events:") || code != ExitDiverged {
		t.Errorf("onto a copy with fewer orders: exit %d, want %d with only orders and items named", code, ExitDiverged)
	}
	if got := queryLines(t, b, "fewer", "SELECT count(*) FROM events"); len(got) != 1 || got[0] != "0" {
		t.Errorf("onto a copy whose digests differ a statement ran: events %q, want 0", got)
	}

	// The same difference on a table written while the start's digest
	// was read (the manifest says so, as if a session outside the proxy
	// had written it) is not proven: the replay runs, and the pre-flight
	// line and the result say why the difference is not the target's.
	written := writtenCapture(t, rc.dir, "orders", 7)
	code, text, res := runReplay(t, "--target", b.DSN("written"), "--database-map", "postgres=written", "--speed", "0", "--findings=false", written)
	t.Logf("replay onto written (exit %d):\n%s", code, text)
	if code != ExitOK || res == nil || !regexp.MustCompile(`table digests: 3 of 3 tables compared with the start's, 2 match; 1 differs, not proven: `+
		`public\.orders: keys [0-9.]+.* \(7 rows written while the start's digest was read: not proven\)\n`).MatchString(text) {
		t.Errorf("onto a copy with fewer orders, orders written around the start's digest: exit %d, want 0 and orders' difference said not proven", code)
	} else if sd := res.StartDigests; sd == nil || sd.Compared != 3 || sd.Match != 2 || len(sd.Unproven) != 1 ||
		sd.Unproven[0].Table != "public.orders" || sd.Unproven[0].Written != 7 || len(sd.Unproven[0].Ranges) == 0 {
		t.Errorf("the result's start_digests %+v, want 3 compared, 2 matching, orders unproven with its 7 rows written", sd)
	}
	if got := queryLines(t, b, "written", "SELECT count(*) FROM events"); len(got) != 1 || got[0] != "5" {
		t.Errorf("onto a copy whose only difference is not proven the capture did not run: events %q, want 5", got)
	}

	mustExec(t, b, "strict", "SELECT pg_stat_statements_reset()")
	code, text = replayOnto("strict", "--require-start-state")
	if code != ExitFailure || !strings.Contains(text, "PRE-FLIGHT FAILED: --require-start-state") ||
		!strings.Contains(text, "orders: 2,000 rows on the target, 5,000 at the start") || !strings.Contains(text, "nothing was replayed") {
		t.Errorf("with --require-start-state onto a copy with fewer orders: exit %d, want %d naming orders", code, ExitFailure)
	}
	if got := queryLines(t, b, "strict", "SELECT count(*) FROM events"); len(got) != 1 || got[0] != "0" {
		t.Errorf("with --require-start-state a statement ran on the target: events %q, want 0", got)
	}
	ran := queryLines(t, b, "strict", `SELECT query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = 'strict' AND (query LIKE 'INSERT INTO events%' OR query LIKE '%FROM orders WHERE%')`)
	if len(ran) != 0 {
		t.Errorf("with --require-start-state the capture's statements ran on the target: %q", ran)
	}

	// A capture taken without --monitor-dsn records no starting point:
	// a replay that requires one refuses it, and says why.
	plain := startCapture(t, a.DSN("postgres"))
	pc := pgclustertest.Connect(ctx, t, plain.dsn(a.User(), "postgres"))
	if _, err := pc.Exec(ctx, "INSERT INTO events (note) VALUES ('unchecked')"); err != nil {
		t.Fatal(err)
	}
	pc.Close(ctx)
	if code, out := plain.stop(t); code != ExitOK || strings.Contains(out, "start     WAL") {
		t.Fatalf("capture without --monitor-dsn: exit %d, want 0 and no start state:\n%s", code, out)
	}
	code, text, _ = runReplay(t, "--target", b.DSN("strict"), "--database-map", "postgres=strict", "--speed", "0", "--findings=false", "--require-start-state", plain.dir)
	if code != ExitFailure || !strings.Contains(text, "the input records no starting point") {
		t.Errorf("--require-start-state with a capture without one: exit %d, want %d saying it has none:\n%s", code, ExitFailure, text)
	}
	if got := queryLines(t, b, "strict", "SELECT count(*) FROM events"); len(got) != 1 || got[0] != "0" {
		t.Errorf("--require-start-state with a capture without one: events %q on the target, want 0", got)
	}

	// A rehearsal checks both targets before the control's first round:
	// the candidate (B's postgres, fewer orders) fails it, and no round
	// runs anywhere, the control's included. The control, the source
	// itself, returns to the start (events emptied): its table digests,
	// which no count tolerance loosens, would otherwise stop it (exit 6).
	mustExec(t, a, "postgres", "DELETE FROM events")
	mustExec(t, b, "strict", "SELECT pg_stat_statements_reset()")
	code, stdout, stderr := runRehearse(t, "", "--control", a.DSN("postgres"), "--candidate", b.DSN("postgres"), "--rounds", "1", "--speed", "0",
		"--findings=false", "--require-start-state", "--out", filepath.Join(t.TempDir(), "rounds"), rc.dir)
	t.Logf("rehearse (exit %d):\n%s%s", code, stdout, stderr)
	if code != ExitFailure || !strings.Contains(stderr, "the candidate (--candidate), before the first round: PRE-FLIGHT FAILED: --require-start-state") ||
		!strings.Contains(stderr, "orders: 2,000 rows on the target, 5,000 at the start (both counted)") ||
		!strings.Contains(stderr, "the target's tables match the starting point") || strings.Contains(stderr, "rehearse: round ") {
		t.Errorf("rehearse with --require-start-state onto a candidate with fewer orders: exit %d, want %d naming orders before any round, the control matching", code, ExitFailure)
	}
	ran = queryLines(t, b, "strict", `SELECT d.datname || ': ' || query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE query LIKE 'INSERT INTO events%' OR query LIKE '%FROM orders WHERE%'`)
	if len(ran) != 0 {
		t.Errorf("rehearse with --require-start-state: the capture's statements ran on the candidate: %q", ran)
	}
}

// writtenCapture copies the capture dir, its manifest saying that n rows
// were written in table around the start's digest.
func writtenCapture(t *testing.T, dir, table string, n int64) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "written")
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "capture.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	st, _ := m["start_state"].(map[string]any)
	d, _ := st["digests"].(map[string]any)
	tables, _ := d["tables"].([]any)
	found := false
	for _, tb := range tables {
		if tm, ok := tb.(map[string]any); ok && tm["name"] == table {
			tm["written"], found = n, true
		}
	}
	if !found {
		t.Fatalf("%s has no digest of %s", path, table)
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCaptureMonitorUnreachable: a monitoring connection that fails stops
// the capture before it relays anything, saying so without the password.
func TestCaptureMonitorUnreachable(t *testing.T) {
	var stdout, stderr lockedBuffer
	dir := filepath.Join(t.TempDir(), "capture")
	code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"capture", "--listen", "127.0.0.1:0",
		"--upstream", "host=/nonexistent port=1", "--monitor-dsn", "host=/nonexistent port=1 user=monitor password=hunter2", "--out", dir})
	out := stdout.String() + stderr.String()
	if code != ExitFailure || !strings.Contains(out, "the starting point cannot be read through the monitoring connection") ||
		strings.Contains(out, "hunter2") || strings.Contains(out, "listening on") {
		t.Errorf("exit %d, want %d saying the monitoring connection failed, before listening, without the password:\n%s", code, ExitFailure, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the capture directory was created (%v): nothing is recorded without its starting point", err)
	}
}
