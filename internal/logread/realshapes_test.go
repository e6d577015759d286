package logread

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// The tests in this file read logs as servers really write them (issue
// 19): each shape comes from a real PostgreSQL started for the test, and
// is changed afterwards only where a server cannot be made to write it
// (a quote lost from a csvlog, a last newline missing, a blank line): the
// change is then said where it is made.

// logOf starts a server with settings (logging to files), runs run on a
// connection, stops the server and returns its log files by extension
// ("log", "csv", "json").
func logOf(t *testing.T, settings map[string]string, run func(ctx context.Context, c *pgcluster.Cluster, conn *pgconn.PgConn)) map[string]string {
	t.Helper()
	s := map[string]string{
		"logging_collector":          "on",
		"log_destination":            "stderr",
		"log_min_duration_statement": "0",
		"log_connections":            "on",
		"log_disconnections":         "on",
		"log_rotation_age":           "0",
		"log_rotation_size":          "0",
	}
	for k, v := range settings {
		s[k] = v
	}
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: s})
	ctx := context.Background()
	conn := pgclustertest.PgConn(ctx, t, c.DSN("postgres")+" application_name=shapes")
	run(ctx, c, conn)
	conn.Close(ctx)
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	logs := map[string]string{}
	for _, ext := range []string{"log", "csv", "json"} {
		files, err := c.LogFiles("*." + ext)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) > 1 {
			t.Fatalf("%d .%s files, want one: %v", len(files), ext, files)
		}
		if len(files) == 1 {
			logs[ext] = files[0]
		}
	}
	return logs
}

// exec runs sql on conn, failing the test on an error unless it is the
// SQLSTATE expected.
func execSQL(t *testing.T, ctx context.Context, conn *pgconn.PgConn, sql, wantState string) {
	t.Helper()
	_, err := conn.Exec(ctx, sql).ReadAll()
	var pgErr *pgconn.PgError
	switch {
	case err == nil && wantState == "":
	case err != nil && wantState != "" && errorAs(err, &pgErr) && pgErr.Code == wantState:
	default:
		t.Fatalf("%q: %v, want SQLSTATE %q", sql, err, wantState)
	}
}

func errorAs(err error, target **pgconn.PgError) bool {
	pe, ok := err.(*pgconn.PgError)
	if ok {
		*target = pe
	}
	return ok
}

// statements returns the statements (and executes) of evs, own sessions
// included.
func statements(evs []*event.Event) []*event.Event {
	var out []*event.Event
	for _, ev := range evs {
		if ev.IsExecution() {
			out = append(out, ev)
		}
	}
	return out
}

// copyTo writes b to a file of the test's own and returns its path.
func copyTo(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrefixWithoutTime reads a log whose prefix has no time (Cloud SQL's
// "[%p]: [%l-1] db=%d,user=%u "): every statement is read with its
// duration and a Time of 0, never before the epoch (which an analysis
// filters as outside its window), and the reader says the log has no
// time for a replay to refuse it. The same log then ends without its last
// newline, as a log downloaded from Amazon RDS does, and with a blank
// line: the last line is read, the blank one is no unreadable line.
func TestPrefixWithoutTime(t *testing.T) {
	t.Parallel()
	const n = 20
	logs := logOf(t, map[string]string{"log_line_prefix": "[%p]: [%l-1] db=%d,user=%u "}, func(ctx context.Context, c *pgcluster.Cluster, conn *pgconn.PgConn) {
		for i := range n {
			execSQL(t, ctx, conn, fmt.Sprintf("SELECT %d", i), "")
		}
	})
	evs, r := readAllEvents(t, logs["log"], Options{})
	if r.Timing() != TimingNone {
		t.Errorf("Timing() = %s, want none", r.Timing())
	}
	if _, _, ok := r.TimeRange(); ok {
		t.Errorf("a time range for a log without times")
	}
	var selects []*event.Event
	for _, ev := range statements(evs) {
		if ev.Time != 0 {
			t.Errorf("%q: time %d, want 0", ev.Query, ev.Time)
		}
		if ev.Application == "shapes" || strings.HasPrefix(ev.Query, "SELECT ") && ev.Duration >= 0 {
			selects = append(selects, ev)
		}
	}
	if len(selects) != n {
		t.Fatalf("%d statements with a duration, want %d", len(selects), n)
	}
	if u := r.Counters().Unparseable(); u != 0 {
		t.Errorf("%d unparseable lines: %v", u, r.Counters().Samples)
	}

	b, err := os.ReadFile(logs["log"])
	if err != nil {
		t.Fatal(err)
	}
	// The last line is the server's own ("database system is shut
	// down"); the statements' lines come before it.
	lastStmt := bytes.LastIndex(b, []byte("statement: SELECT "))
	cut := b[:bytes.IndexByte(b[lastStmt:], '\n')+lastStmt] // without the newline of the last statement's line
	t.Run("no final newline", func(t *testing.T) {
		evs, r := readAllEvents(t, copyTo(t, "cut.log", cut), Options{})
		got := 0
		for _, ev := range statements(evs) {
			if strings.HasPrefix(ev.Query, "SELECT ") && ev.Duration >= 0 {
				got++
			}
		}
		if got != n {
			t.Errorf("%d statements, want %d: the last line, without its newline, is lost", got, n)
		}
		if c := r.Counters(); c.Skipped[SkipTruncated] != 0 || c.Unparseable() != 0 {
			t.Errorf("skipped %v", c.Skipped)
		}
	})
	t.Run("blank lines", func(t *testing.T) {
		blank := append(append([]byte("\n"), b...), "\n  \n"...)
		_, r := readAllEvents(t, copyTo(t, "blank.log", blank), Options{})
		if c := r.Counters(); c.Skipped[SkipBlank] != 3 || c.Unparseable() != 0 {
			t.Errorf("skipped %v, want 3 blank lines and none unparseable", c.Skipped)
		}
	})
}

// TestSeverityAfterPrefixWithoutSpace reads a log whose prefix ends in a
// value, with no space before the severity ("user=%u,db=%d" writes
// "user=alice,db=shopLOG:  ..."): the prefix is inferred, and matched
// whether inferred or given.
func TestSeverityAfterPrefixWithoutSpace(t *testing.T) {
	t.Parallel()
	const p = "user=%u,db=%d"
	const n = 10
	logs := logOf(t, map[string]string{"log_line_prefix": p}, func(ctx context.Context, c *pgcluster.Cluster, conn *pgconn.PgConn) {
		for i := range n {
			execSQL(t, ctx, conn, fmt.Sprintf("SELECT %d AS glued", i), "")
		}
	})
	b, _ := os.ReadFile(logs["log"])
	if !bytes.Contains(b, []byte(",db=postgresLOG:  duration: ")) {
		t.Fatalf("the server did not glue the severity to the prefix:\n%s", b)
	}
	for _, opts := range []Options{{}, {Prefix: p}} {
		evs, r := readAllEvents(t, logs["log"], opts)
		if r.Prefix() != p {
			t.Errorf("prefix %q, want %q", r.Prefix(), p)
		}
		got := 0
		for _, ev := range statements(evs) {
			if strings.HasSuffix(ev.Query, " AS glued") {
				got++
				if ev.User != "postgres" || ev.Database != "postgres" {
					t.Errorf("%q: user %q database %q", ev.Query, ev.User, ev.Database)
				}
			}
		}
		if got != n {
			t.Errorf("--prefix %q: %d statements, want %d", opts.Prefix, got, n)
		}
		if u := r.Counters().Unparseable(); u != 0 {
			t.Errorf("--prefix %q: %d unparseable lines: %v", opts.Prefix, u, r.Counters().Samples)
		}
	}
}

// TestMemoryContextDumpFromServer has a real server run out of memory: a
// backend whose address space is limited (prlimit) fails to allocate, and
// PostgreSQL writes its memory contexts to stderr, without a prefix, a
// line each, before the "out of memory" ERROR. The dump's lines are
// counted as the server's own unprefixed output, never as unreadable,
// and the statements before and after it are read whole.
func TestMemoryContextDumpFromServer(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to limit a backend's memory: %v", err)
	}
	logs := logOf(t, map[string]string{"log_line_prefix": "%m [%p] %q%u@%d "}, func(ctx context.Context, c *pgcluster.Cluster, conn *pgconn.PgConn) {
		execSQL(t, ctx, conn, "SELECT 'before the dump'", "")
		// Limit the backend's address space to what it uses, and 30 MB.
		res, err := conn.Exec(ctx, "SELECT pg_backend_pid()").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		pid := string(res[0].Rows[0][0])
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			t.Fatal(err)
		}
		var vmKB int64
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmSize:" {
				vmKB, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
		limit := vmKB*1024 + 30<<20
		cmd := exec.CommandContext(ctx, prlimit, "--pid", pid, "--as="+strconv.FormatInt(limit, 10))
		// As the server's user: lowering another user's limits takes a
		// capability that a container may not have.
		var st syscall.Stat_t
		if err := syscall.Stat(c.DataDir(), &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != os.Getuid() {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("prlimit: %v\n%s", err, out)
		}
		execSQL(t, ctx, conn, "SELECT length(repeat('x', 200000000))", "53200")
		execSQL(t, ctx, conn, "SELECT 'after the dump'", "")
	})
	b, err := os.ReadFile(logs["log"])
	if err != nil {
		t.Fatal(err)
	}
	// The dump: every line that does not start with the prefix's time.
	dump := 0
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !strings.HasPrefix(l, "20") && !strings.HasPrefix(l, "\t") {
			dump++
		}
	}
	if dump < 20 || !bytes.Contains(b, []byte("\nTopMemoryContext: ")) || !bytes.Contains(b, []byte("\nGrand total: ")) {
		t.Fatalf("no memory-context dump in the log (%d lines without prefix):\n%s", dump, b)
	}
	evs, r := readAllEvents(t, logs["log"], Options{})
	c := r.Counters()
	if c.Skipped[SkipUnprefixed] != int64(dump) || c.Unparseable() != 0 {
		t.Errorf("skipped %v, want the dump's %d lines as %q and none unparseable; samples %v", c.Skipped, dump, SkipUnprefixed, c.Samples)
	}
	var before, after, failed bool
	for _, ev := range evs {
		switch {
		case ev.Query == "SELECT 'before the dump'" && ev.Duration >= 0:
			before = true
		case ev.Query == "SELECT 'after the dump'" && ev.Duration >= 0:
			after = true
		case ev.Kind == event.Statement && ev.Failed && ev.ErrorMessage() == "out of memory" && ev.Query == "SELECT length(repeat('x', 200000000))":
			failed = true
		}
	}
	if !before || !after || !failed {
		t.Errorf("statements read whole: before %v, after %v, the failed one %v", before, after, failed)
	}
	// What the server said of itself at startup.
	o := r.Origin()
	if len(o.Ports) != 1 || len(o.Versions) != 1 || !strings.HasPrefix(o.Versions[0], "PostgreSQL ") {
		t.Errorf("origin %+v, want one port and one version", o)
	}
	if first, last, ok := r.TimeRange(); !ok || last < first || r.Timing() != TimingFraction {
		t.Errorf("time range %d..%d %v, timing %s", first, last, ok, r.Timing())
	}
}

// TestBrokenCSVQuoteFromServer reads a large real csvlog with one quote
// lost at 92% of the file (the closing quote of a statement's message: a
// record cut where its writer stopped looks the same). The reader takes
// the next line that starts a record as the next record: one record is
// lost, counted as malformed with its line, and the others are read.
func TestBrokenCSVQuoteFromServer(t *testing.T) {
	t.Parallel()
	const n = 3000
	logs := logOf(t, map[string]string{"log_destination": "csvlog"}, func(ctx context.Context, c *pgcluster.Cluster, conn *pgconn.PgConn) {
		for i := range n {
			// Multi-line text in quotes, as real statements have.
			execSQL(t, ctx, conn, fmt.Sprintf("SELECT %d AS n,\n  'row \"%d\"' AS label", i, i), "")
		}
	})
	b, err := os.ReadFile(logs["csv"])
	if err != nil {
		t.Fatal(err)
	}
	count := func(path string) (int, *Reader) {
		evs, r := readAllEvents(t, path, Options{})
		got := 0
		for _, ev := range statements(evs) {
			if strings.HasSuffix(ev.Query, " AS label") {
				got++
			}
		}
		return got, r
	}
	if got, _ := count(logs["csv"]); got != n {
		t.Fatalf("the intact log has %d statements, want %d", got, n)
	}
	// The record at 92%: drop the quote that closes its message.
	at := len(b) * 92 / 100
	start := at + bytes.Index(b[at:], []byte("\n20")) + 1
	end := start + bytes.Index(b[start:], []byte(` AS label",`)) + len(` AS label`)
	if b[end] != '"' {
		t.Fatalf("no closing quote at %d: %q", end, b[start:end+2])
	}
	broken := append(bytes.Clone(b[:end]), b[end+1:]...)
	line := int64(bytes.Count(b[:start], []byte("\n"))) + 1
	got, r := count(copyTo(t, "broken.csv", broken))
	if got != n-1 {
		t.Errorf("%d of %d statements read (%.2f%%), want all but the broken one", got, n, 100*float64(got)/n)
	}
	c := r.Counters()
	recLines := int64(bytes.Count(b[start:end], []byte("\n"))) + 1
	if c.Skipped[SkipMalformed] != recLines || c.Samples[SkipMalformed].Line != line {
		t.Errorf("malformed %d lines, first at %d; want the broken record's %d lines at line %d", c.Skipped[SkipMalformed], c.Samples[SkipMalformed].Line, recLines, line)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, fmt.Sprintf("line %d: ", line)) {
		t.Errorf("no warning names line %d: %q", line, w)
	}
}

// TestSyslogNewYear reads RFC 3164 syslog lines (no year) across a new
// year, with a line of December 31 that arrives after one of January 1:
// syslog daemons write their senders' lines as they come. Crafted after
// testdata/syslog/bsd.log (rsyslog's default format): a server cannot be
// made to log across a new year in a test. The late line is of the year
// before, and the lines after it stay in the new year.
func TestSyslogNewYear(t *testing.T) {
	lines := []struct{ stamp, sql string }{
		{"Dec 31 23:59:58", "SELECT 1"},
		{"Jan  1 00:00:01", "SELECT 2"},
		{"Dec 31 23:59:59", "SELECT 3"}, // late
		{"Jan  1 00:00:02", "SELECT 4"},
		{"Jan  1 00:00:03", "SELECT 5"},
	}
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%s vm postgres[32210]: [%d-1] user=app,db=shop LOG:  duration: 0.100 ms  statement: %s\n", l.stamp, i+3, l.sql)
	}
	evs, r := readAllEvents(t, copyTo(t, "newyear.log", []byte(b.String())), Options{Year: 2025})
	want := []int{2025, 2026, 2025, 2026, 2026}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, ev := range evs {
		if y := time.UnixMicro(ev.Time + ev.Duration).UTC().Year(); y != want[i] {
			t.Errorf("%q: year %d, want %d", ev.Query, y, want[i])
		}
	}
	if o := r.Origin(); len(o.Hosts) != 1 || o.Hosts[0] != "vm" {
		t.Errorf("hosts %q, want [vm]", o.Hosts)
	}
}

// TestOriginOfMessages reads what messages say of the server: crafted
// lines with PostgreSQL 15's messages (src/backend/postmaster/postmaster.c,
// src/backend/access/transam/xlogreader.c).
func TestOriginOfMessages(t *testing.T) {
	const log = `2026-11-22 08:11:00.000 UTC [10] LOG:  starting PostgreSQL 15.4 (Debian 15.4-1.pgdg120+1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit
2026-11-22 08:11:00.001 UTC [10] LOG:  listening on IPv4 address "0.0.0.0", port 5433
2026-11-22 08:11:00.002 UTC [10] LOG:  listening on IPv6 address "::", port 5433
2026-11-22 08:11:00.003 UTC [10] LOG:  listening on Unix socket "/var/run/postgresql/.s.PGSQL.5433"
2026-11-22 08:11:01.000 UTC [12] LOG:  WAL file is from different database system: WAL file database system identifier is 7001, pg_control database system identifier is 7312345678901234567
2026-11-22 08:11:02.000 UTC [13] LOG:  duration: 0.100 ms  statement: SELECT 1
`
	_, r := readAllEvents(t, copyTo(t, "origin.log", []byte(log)), Options{})
	o := r.Origin()
	if fmt.Sprint(o.Ports) != "[5433]" || o.SystemID != "7312345678901234567" || len(o.Versions) != 1 ||
		o.Versions[0] != "PostgreSQL 15.4 (Debian 15.4-1.pgdg120+1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit" {
		t.Errorf("origin %+v", o)
	}
	first, last, ok := r.TimeRange()
	if !ok || time.UnixMicro(first).UTC().Second() != 0 || time.UnixMicro(last).UTC().Second() != 2 {
		t.Errorf("time range %v..%v", time.UnixMicro(first).UTC(), time.UnixMicro(last).UTC())
	}
}

// TestUnprefixedShapes checks the lines taken for the server's own output
// without prefix, as PostgreSQL writes them (see unprefixed.go), and
// lines that are not.
func TestUnprefixedShapes(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"TopMemoryContext: 97680 total in 5 blocks; 14896 free (10 chunks); 82784 used", true},
		{"    index info: 2048 total in 2 blocks; 496 free (1 chunks); 1552 used: pg_db_role_setting_databaseid_rol_index", true},
		{"    12 more child contexts containing 24576 total in 22 blocks; 9320 free (13 chunks); 15256 used", true},
		{"  Tuple sort: 32768 total in 3 blocks (5 chunks); 1024 free (0 chunks); 31744 used", true},
		{"  Slab: 8192 total in 1 blocks; 2 empty blocks; 1024 free (8 chunks); 7168 used", true},
		{"Grand total: 1119392 bytes in 181 blocks; 276432 free (125 chunks); 842960 used", true},
		{`TRAP: failed Assert("false"), File: "xact.c", Line: 1234, PID: 4242`, true},
		{`TRAP: FailedAssertion("false", File: "xact.c", Line: 1234, PID: 4242)`, true},
		{"postgres: app shop [local] SELECT(ExceptionalCondition+0x9e)[0x55d0c3a1b2ce]", true},
		{"/usr/lib/postgresql/15/bin/postgres(+0x3f1a2b)[0x55d0c35f1a2b]", true},
		{"2026-11-22 08:11:02.123 UTC [1] LOG:  statement: SELECT 1", false},
		{"        LIMIT 1000", false},
		{"total in 5 blocks", false},
		{"a[0x1]", false},
		{"", false},
	} {
		if got := unprefixed([]byte(tc.line)); got != tc.want {
			t.Errorf("unprefixed(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// TestProbeLog probes the head and tail of a log without reading it
// whole: its first and last times, and the server its lines show (the
// syslog host), whole for a plain file, the head only when compressed.
func TestProbeLog(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	var b strings.Builder
	const n = 40000 // some 4 MB: more than the head and tail probed
	for i := range n {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		fmt.Fprintf(&b, "%s db1 postgres[%d]: [%d-1] user=app,db=shop LOG:  duration: 0.100 ms  statement: SELECT %d /* padding to make the line longer */\n",
			at.Format("2006-01-02T15:04:05.000000Z07:00"), 100+i%7, i/7+1, i)
	}
	last := t0.Add(time.Duration(n-1) * 10 * time.Millisecond)
	path := copyTo(t, "probe.log", []byte(b.String()))
	p, err := ProbeLog(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Whole || p.First != t0.UnixMicro() || p.Last != last.UnixMicro() || p.Timing != TimingFraction || fmt.Sprint(p.Origin.Hosts) != "[db1]" {
		t.Errorf("probe %+v: want %v..%v, whole, host db1", p, t0, last)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(b.String()))
	zw.Close()
	pz, err := ProbeLog(copyTo(t, "probe.log.gz", z.Bytes()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pz.Whole || pz.First != t0.UnixMicro() || pz.Last >= last.UnixMicro() || pz.Last <= pz.First {
		t.Errorf("compressed probe %+v: want its head only", pz)
	}
}

// TestEnvelopeHeadCut reads a syslog log whose head, the part the format
// is told from, ends in the middle of a line, right after its ISO time:
// the cut line reads as an ISO time column but not as syslog, and must
// not tip the envelope to the wrong one.
func TestEnvelopeHeadCut(t *testing.T) {
	line := func(i int, pad string) string {
		return fmt.Sprintf("2026-11-22T08:00:%02d.000000Z db1 postgres[100]: [%05d-1] user=app,db=shop LOG:  duration: 0.100 ms  statement: SELECT %d /* a comment to make the line as long as real ones are */%s\n", i%60, i+1, i%10, pad)
	}
	l := len(line(1, ""))
	var b strings.Builder
	// The head ends 30 bytes into a line: after its time and host.
	b.WriteString(line(0, strings.Repeat(" ", (detectSize-30)%l)))
	for i := 1; b.Len() < detectSize+10*l; i++ {
		b.WriteString(line(i, ""))
	}
	s := b.String()
	if cut := s[detectSize-30 : detectSize]; !strings.HasPrefix(cut, "2026-11-22T") {
		t.Fatalf("the head does not end after a time: %q", cut)
	}
	_, r := readAllEvents(t, copyTo(t, "cut.log", []byte(s)), Options{})
	if r.Layout() != "stderr lines in syslog" || r.Counters().Unparseable() != 0 {
		t.Errorf("layout %q, skipped %v", r.Layout(), r.Counters().Skipped)
	}
}

// TestTiming checks how each shape of log times its lines: what a replay
// needs to keep the log's pace.
func TestTiming(t *testing.T) {
	const msg = "LOG:  duration: 0.100 ms  statement: SELECT 1\n"
	for _, tc := range []struct {
		name, log string
		want      Timing
	}{
		{"%m", "2026-11-22 08:11:02.123 UTC [1] " + msg, TimingFraction},
		{"%t", "2026-11-22 08:11:02 UTC [1] " + msg, TimingSeconds},
		{"%n", "1795335062.123 [1] " + msg, TimingFraction},
		{"no time", "[1]: [1-1] db=a,user=b " + msg, TimingNone},
		{"syslog", "Nov 22 08:11:02 vm postgres[1]: [1-1] db=a " + msg, TimingSeconds},
		{"syslog precise", "Nov 22 08:11:02.123456 vm postgres[1]: [1-1] db=a " + msg, TimingFraction},
		{"syslog with %m", "Nov 22 08:11:02 vm postgres[1]: [1-1] 2026-11-22 08:11:02.123 UTC db=a " + msg, TimingFraction},
		{"csvlog", `2026-11-22 08:11:02.123 UTC,"a","b",1,"[local]",6383b33a.1,1,"SELECT",2026-11-22 08:10:00 UTC,3/7,0,LOG,00000,"duration: 0.100 ms  statement: SELECT 1",,,,,,,,,"psql","client backend",,0` + "\n", TimingFraction},
		{"jsonlog", jsonTestRec(`"message":"duration: 0.100 ms  statement: SELECT 1"`) + "\n", TimingFraction},
	} {
		r, err := NewReader(strings.NewReader(tc.log), tc.name, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := r.Timing(); got != tc.want {
			t.Errorf("%s: timing %s, want %s", tc.name, got, tc.want)
		}
	}
}
