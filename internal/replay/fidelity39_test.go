package replay

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/analyze"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// The tests of this file replay logs that a real PostgreSQL server wrote
// for the shapes issue 39 found in PostgreSQL's own regression suite.

// loggingSettings make a server log every statement as the README asks,
// with testPrefix (replayFile's) as its log_line_prefix.
func loggingSettings(prefix string) map[string]string {
	return map[string]string{
		"log_min_duration_statement": "0",
		"log_connections":            "on",
		"log_disconnections":         "on",
		"lc_messages":                "C",
		"log_line_prefix":            prefix,
	}
}

// serverLog stops c and returns the path of its stderr log.
func serverLog(t *testing.T, c *pgcluster.Cluster) string {
	t.Helper()
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	return c.ServerLog()
}

// psql runs psql (of the server's own binaries) with args on c's
// database postgres.
func psql(t *testing.T, c *pgcluster.Cluster, args ...string) string {
	t.Helper()
	bin := filepath.Join(c.BinDir(), "psql")
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("psql"); err != nil {
			t.Fatalf("psql: not with the server (%s) nor on PATH", c.BinDir())
		}
	}
	out, err := exec.Command(bin, append([]string{"-X", "-v", "ON_ERROR_STOP=1", "-d", c.DSN("postgres")}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestFastPathSkipped: psql's \lo_import and \lo_export call libpq's
// large-object functions, which reach the server through the fast-path
// protocol (FunctionCall messages) and are logged as "fastpath function
// call: "lo_open" (OID 952)" without their arguments. An analysis counts
// each as an execution, and a replay skips each as a "fast-path function
// call", so that its statements add up with them; before, their lines were
// set aside and the calls were missing from both counts.
func TestFastPathSkipped(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	origin := pgclustertest.StartT(t, pgcluster.Options{Settings: loggingSettings(testPrefix)})
	file := filepath.Join(t.TempDir(), "blob.txt")
	if err := os.WriteFile(file, []byte(strings.Repeat("large object ", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := psql(t, origin, "-c", `\lo_import `+file)
	oid := strings.TrimPrefix(strings.TrimSpace(out), "lo_import ")
	psql(t, origin, "-c", `\lo_export `+oid+` `+filepath.Join(t.TempDir(), "back.txt"))
	psql(t, origin, "-c", "SELECT count(*) FROM pg_largeobject_metadata")
	path := serverLog(t, origin)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	calls := int64(strings.Count(string(b), "fastpath function call: "))
	if calls < 6 {
		t.Fatalf("the server logged %d fast-path calls, want those of \\lo_import and \\lo_export:\n%s", calls, b)
	}

	// analyze: every call is an execution, and every line is used.
	rd, err := logread.Open(path, logread.Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	a, err := analyze.Analyze(ctx, []event.Source{rd}, analyze.Options{})
	c := rd.Counters()
	rd.Close()
	if err != nil {
		t.Fatal(err)
	}
	var fast int64
	for _, q := range a.Queries {
		if strings.Contains(q.Query, "pg_catalog.lo") {
			fast += q.Calls
		}
	}
	if fast != calls || c.Total != c.Parsed+c.SkippedTotal() {
		t.Errorf("analyze: %d fast-path executions (want %d); lines %d, parsed %d, skipped %v", fast, calls, c.Total, c.Parsed, c.Skipped)
	}

	target := pgclustertest.StartT(t, pgcluster.Options{})
	res := replayFile(t, path, Options{Target: target.DSN("postgres"), Speed: 0})
	if got := res.Statements.Skipped[SkipFastPath]; got != calls {
		t.Errorf("replay: %d skipped as %q, want the log's %d calls; statements %+v", got, SkipFastPath, calls, res.Statements)
	}
	if n := res.Statements.Skipped[SkipParamsMissing]; n != 0 {
		t.Errorf("replay: %d skipped as %q: the fast-path calls must be named", n, SkipParamsMissing)
	}
	if res.Statements.Failed != 0 || res.Outcomes.FailedOnlyOnTarget != 0 {
		t.Errorf("replay: statements %+v, outcomes %+v: want the rest to run", res.Statements, res.Outcomes)
	}
}

// TestParallelWorkerBarePrefix: with PostgreSQL's default log_line_prefix
// '%m [%p] ', a parallel worker's error line names no session, user or
// database, as a session's would not either: it is known by its leader's
// error (CONTEXT: parallel worker), which repeats its statement and
// message. Its lines are counted as a parallel worker's error, the
// failure counts once, and the replay runs the statement once, in its
// session. Before, the worker was read as a session of its own.
//
// On a busy machine the query's second worker may still run when its
// leader fails, and logs that it was stopped ("terminating background
// worker"), or start after that and log an error of its own ("could not
// attach to dynamic shared area"; logread.TestLateParallelWorker): they
// are a worker's lines too. Before they were read so, this test read 3
// sessions and 2 failures under load. Functional: it counts lines,
// sessions and failures at speed 0, never a time (issue 44).
func TestParallelWorkerBarePrefix(t *testing.T) {
	functionalCase(t)
	workerExited := regexp.MustCompile(`background worker "parallel worker" \(PID (\d+)\) exited`)
	ctx := context.Background()
	const bare = "%m [%p] "
	origin := pgclustertest.StartT(t, pgcluster.Options{Settings: loggingSettings(bare)})
	psql(t, origin, "-c", "CREATE TABLE t AS SELECT g AS a FROM generate_series(1, 1000) g", "-c", "ANALYZE t")
	out, err := exec.Command(filepath.Join(origin.BinDir(), "psql"), "-X", "-d", origin.DSN("postgres"),
		"-c", "SET force_parallel_mode = on", "-c", "SET parallel_setup_cost = 0", "-c", "SET parallel_tuple_cost = 0",
		"-c", "SET min_parallel_table_scan_size = 0", "-c", "SET parallel_leader_participation = off",
		"-c", "SELECT count(*) FROM t WHERE 1/(a-500) > 0", "-c", "SELECT 1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "division by zero") {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	path := serverLog(t, origin)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "ERROR:  division by zero") != 2 || !strings.Contains(string(b), "CONTEXT:  parallel worker") {
		t.Fatalf("the server did not log the worker's error and its leader's:\n%s", b)
	}

	open := func() *logread.Reader {
		rd, err := logread.Open(path, logread.Options{Prefix: bare})
		if err != nil {
			t.Fatal(err)
		}
		return rd
	}
	rd := open()
	a, err := analyze.Analyze(ctx, []event.Source{rd}, analyze.Options{})
	c := rd.Counters()
	rd.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The workers' lines: the failing one's ERROR and STATEMENT, and a
	// late one's, if any (its pid is known by the postmaster's line
	// saying that it exited).
	workerLines := int64(0)
	for _, m := range workerExited.FindAllStringSubmatch(string(b), -1) {
		workerLines += int64(strings.Count(string(b), " ["+m[1]+"] "))
	}
	if a.Statements.Failed != 1 || workerLines < 2 || c.Skipped[logread.SkipParallelWorker] != workerLines || c.Total != c.Parsed+c.SkippedTotal() {
		t.Errorf("analyze: statements %+v; lines %d, parsed %d, skipped %v: want 1 failure and the workers' %d lines skipped as %q; the log:\n%s",
			a.Statements, c.Total, c.Parsed, c.Skipped, workerLines, logread.SkipParallelWorker, b)
	}

	target := pgclustertest.StartT(t, pgcluster.Options{})
	psql(t, target, "-c", "CREATE TABLE t AS SELECT g AS a FROM generate_series(1, 1000) g")
	rd = open()
	defer rd.Close()
	r, err := New(Options{Target: target.DSN("postgres"), Speed: 0})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, ctx, selected(source.Selection{}, rd))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariant(t, res)
	// The table exists on the target already: its CREATE fails there.
	if res.Sessions.Total != 2 || res.Outcomes.OriginalFailed != 1 || res.Outcomes.BothFailed != 1 {
		t.Errorf("replay: sessions %+v, outcomes %+v: want the two psql sessions and the division by zero failing once in both",
			res.Sessions, res.Outcomes)
	}
}

// TestStartupSettingsNoted: settings a client sends when it connects
// (PGDATESTYLE, PGTZ, PGOPTIONS) reach the server outside the log. A
// session that read '13/01/2026' as a date with DateStyle DMY fails on the
// target, whose default is MDY; the replay says that the log cannot show
// such settings, gives the target's values, counts the date error on one
// side only, and names pg_regress's sessions as a client known to set
// them. Before, the failure was only one more error on the target.
func TestStartupSettingsNoted(t *testing.T) {
	functionalCase(t)
	origin := pgclustertest.StartT(t, pgcluster.Options{Settings: loggingSettings(testPrefix)})
	psql(t, origin, "-c", "CREATE TABLE d (v date)")
	cmd := exec.Command(filepath.Join(origin.BinDir(), "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-d", origin.DSN("postgres"),
		"-c", "INSERT INTO d VALUES ('13/01/2026')")
	cmd.Env = append(os.Environ(), "PGDATESTYLE=ISO, DMY", "PGTZ=Asia/Tokyo", "PGAPPNAME=pg_regress/dates")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql with DateStyle DMY: %v\n%s", err, out)
	}
	path := serverLog(t, origin)

	target := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"DateStyle": "ISO, MDY", "TimeZone": "UTC"}})
	res := replayFile(t, path, Options{Target: target.DSN("postgres"), Speed: 0})
	st := res.StartupSettings
	if st == nil {
		t.Fatal("no startup_settings in the result")
	}
	t.Logf("note: %s", st.Note)
	if st.Recorded || !st.Suspect || st.DateTimeDiffers != 1 || st.Target["DateStyle"] != "ISO, MDY" || st.Target["TimeZone"] != "UTC" {
		t.Errorf("startup settings %+v: want not recorded, suspect, 1 date error on one side, the target's DateStyle ISO, MDY and TimeZone UTC", *st)
	}
	if len(st.KnownClients) != 1 || st.KnownClients[0].Application != "pg_regress" || st.KnownClients[0].Sessions != 1 {
		t.Errorf("known clients %+v: want pg_regress's one session", st.KnownClients)
	}
	if !strings.Contains(st.Note, "does not record") || !strings.Contains(st.Note, "DateStyle ISO, MDY") {
		t.Errorf("note %q", st.Note)
	}
	if res.Outcomes.FailedOnlyOnTarget != 1 || res.Outcomes.OnlyOnTargetBySQLState["22008"] != 1 {
		t.Errorf("outcomes %+v: want the insert failing on the target only, 22008", res.Outcomes)
	}
}

// TestTempSchemaBaked: PostgreSQL's create_index test reindexes its own
// temporary schema by name (REINDEX SCHEMA CONCURRENTLY pg_temp_3), a
// name the original's server gave by its backend's number: on a target
// whose session has another number, the schema does not exist, which is
// counted as a server-assigned id baked into the text, not as the
// target's doing. Before, it was one of the two failures only on the
// target of the suite's replay that were not named.
func TestTempSchemaBaked(t *testing.T) {
	functionalCase(t)
	var l testLog
	s := l.session("postgres", "postgres", 0)
	s.query(time.Millisecond, time.Millisecond, "CREATE TEMP TABLE tt (a int)")
	s.query(10*time.Millisecond, time.Millisecond, "REINDEX SCHEMA pg_temp_97")
	s.disconnect(20 * time.Millisecond)
	target := pgclustertest.StartT(t, pgcluster.Options{})
	res := replayFile(t, l.write(t), Options{Target: target.DSN("postgres"), Speed: 0})
	if o := res.Outcomes; o.FailedOnlyOnTarget != 1 || o.OnlyOnTargetBakedIDs != 1 || o.OnlyOnTargetBySQLState["3F000"] != 1 {
		t.Errorf("outcomes %+v: want the REINDEX failing on the target only, 3F000, counted as a baked-in id", o)
	}
}

// TestFailureAfterFastPath: PostgreSQL's largeobject test gives a large
// object to a role, unlinks it with psql's \lo_unlink (a fast-path call,
// skipped), and drops the role: on the target the object is still there,
// and DROP ROLE fails (2BP01). It is counted among the failures only on
// the target of a session that skipped a fast-path call
// (only_on_target_after_fast_path), not left unexplained.
func TestFailureAfterFastPath(t *testing.T) {
	slowCase(t, 5*time.Second)
	origin := pgclustertest.StartT(t, pgcluster.Options{Settings: loggingSettings(testPrefix)})
	psql(t, origin, "-c", "CREATE ROLE regress_lo_user", "-c", "SELECT lo_create(42)",
		"-c", "ALTER LARGE OBJECT 42 OWNER TO regress_lo_user", "-c", `\lo_unlink 42`, "-c", "DROP ROLE regress_lo_user")
	path := serverLog(t, origin)
	target := pgclustertest.StartT(t, pgcluster.Options{})
	res := replayFile(t, path, Options{Target: target.DSN("postgres"), Speed: 0})
	if res.Statements.Skipped[SkipFastPath] != 1 {
		t.Errorf("statements %+v: want \\lo_unlink's call skipped", res.Statements)
	}
	if o := res.Outcomes; o.FailedOnlyOnTarget != 1 || o.OnlyOnTargetBySQLState["2BP01"] != 1 || o.OnlyOnTargetAfterFastPath != 1 || o.OnlyOnTargetBakedIDs != 0 {
		t.Errorf("outcomes %+v: want DROP ROLE failing on the target only, after the skipped fast-path call", o)
	}
}

// TestLockWaitsSafeSnapshot: a serializable read-only deferrable
// transaction waiting for its safe snapshot is blocked by the open
// serializable transaction of another backend, and lockWaits names that
// backend, so that a sync wait of that backend's session on the blocked
// one's commit is known for a deadlock at once. Before, the wait (IPC
// SafeSnapshot, no lock) was invisible, and in the speed-1 replay of
// PostgreSQL's regression suite a session kept open by it waited out
// --sync-timeout on each of its statements.
func TestLockWaitsSafeSnapshot(t *testing.T) {
	functionalCase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	connect := func() *pgconn.PgConn {
		conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	rw, ro, watch := connect(), connect(), connect()
	if _, err := rw.Exec(ctx, "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT 1").ReadAll(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ro.Exec(ctx, "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE; SELECT 1").ReadAll()
		done <- err
	}()
	var edges map[uint32][]uint32
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if edges, err = lockWaits(ctx, watch); err != nil {
			t.Fatal(err)
		}
		if len(edges[ro.PID()]) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if by := edges[ro.PID()]; len(by) != 1 || by[0] != rw.PID() {
		t.Errorf("lock waits %v: want backend %d blocked by %d", edges, ro.PID(), rw.PID())
	}
	if _, err := rw.Exec(ctx, "COMMIT").ReadAll(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSyncCreatedDatabaseByObject: a database the log creates does not
// exist when its first session attaches to the synchronization, so its
// catalog could not be read and its statements waited as in commit mode,
// every one for every earlier commit (PostgreSQL's regression suite, whose
// database pg_regress creates: 179 s at speed 0 for a 195 s log). It now
// waits by object with the catalog of template1 (126 s).
func TestSyncCreatedDatabaseByObject(t *testing.T) {
	functionalCase(t)
	var l testLog
	a := l.session("postgres", "postgres", 0)
	a.query(time.Millisecond, 50*time.Millisecond, "CREATE DATABASE db1")
	a.disconnect(100 * time.Millisecond)
	b := l.session("postgres", "db1", 200*time.Millisecond)
	b.query(210*time.Millisecond, time.Millisecond, "CREATE TABLE t (id int PRIMARY KEY)")
	b.query(220*time.Millisecond, time.Millisecond, "INSERT INTO t VALUES (1)")
	b.disconnect(300 * time.Millisecond)
	target := pgclustertest.StartT(t, pgcluster.Options{})
	res := replayFile(t, l.write(t), Options{Target: target.DSN("postgres"), Speed: 0})
	if res.Statements.Failed != 0 || res.Sync == nil {
		t.Fatalf("statements %+v, sync %+v", res.Statements, res.Sync)
	}
	joined := strings.Join(res.Sync.Notes, "\n")
	if !strings.Contains(joined, `database "db1" is created by the log`) || strings.Contains(joined, "commit mode") {
		t.Errorf("sync notes %q: want db1 waited by object, with template1's catalog", res.Sync.Notes)
	}
}

// TestMergeStartupSettings: the parts of a replay split by session merge
// their startup settings and their failures after a skipped fast-path
// call, as they merge the other outcomes.
func TestMergeStartupSettings(t *testing.T) {
	functionalCase(t)
	part := func(n int64, app string) *results.Result {
		r := results.New(results.KindReplay, results.LatencyClient)
		r.Outcomes.OnlyOnTargetAfterFastPath = n
		r.StartupSettings = &results.StartupSettings{DateTimeDiffers: n, Target: map[string]string{"TimeZone": "UTC"},
			KnownClients: []results.KnownClient{{Application: app, Sessions: n}}, Note: "part"}
		return r
	}
	m, err := results.Merge(part(1, "pg_regress"), part(2, "pg_regress"))
	if err != nil {
		t.Fatal(err)
	}
	st := m.StartupSettings
	if m.Outcomes.OnlyOnTargetAfterFastPath != 3 || st == nil || st.DateTimeDiffers != 3 || len(st.KnownClients) != 1 || st.KnownClients[0].Sessions != 3 || st.Target["TimeZone"] != "UTC" {
		t.Errorf("merged outcomes %+v, startup settings %+v", m.Outcomes, st)
	}
}
