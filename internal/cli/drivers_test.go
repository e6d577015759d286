package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	capturefile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// driversEnv names the directory where `make test-drivers`
// (hack/drivers-install.sh) installed the real drivers from their
// registries: node/node_modules, venv and java/*.jar.
const driversEnv = "PGREHEARSE_DRIVERS"

// driverCase is one real client's program, run through the capture
// proxy, and what its replay must show besides what every case checks.
type driverCase struct {
	name string
	// registry is true for a driver installed from a registry (skipped
	// without PGREHEARSE_DRIVERS); psql comes with PostgreSQL.
	registry bool
	// command returns the program to run, given the drivers' directory;
	// it connects with libpq's environment variables, set to the proxy.
	command func(ctx context.Context, t *testing.T, dir string) *exec.Cmd
	// printed are lines the program must print: proof that the driver
	// did what the case is about (a timeout that did cancel).
	printed []string
	// wire checks the capture's events: that the driver sent the
	// protocol forms the case is about (binary formats, row limits, a
	// cancel, fast-path calls), which the replay must send again.
	wire func(t *testing.T, evs []*event.Event)
	// rows are the replay's rows per query, each answered once.
	rows map[string]int64
	// cancelled are queries the replay must see cancelled (57014).
	cancelled []string
	// skipped are the capture's records the replay skips, by reason:
	// none but what the original server itself never ran.
	skipped map[results.MessageSkip]int64
	// onTarget are queries whose one-line answer on the replay's target
	// must be as given: what the driver's statements left there.
	onTarget map[string]string
}

// driverProgram is a program of testdata/drivers by its absolute path.
func driverProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "drivers", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// installed returns path under the drivers' directory, failing t when it
// is missing: under PGREHEARSE_DRIVERS a driver that cannot run fails.
func installed(t *testing.T, dir string, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) != 1 {
		t.Fatalf("%s: %d matches in %s=%s, want 1: run `make test-drivers`, which installs the drivers", pattern, len(m), driversEnv, dir)
	}
	return m[0]
}

// tool returns a program on PATH (java, node), failing t without it.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s: %v: the drivers' tests need it", name, err)
	}
	return p
}

const (
	// The cursors' and fetch sizes' queries, read 100 rows at a time.
	jdbcFetch    = "SELECT id, v FROM big WHERE id > $1 AND v <> 'jdbc'"
	asyncpgFetch = "SELECT id, v FROM big WHERE id > $1 ORDER BY id DESC"
	nodeFetch    = "SELECT id, v FROM big WHERE id > $1 ORDER BY id"
	sleepQuery   = "SELECT pg_sleep(5)"
	loContents   = "SELECT string_agg(convert_from(lo_get(oid), 'UTF8'), ',' ORDER BY oid) FROM pg_largeobject_metadata"
)

// driverSetup is what clusters A and B hold before the capture.
const driverSetup = "CREATE TABLE big AS SELECT g AS id, 'v' || g AS v FROM generate_series(1, 2000) g; " +
	"CREATE TABLE piped (x int PRIMARY KEY, note text); CREATE TABLE copied (id int, v text); " +
	"CREATE TABLE ca (x int); CREATE TABLE cb (x int)"

var driverCases = []driverCase{{
	name: "pgjdbc", registry: true,
	command: func(ctx context.Context, t *testing.T, dir string) *exec.Cmd {
		jar := installed(t, dir, "java/postgresql-*.jar")
		return exec.CommandContext(ctx, tool(t, "java"), "-cp", jar, driverProgram(t, "Jdbc.java"))
	},
	printed: []string{"jdbc fetch rows 2000", "jdbc lo written", "jdbc timeout 57014", "jdbc lo_get jdbc large object"},
	wire: func(t *testing.T, evs []*event.Event) {
		wantEvents(t, evs, "a fetch size of 100", 1, func(e *event.Event, w *event.Wire) bool { return e.Query == jdbcFetch && !w.Fetch && w.MaxRows == 100 })
		wantEvents(t, evs, "fetches of 100 rows on", 20, func(e *event.Event, w *event.Wire) bool { return e.Query == jdbcFetch && w.Fetch })
		// lo_creat, lo_open, lowrite, lo_close (and pgjdbc's lookup
		// of their OIDs, in SQL).
		wantEvents(t, evs, "fast-path calls", 4, func(e *event.Event, w *event.Wire) bool { return w.FunctionOID != 0 })
		wantEvents(t, evs, "a cancel", 1, func(e *event.Event, w *event.Wire) bool { return e.Query == sleepQuery && w.Cancel })
	},
	rows:      map[string]int64{jdbcFetch: 2000},
	cancelled: []string{sleepQuery},
	onTarget:  map[string]string{loContents: "jdbc large object"},
}, {
	name: "asyncpg", registry: true,
	command: func(ctx context.Context, t *testing.T, dir string) *exec.Cmd {
		return exec.CommandContext(ctx, installed(t, dir, "venv/bin/python"), driverProgram(t, "asyncpg_forms.py"))
	},
	printed: []string{"asyncpg cursor rows 2000", "asyncpg timeout cancelled", "asyncpg after 10"},
	wire: func(t *testing.T, evs []*event.Event) {
		wantEvents(t, evs, "a prefetch of 100", 1, func(e *event.Event, w *event.Wire) bool {
			return e.Query == asyncpgFetch && !w.Fetch && w.MaxRows == 100
		})
		wantEvents(t, evs, "fetches of 100 rows on", 20, func(e *event.Event, w *event.Wire) bool { return e.Query == asyncpgFetch && w.Fetch })
		wantEvents(t, evs, "a cancel", 1, func(e *event.Event, w *event.Wire) bool { return e.Query == sleepQuery && w.Cancel })
	},
	rows:      map[string]int64{asyncpgFetch: 2000},
	cancelled: []string{sleepQuery},
}, {
	name: "psycopg", registry: true,
	command: func(ctx context.Context, t *testing.T, dir string) *exec.Cmd {
		return exec.CommandContext(ctx, installed(t, dir, "venv/bin/python"), driverProgram(t, "psycopg_forms.py"))
	},
	printed: []string{"psycopg binary rows 10 (10, 'v10')", "psycopg pipeline count 2", "psycopg pipeline error 22012",
		"psycopg implicit error 22012", "psycopg after errors 7", "psycopg copy out rows 300", "psycopg copied 600 180300"},
	wire: func(t *testing.T, evs []*event.Event) {
		wantEvents(t, evs, "binary parameters and results", 1, func(e *event.Event, w *event.Wire) bool {
			return strings.HasPrefix(e.Query, "SELECT id, v FROM big WHERE id <= $1") && w.Binary(0) && w.Binary(1) && slices.Contains(w.ResultFormats, 1)
		})
		// Executes sent before another of their batch, the Sync after:
		// the first pipeline's two, executemany's four, the INSERTs
		// before each 1/0.
		wantEvents(t, evs, "pipelined Executes", 2+4+1+1, func(e *event.Event, w *event.Wire) bool { return w.NoSync && w.MaxRows == 0 })
		wantEvents(t, evs, "COPY FROM STDIN with its data", 2, func(e *event.Event, w *event.Wire) bool {
			return len(e.CopyIns()) == 1 && len(e.CopyIns()[0].Data) > 0
		})
	},
	rows: map[string]int64{"SELECT id, v FROM big WHERE id <= $1 AND v <> $2 ORDER BY id": 10},
	// The INSERT after 1/0 in the pipeline: the server discarded it.
	skipped: map[results.MessageSkip]int64{results.MessageSkip(capturefile.SkipDiscarded): 1},
	onTarget: map[string]string{
		"SELECT string_agg(x || ':' || note, ',' ORDER BY x) FROM piped":                         "1:one,2:two,3:many,4:many,5:many,6:many,7:many",
		"SELECT count(*) || ' ' || sum(id) || ' ' || max(v) FILTER (WHERE id > 500) FROM copied": "600 180300 binary 600",
	},
}, {
	name: "node-postgres", registry: true,
	command: func(ctx context.Context, t *testing.T, dir string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, tool(t, "node"), driverProgram(t, "cursor.js"))
		cmd.Env = append(cmd.Env, "NODE_PATH="+installed(t, dir, "node/node_modules"))
		return cmd
	},
	printed: []string{"node cursor rows 2000 reads 21"},
	wire: func(t *testing.T, evs []*event.Event) {
		wantEvents(t, evs, "a cursor read of 100 with Flush", 1, func(e *event.Event, w *event.Wire) bool {
			return e.Query == nodeFetch && !w.Fetch && w.MaxRows == 100 && w.NoSync
		})
	},
	rows: map[string]int64{nodeFetch: 2000},
}, {
	name: "psql",
	command: func(ctx context.Context, t *testing.T, dir string) *exec.Cmd {
		bin, err := pgcluster.FindBinDir("", "psql")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "lo.txt")
		if err := os.WriteFile(file, []byte("from psql"), 0o600); err != nil {
			t.Fatal(err)
		}
		// \; sends both COPYs in one Query message; psql reads each
		// one's data, up to its \., from the script.
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-f", "-")
		cmd.Stdin = strings.NewReader("\\lo_import '" + file + "'\n" +
			"COPY ca FROM STDIN \\; COPY cb FROM STDIN;\n1\n2\n\\.\n3\n4\n5\n\\.\n")
		return cmd
	},
	printed: []string{"lo_import", "COPY 2", "COPY 3"},
	wire: func(t *testing.T, evs []*event.Event) {
		wantEvents(t, evs, "fast-path calls", 4, func(e *event.Event, w *event.Wire) bool { return w.FunctionOID != 0 })
		wantEvents(t, evs, "two COPYs in one string", 1, func(e *event.Event, w *event.Wire) bool { return len(e.CopyIns()) == 2 })
	},
	onTarget: map[string]string{
		loContents: "from psql",
		"SELECT (SELECT string_agg(x::text, ',' ORDER BY x) FROM ca) || '/' || (SELECT string_agg(x::text, ',' ORDER BY x) FROM cb)": "1,2/3,4,5",
	},
}}

// captureEvents decodes the capture in dir into its events.
func captureEvents(t *testing.T, dir string) []*event.Event {
	t.Helper()
	r, err := capturefile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dec := capturefile.NewDecoder(r)
	var evs []*event.Event
	for {
		e, err := dec.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}

// wantEvents fails t unless at least min of evs match, given each
// event's Wire (a zero one for an event without).
func wantEvents(t *testing.T, evs []*event.Event, what string, min int, match func(*event.Event, *event.Wire) bool) {
	t.Helper()
	n := 0
	for _, e := range evs {
		w := e.Wire()
		if w == nil {
			w = &event.Wire{}
		}
		if match(e, w) {
			n++
		}
	}
	if n < min {
		t.Errorf("the capture holds %d events of %s, want at least %d", n, what, min)
	}
}

// TestDrivers is issue 46's acceptance: real drivers, installed from
// their registries by `make test-drivers`, run their protocol forms
// through the capture proxy against cluster A (pgjdbc: a fetch size over
// more rows than it, a large object, a statement cancelled by its
// timeout; asyncpg: a cursor with prefetch, a cancel by timeout;
// psycopg 3: binary parameters, pipeline mode, COPY in and out;
// node-postgres: a cursor read with Flush; psql: \lo_import, two COPYs
// in one string), and the capture is replayed at speed 0 onto B, set up
// as A was before (asyncpg's recording start, asyncpgRecordingStart, is
// a case of its own). pg_stat_statements' calls and rows per query are
// equal on both sides, no answer differs and nothing fails on one side
// only, every capture record is used, and what each driver did shows on
// B. Without PGREHEARSE_DRIVERS the registry drivers' cases skip; psql's
// runs under make test too, PostgreSQL's own client being there.
func TestDrivers(t *testing.T) {
	dir := os.Getenv(driversEnv)
	for _, dc := range driverCases {
		t.Run(dc.name, func(t *testing.T) {
			if dc.registry && dir == "" {
				t.Skip("a real driver from its registry, which make test-drivers installs and runs (" + driversEnv + "=dir)")
			}
			parallelCase(t)
			driverReplay(t, dir, dc)
		})
	}
	t.Run("asyncpg recording start", func(t *testing.T) {
		if dir == "" {
			t.Skip("asyncpg from its registry, which make test-drivers installs and runs (" + driversEnv + "=dir)")
		}
		parallelCase(t)
		asyncpgRecordingStart(t, dir)
	})
}

// asyncpgRecordingStart is issue 77 item 3's acceptance, with asyncpg
// itself (testdata/drivers/asyncpg_start.py): three connections through
// "capture --admin", each having set work_mem and prepared a statement
// as asyncpg does (Parse, Describe, Flush), one inside a transaction;
// a recording starts and the two idle connections run the lookup 200
// times each once it answered: the recording holds the 400 calls, no
// message skipped, and its replay onto B runs them 400 times, as A ran
// them; so does a second recording of the same connections, each having
// prepared another statement so, with all three's 600.
func asyncpgRecordingStart(t *testing.T, dir string) {
	ctx := context.Background()
	a, b := pgssPair(t, "")
	rc := startAdminProxy(t, a.DSN("postgres"))
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	outs := []string{filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")}
	cmd := exec.CommandContext(runCtx, installed(t, dir, "venv/bin/python"), driverProgram(t, "asyncpg_start.py"), outs[0], outs[1])
	cmd.Env = append(os.Environ(), "PGHOST="+rc.host, "PGPORT="+rc.port, "PGUSER="+a.User(), "PGSSLMODE=disable",
		"PGAPPNAME=asyncpg", "PGREHEARSE_ADMIN="+rc.admin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("asyncpg: %v\n%s", err, out)
	}
	t.Logf("asyncpg printed:\n%s", out)
	original := pgssRows(ctx, t, a, "postgres")
	for i, c := range []struct {
		query string
		calls int64
	}{{"SELECT $1::int + 1", 400}, {"SELECT $1::int * 2", 600}} {
		var got int64
		for _, e := range captureEvents(t, outs[i]) {
			if e.Kind == event.Execute && e.Query == c.query && !e.IsFetch() {
				got++
			}
		}
		m, err := capturefile.ReadManifest(outs[i])
		if err != nil {
			t.Fatal(err)
		}
		fp := fingerprint.Compute(c.query)[0].Fingerprint
		mustExec(t, b, "postgres", "SELECT pg_stat_statements_reset()")
		if code, text, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", "--observe=false", outs[i]); res == nil {
			t.Fatalf("replay of r%d exited %d:\n%s", i+1, code, text)
		}
		replayed := pgssRows(ctx, t, b, "postgres")[fp].calls
		t.Logf("r%d: %s sent %d times after the start answered; the recording holds %d, skipped %+v; the source ran it %d times, its replay %d",
			i+1, c.query, c.calls, got, m.SkippedBeforeRecording, original[fp].calls, replayed)
		if got != c.calls || m.SkippedBeforeRecording != (capturefile.SkippedByReason{}) || !m.Complete ||
			original[fp].calls != c.calls || replayed != c.calls {
			t.Errorf("r%d: %s: the recording holds %d calls (skipped %+v, complete %v), the source ran %d, the replay %d: want %d each, none skipped",
				i+1, c.query, got, m.SkippedBeforeRecording, m.Complete, original[fp].calls, replayed, c.calls)
		}
	}
}

// driverReplay runs dc's program through a capture of A, replays the
// capture onto B and checks what TestDrivers says.
func driverReplay(t *testing.T, dir string, dc driverCase) {
	ctx := context.Background()
	a, b := pgssPair(t, driverSetup)

	rc := startCapture(t, a.DSN("postgres"), "--admin", "127.0.0.1:0")
	// Bounded: a driver waiting on an answer the proxy lost must not
	// hang the test until its timeout.
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := dc.command(runCtx, t, dir)
	cmd.Env = append(append(os.Environ(), cmd.Env...), "PGHOST="+rc.host, "PGPORT="+rc.port, "PGUSER="+a.User(),
		"PGDATABASE=postgres", "PGSSLMODE=disable", "PGAPPNAME="+dc.name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", dc.name, err, out)
	}
	t.Logf("%s printed:\n%s", dc.name, out)
	for _, want := range dc.printed {
		if !strings.Contains(string(out), want) {
			t.Errorf("%s printed no %q:\n%s", dc.name, want, out)
		}
	}
	rc.idle(t)
	if code, text := rc.stop(t); code != ExitOK || !strings.Contains(text, ": complete") {
		t.Fatalf("capture exited %d, want a complete capture:\n%s", code, text)
	}
	original := pgssRows(ctx, t, a, "postgres")
	if dc.wire != nil {
		dc.wire(t, captureEvents(t, rc.dir))
	}

	replayDriverCapture(ctx, t, dc, original, b, rc.dir)
}

// replayDriverCapture replays the capture in dir onto b, from a reset
// pg_stat_statements, and checks it against dc and original (A's
// statements) by checkDriverReplay, with the replay's text when that
// check fails.
func replayDriverCapture(ctx context.Context, t *testing.T, dc driverCase, original map[string]callRows, b *pgcluster.Cluster, dir string) {
	t.Helper()
	mustExec(t, b, "postgres", "SELECT pg_stat_statements_reset()")
	code, text, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", "--observe=false", dir)
	if res == nil {
		t.Fatalf("replay exited %d:\n%s", code, text)
	}
	replayed := pgssRows(ctx, t, b, "postgres")
	failed := t.Failed()
	checkDriverReplay(t, dc, original, replayed, res, b)
	if !failed && t.Failed() {
		t.Logf("replay:\n%s", text)
	}
}

// checkDriverReplay compares A's and B's pg_stat_statements and checks
// the replay's result and B's tables against dc.
// preflightStatements are what the replay's pre-flight leaves in the
// target's pg_stat_statements: SELECT 1 as each login, and the two
// statements of catalog.Untracked on the connection that asks the server
// what it is (replayrun.AskServer), whose questions are then untracked.
var preflightStatements = []string{"SELECT 1", "SELECT current_setting('is_superuser') = 'on'", "SET pg_stat_statements.track = none"}

func checkDriverReplay(t *testing.T, dc driverCase, original, replayed map[string]callRows, res *results.Result, b *pgcluster.Cluster) {
	t.Helper()
	// The test's own statements, and the replay's pre-flight's
	// (preflightStatements).
	excluded := fingerprintSet(append([]string{"SELECT pg_stat_statements_reset()", "SELECT calls || ' ' || rows || ' ' || query FROM pg_stat_statements"}, preflightStatements...)...)
	queries := map[string]string{}
	for _, q := range res.Queries {
		queries[q.Fingerprint] = q.Query
	}
	var diffs []string
	compared := 0
	for fp, o := range original {
		if excluded[fp] {
			continue
		}
		compared++
		if r := replayed[fp]; r != o {
			diffs = append(diffs, fmt.Sprintf("%s: source %+v, target %+v (%.80q)", fp, o, r, queries[fp]))
		}
	}
	for fp, r := range replayed {
		if _, ok := original[fp]; !ok && !excluded[fp] {
			diffs = append(diffs, fmt.Sprintf("%s: source none, target %+v (%.80q)", fp, r, queries[fp]))
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Errorf("pg_stat_statements by fingerprint: %s", d)
	}
	if compared == 0 {
		t.Error("no query in the source's pg_stat_statements: the driver ran nothing")
	}
	t.Logf("%s: %d queries' pg_stat_statements compared; replay: %d statements, %d answers compared, %d messages",
		dc.name, compared, res.Statements.Total, res.Outcomes.Answered, res.Messages.Total)

	if o := res.Outcomes; o.AnswerDiffers != 0 || o.FailedOnlyOnTarget != 0 || o.FailedOnlyInOriginal != 0 || o.Answered == 0 {
		t.Errorf("outcomes %+v: want answers compared, none differing, none failing on one side only", o)
	}
	if s := res.Statements; s.SkippedTotal() != 0 {
		t.Errorf("statements skipped: %v, want none", s.Skipped)
	}
	if m := res.Messages; m == nil || m.Total == 0 || m.Total != m.Used+m.SkippedTotal() || !maps.Equal(m.Skipped, dc.skipped) && len(m.Skipped)+len(dc.skipped) > 0 {
		t.Errorf("messages %+v: want every capture record used but %v", m, dc.skipped)
	}
	byFP := map[string]querystats.Row{}
	for _, q := range res.Queries {
		byFP[q.Fingerprint] = q
	}
	for query, rows := range dc.rows {
		if q := byFP[fingerprint.Compute(query)[0].Fingerprint]; q.Calls != 1 || q.Rows != rows || q.Answered != 1 || len(q.AnswerDiffers) != 0 {
			t.Errorf("the replay's %s: %d calls, %d rows, %d answered, differing %v; want 1, %d, 1, none", query, q.Calls, q.Rows, q.Answered, q.AnswerDiffers, rows)
		}
	}
	for _, query := range dc.cancelled {
		if q := byFP[fingerprint.Compute(query)[0].Fingerprint]; q.ErrorsBySQLState["57014"] != 1 {
			t.Errorf("%s on the target: errors %v, want one 57014 (cancelled as the original was)", query, q.ErrorsBySQLState)
		}
	}
	for q, want := range dc.onTarget {
		if got := queryLines(t, b, "postgres", q); len(got) != 1 || got[0] != want {
			t.Errorf("%s on the target: %q, want %q", q, got, want)
		}
	}
}

// TestCapturePipelineImplicitTransaction is what TestDrivers' psycopg
// case found, at the message level for make test: Executes pipelined
// before one Sync outside a transaction block are one implicit
// transaction, so an error in the last rolls back the ones before it,
// a named statement's first use among them included. The replay must
// send them so too: the INSERTs before the error are not on the target,
// the pipeline that succeeds is, and no answer differs.
func TestCapturePipelineImplicitTransaction(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	a, b := pgssPair(t, "CREATE TABLE piped (x int PRIMARY KEY)")
	rc := startCapture(t, a.DSN("postgres"), "--admin", "127.0.0.1:0")
	c := newProtoClient(ctx, t, rc.dsn(a.User(), "postgres"))
	conn, f := c.conn, c.conn.Frontend()
	// Each of batch is a statement's name, its text and its parameter.
	pipeline := func(batch ...[3]string) string {
		for _, q := range batch {
			f.Send(&pgproto3.Parse{Name: q[0], Query: q[1]})
			f.Send(&pgproto3.Bind{PreparedStatement: q[0], Parameters: [][]byte{[]byte(q[2])}})
			f.Send(&pgproto3.Execute{})
		}
		f.Send(&pgproto3.Sync{})
		return c.until(nil)
	}
	const insert = "INSERT INTO piped VALUES ($1)"
	// A named statement first used in the middle of the batch: the
	// replay prepares it without ending the batch.
	if code := pipeline([3]string{"", insert, "200"}, [3]string{"S_1", insert, "201"}, [3]string{"", "SELECT 1 / $1::int", "0"}); code != "22012" {
		t.Fatalf("the failing pipeline: %q, want 22012", code)
	}
	if code := pipeline([3]string{"", insert, "300"}, [3]string{"", insert, "301"}); code != "" {
		t.Fatalf("the pipeline that succeeds: %q", code)
	}
	const after = "SELECT string_agg(x::text, ',' ORDER BY x) FROM piped"
	if code := c.simple(after); code != "" {
		t.Fatal(code)
	}
	conn.Close(ctx)
	rc.idle(t)
	rc.stopOK(t)
	original := pgssRows(ctx, t, a, "postgres")
	if o := original[fingerprint.Compute(insert)[0].Fingerprint]; o.calls != 4 {
		t.Errorf("the INSERT on the source: %+v, want 4 calls (two rolled back)", o)
	}
	replayDriverCapture(ctx, t, driverCase{name: "pipeline", onTarget: map[string]string{after: "300,301"}}, original, b, rc.dir)
}
