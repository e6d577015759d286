package logread

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread/logreadtest"
)

// fixtureCase is what reading one shared fixture must give. Counts:
// execs are Statement and Execute events, timed those of them with a
// duration, errors the Error events (ERROR, FATAL and PANIC messages).
type fixtureCase struct {
	file string
	opts Options
	// err, when set, is the error Open or Next must return (errors.Is).
	err error

	format Format
	prefix string // the prefix the reader used, given or detected
	execs  int
	timed  int
	errors int

	// pgbadger 13.2's "queries" and "errors" for the file, from
	// pgbadger-13.2-summary.tsv (checked against it below). pgbadger counts
	// every statement it saw in "queries", with or without a duration, and
	// adds its "EVENTLOG" messages (server start and stop, "database system
	// was shut down", ...) to "errors"; where the numbers differ, the
	// comment of the case says which is right.
	pgbQueries, pgbErrors int
}

// fixtureCases covers every file of the shared fixtures directory, so that
// a new fixture fails the test until it is given a row.
var fixtureCases = []fixtureCase{
	// csvlog.
	{file: "anonymize.log", format: FormatCSV, execs: 5, timed: 5, pgbQueries: 5},
	{file: "weeknumber.log", format: FormatCSV, execs: 6, timed: 6, pgbQueries: 6},
	// Its time field is quoted ("2026-05-16 05:11:50.269 UTC",...), which
	// format detection must still take for csvlog. One "duration: ...
	// execute" and one log_statement "statement:" without a duration:
	// pgbadger's 2 queries are both executions, 1 of them timed.
	{file: "csv_statement_without_duration.log", format: FormatCSV, execs: 2, timed: 1, pgbQueries: 2},

	// jsonlog.
	{file: "pg_vacuums.json.gz", format: FormatJSON},
	// One log_statement "statement: SELECT *  FROM t1" without a duration
	// (grep duration finds nothing): one execution, none timed. pgbadger
	// counts it as a query. Errors: 4 FATAL (severity ALERT in the Cloud
	// Logging wrapper); pgbadger's 5th is an EVENTLOG.
	{file: "cloudsql.log.gz", format: FormatJSON, prefix: cloudSQLPrefixes, execs: 1, timed: 0, errors: 4, pgbQueries: 1, pgbErrors: 5},
	// 400 "duration: ... statement/execute" records, as pgbadger says; the
	// 4 other executions are the failing statements of the 4 ERRORs. Errors:
	// 4 ERROR + 1 FATAL; pgbadger adds 1 EVENTLOG.
	{file: "cnpg.log.gz", format: FormatJSON, execs: 404, timed: 400, errors: 5, pgbQueries: 400, pgbErrors: 6},

	// stderr, with the README's prefix.
	{file: "begin_end.log", opts: Options{Prefix: logreadtest.ReadmePrefixes["begin_end.log"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["begin_end.log"]},
	// pgbadger's error is the EVENTLOG "database system was shut down" on
	// line 1; the file has no ERROR, FATAL or PANIC.
	{file: "light.postgres.log.bz2", opts: Options{Prefix: logreadtest.ReadmePrefixes["light.postgres.log.bz2"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["light.postgres.log.bz2"],
		execs: 629, timed: 629, pgbQueries: 629, pgbErrors: 1},
	// 3 statements and 2 executes with durations; the parse and the two
	// binds are not executions.
	{file: "multiline_param.log", opts: Options{Prefix: logreadtest.ReadmePrefixes["multiline_param.log"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["multiline_param.log"],
		execs: 5, timed: 5, pgbQueries: 5},
	{file: "pg-timezones.log", opts: Options{Prefix: logreadtest.ReadmePrefixes["pg-timezones.log"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["pg-timezones.log"],
		execs: 2, timed: 2, pgbQueries: 2},
	// 1 FATAL and 2 ERRORs; pgbadger adds 1 EVENTLOG. The 2 ERRORs have a
	// STATEMENT: 2 failed executions without duration, which pgbadger does
	// not count as queries.
	{file: "pg_rawcsv.log", opts: Options{Prefix: logreadtest.ReadmePrefixes["pg_rawcsv.log"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["pg_rawcsv.log"],
		execs: 2, timed: 0, errors: 3, pgbQueries: 0, pgbErrors: 4},
	{file: "pg_vacuums.log.gz", opts: Options{Prefix: logreadtest.ReadmePrefixes["pg_vacuums.log.gz"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["pg_vacuums.log.gz"]},
	{file: "postgresql_param_range.log", opts: Options{Prefix: logreadtest.ReadmePrefixes["postgresql_param_range.log"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["postgresql_param_range.log"],
		execs: 3, timed: 3, pgbQueries: 3},
	// 20 timed statements as pgbadger says, plus the failing statements of
	// the 3 ERRORs; pgbadger's 4th error is an EVENTLOG.
	{file: "queryid.log.gz", opts: Options{Prefix: logreadtest.ReadmePrefixes["queryid.log.gz"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["queryid.log.gz"],
		execs: 23, timed: 20, errors: 3, pgbQueries: 20, pgbErrors: 4},
	{file: "stmt_type.log", opts: Options{Prefix: logreadtest.ReadmePrefixes["stmt_type.log"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["stmt_type.log"],
		execs: 12, timed: 12, pgbQueries: 12},
	// No ERROR, FATAL or PANIC: pgbadger's 2 errors are the EVENTLOGs
	// "unexpected EOF on client connection".
	{file: "tempfile_only.log.gz", opts: Options{Prefix: logreadtest.ReadmePrefixes["tempfile_only.log.gz"]}, format: FormatStderr, prefix: logreadtest.ReadmePrefixes["tempfile_only.log.gz"],
		execs: 65, timed: 65, pgbQueries: 65, pgbErrors: 2},

	// RDS: its prefix is one of the common ones. 2 FATALs; pgbadger adds 1
	// EVENTLOG.
	{file: "rds.log.bz2", format: FormatStderr, prefix: "%t:%r:%u@%d:[%p]:", execs: 114594, timed: 114594, errors: 2, pgbQueries: 114594, pgbErrors: 3},

	// syslog (rsyslog's default format, with the server's "[7-1]" part
	// numbers) and Heroku's logplex: the envelope is taken off and the
	// parts joined. syslog: pgbadger's 59871 queries, all timed. logplex:
	// 4 timed statements as pgbadger says, and the statement of the
	// deadlock ERROR; pgbadger's other 2 errors are EVENTLOGs.
	{file: "pg-syslog.1.bz2", opts: Options{Year: 2019}, format: FormatSyslog, prefix: "db=%d,user=%u,app=%a,client=%h ", execs: 59871, timed: 59871, pgbQueries: 59871, pgbErrors: 2},
	{file: "pg-syslog.2.gz", opts: Options{Year: 2019}, format: FormatSyslog, prefix: "db=%d,user=%u,app=%a,client=%h ", execs: 59871, timed: 59871, pgbQueries: 59871, pgbErrors: 2},
	{file: "logplex.gz", format: FormatSyslog, prefix: " sql_error_code = %e ", execs: 5, timed: 4, errors: 1, pgbQueries: 4, pgbErrors: 3},

	// Not logs the tool reads: pgbouncer (the first 300 lines of each
	// file), and the counts pgbadger made of these files.
	{file: "pgbouncer.log.gz", err: ErrPgbouncer},
	{file: "pgbouncer.1.21.log.gz", err: ErrPgbouncer},
	{file: "pgbadger-13.2-summary.tsv", err: ErrNotALog},
}

// TestSharedFixtures reads every shared fixture: no panic, a clean error
// for what is not supported, and otherwise every line accounted for and
// the expected number of executions and errors.
func TestSharedFixtures(t *testing.T) {
	entries, err := os.ReadDir(sharedFixtures)
	if err != nil {
		t.Fatal(err)
	}
	covered := make(map[string]bool)
	for _, c := range fixtureCases {
		covered[c.file] = true
	}
	for _, e := range entries {
		if !covered[e.Name()] {
			t.Errorf("fixture %s has no row in fixtureCases", e.Name())
		}
	}
	summary := readPgbadgerSummary(t)
	for _, c := range fixtureCases {
		if c.err == nil {
			s, ok := summary[c.file]
			if !ok {
				t.Errorf("%s: not in the pgbadger summary", c.file)
			} else if s[0] != c.pgbQueries || s[1] != c.pgbErrors {
				t.Errorf("%s: the table says pgbadger counted %d queries and %d errors, the summary says %d and %d", c.file, c.pgbQueries, c.pgbErrors, s[0], s[1])
			}
		}
	}
	var failing []string
	for _, c := range fixtureCases {
		name := c.file
		if c.opts.Format != "" || c.opts.Prefix != "" {
			name += "/" + string(c.opts.Format) + c.opts.Prefix
		}
		t.Run(name, func(t *testing.T) {
			got, err := readFixtureCounts(t, c.file, c.opts)
			if err != nil {
				failing = append(failing, c.file)
			}
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.format != c.format || got.prefix != c.prefix {
				t.Errorf("format %s prefix %q, want %s %q", got.format, got.prefix, c.format, c.prefix)
			}
			if got.execs != c.execs || got.timed != c.timed || got.errors != c.errors {
				t.Errorf("%d executions (%d timed), %d errors; want %d (%d), %d", got.execs, got.timed, got.errors, c.execs, c.timed, c.errors)
			}
			// Every Error event is a failed execution's or outside any
			// statement, so that an analysis's errors add up.
			if got.errors != got.failed+got.outside {
				t.Errorf("%d errors, %d failed executions + %d outside any statement", got.errors, got.failed, got.outside)
			}
			// A stderr file read with its real prefix must read the same
			// with the prefix detected.
			if c.opts.Prefix != "" {
				auto, err := readFixtureCounts(t, c.file, Options{Year: c.opts.Year})
				if err != nil {
					t.Fatalf("with the prefix detected: %v", err)
				}
				if auto.execs != got.execs || auto.timed != got.timed || auto.errors != got.errors {
					t.Errorf("with the prefix detected (%q): %d executions (%d timed), %d errors", auto.prefix, auto.execs, auto.timed, auto.errors)
				}
			}
		})
	}
	// The files the reader refuses, listed so that a change shows.
	slices.Sort(failing)
	want := []string{"pgbadger-13.2-summary.tsv", "pgbouncer.1.21.log.gz", "pgbouncer.log.gz"}
	if !slices.Equal(failing, want) {
		t.Errorf("files that fail to read: %q, want %q", failing, want)
	}
}

type fixtureCounts struct {
	format               Format
	prefix               string
	execs, timed, errors int
	// failed counts the failed executions, outside the Error events
	// that no execution reports (event.Event.OutsideStatement).
	failed, outside int
}

// readFixtureCounts reads a fixture with Open, checks the line accounting
// on success and counts the events. It returns the error of Open or Next.
func readFixtureCounts(t *testing.T, file string, opts Options) (fixtureCounts, error) {
	t.Helper()
	path := filepath.Join(sharedFixtures, file)
	r, err := Open(path, opts)
	if err != nil {
		return fixtureCounts{}, err
	}
	defer r.Close()
	got := fixtureCounts{format: r.Format(), prefix: r.Prefix()}
	for ev, err := range event.All(r) {
		if err != nil {
			return got, err
		}
		switch {
		case ev.IsExecution():
			got.execs++
			if ev.Duration >= 0 {
				got.timed++
			}
			if ev.Failed {
				got.failed++
			}
		case ev.Kind == event.Error:
			got.errors++
			if ev.OutsideStatement() {
				got.outside++
			}
		}
	}
	c := r.Counters()
	if want := decompressedLines(t, path); c.Total != want {
		t.Errorf("lines.total = %d, the file has %d lines", c.Total, want)
	}
	if c.Total != c.Parsed+c.SkippedTotal() {
		t.Errorf("total %d != parsed %d + skipped %d (%v)", c.Total, c.Parsed, c.SkippedTotal(), c.Skipped)
	}
	return got, nil
}

// decompressedLines counts the physical lines of a fixture, decompressed
// by the package's own source (whose decompressors are the standard ones).
func decompressedLines(t *testing.T, path string) int64 {
	t.Helper()
	s, err := openSource(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	br := bufio.NewReaderSize(s.r, 1<<20)
	var n, size int64
	last := byte('\n')
	buf := make([]byte, 1<<20)
	for {
		k, err := br.Read(buf)
		for _, b := range buf[:k] {
			if b == '\n' {
				n++
			}
		}
		if k > 0 {
			last = buf[k-1]
			size += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if size > 0 && last != '\n' {
		n++
	}
	return n
}

// readPgbadgerSummary returns the queries and errors columns of
// pgbadger-13.2-summary.tsv by fixture name.
func readPgbadgerSummary(t *testing.T) map[string][2]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedFixtures, "pgbadger-13.2-summary.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][2]int)
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 {
			if len(f) < 4 || f[2] != "queries" || f[3] != "errors" {
				t.Fatalf("unexpected summary header %q", line)
			}
			continue
		}
		q, err1 := strconv.Atoi(f[2])
		e, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			t.Fatalf("summary line %q: %v %v", line, err1, err2)
		}
		out[f[0]] = [2]int{q, e}
	}
	return out
}
