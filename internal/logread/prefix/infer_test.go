package prefix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// realPrefixes are log_line_prefix settings in use, each with where it
// was found. TestInferPrefixFromServer has a real server write a log with
// each and checks that inference reads the same fields as the real one.
var realPrefixes = []struct{ prefix, source string }{
	{"%m [%p] ", "PostgreSQL 10+ default"},
	{"%m [%p] %q%u@%d ", "Debian and Ubuntu packages"},
	{"%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "pgbadger's documentation"},
	{"%t:%r:%u@%d:[%p]:", "Amazon RDS (fixed)"},
	{"%m:%r:%u@%d:[%p]:", "Amazon Aurora"},
	{"%t-%c-", "Azure Database for PostgreSQL, Single Server (fixed)"},
	{"%m|%u|%d|%c|", "pgreplay's README"},
	{"%m|%u|%d|%c|%p|%a|", "pgreplay-go's README"},
	{"%m [%p] %e: db=%d,user=%u,app=%a,client=%h ", "issue 12"},
	{"%m [%p][%v] : [%l-1] %q[app=%a] ", "pganalyze collector, LogPrefixCustom1"},
	{"%t [%p-%l] %q%u@%d ", "pganalyze collector, LogPrefixCustom2"},
	{"%m [%p] %q[user=%u,db=%d,app=%a] ", "pganalyze collector, LogPrefixCustom3 (its recommendation, Azure Flexible Server)"},
	{"%m [%p] %q[user=%u,db=%d,app=%a,host=%h] ", "pganalyze collector, LogPrefixCustom4"},
	{"%t [%p]: [%l-1] user=%u,db=%d - PG-%e ", "pganalyze collector, LogPrefixCustom5"},
	{"%t [%p]: [%l-1] [trx_id=%x] user=%u,db=%d ", "pganalyze collector, LogPrefixCustom7"},
	{"[%p]: [%l-1] db=%d,user=%u ", "Google Cloud SQL (fixed), pganalyze LogPrefixCustom8"},
	{"%m %r %u %a [%c] [%p] ", "pganalyze collector, LogPrefixCustom9"},
	{"%m [%p]: [%l-1] db=%d,user=%u ", "pganalyze collector, LogPrefixCustom10"},
	{"pid=%p,user=%u,db=%d,app=%a,client=%h ", "pganalyze collector, LogPrefixCustom11"},
	{"user=%u,db=%d,app=%a,client=%h ", "pganalyze collector, LogPrefixCustom12"},
	{"%p-%s-%c-%l-%h-%u-%d-%m ", "pganalyze collector, LogPrefixCustom13"},
	{"%m [%p][%b][%v][%x] %q[user=%u,db=%d,app=%a] ", "pganalyze collector, LogPrefixCustom14"},
	{"%t [%p] %q%u@%d %h ", "pganalyze collector, LogPrefixCustom16"},
	{" sql_error_code = %e ", "Heroku Postgres (fixed)"},
	{` sql_error_code = %e time_ms = "%m" pid="%p" proc_start_time="%s" session_id="%c" vtid="%v" tid="%x" log_line="%l" %qdatabase="%d" connection_source="%r" user="%u" application_name="%a" `, "Heroku Postgres, newer plans"},
	{" database = %d connection_source = %r sql_error_code = %e ", "Heroku Postgres, hobby tier"},
	{"%t [%p]: db=%d,user=%u,app=%a,client=%h ", "pgbadger's begin_end.log"},
	{"%m [%p] user=%u,db=%d ", "pgbadger's multiline_param.log"},
	{"%t:%h:%u@%d:[%p]:", "pgbadger's pg-timezones.log"},
	{"%t [%p]: [%l-1] user=%u,db=%d,host=%h,app=%a", "pgbadger's pg_vacuums.log"},
	{"%t [%p]: [%l-1] [%x] usr=%u,db=%d,appli=%a", "pgbadger's postgresql_param_range.log"},
	{"%m [%p] [queryid=%Q] %q%u@%d ", "pgbadger's queryid.log"},
	{"%t [%p]: [%l-1] user=%u,db=%d ", "pgbadger's tempfile_only.log"},
	{"%t [%p]: [%l-1] db=%d,user=%u,app=%a,client=%h ", "pgbadger's README"},
	{"%m [%p] %q%u@%d/%a ", "this project's tests"},
	{"%m [%p] %c %q%u@%d/%a ", "this project's tests"},
	{"%m [%p] %q%u@%d/%a %c %e ", "this project's tests"},
	{"< %m > ", "PostgreSQL 9 packages of Red Hat"},
	{"%n [%p] ", "epoch times"},
	{"%m %p %u %d %a ", "free text without labels"},
	{"user=%u,db=%d", "issue 19: no space before the severity"},
}

// TestInferPrefixFromServer has a real server write the same workload with
// each of realPrefixes and checks that the prefix inferred from that log
// reads every line the real one reads, with the same fields.
func TestInferPrefixFromServer(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"logging_collector":          "on",
		"log_destination":            "stderr",
		"log_min_duration_statement": "0",
		"log_connections":            "on",
		"log_disconnections":         "on",
		"log_checkpoints":            "on",
		"log_rotation_age":           "0",
		"log_rotation_size":          "0",
	}})
	ctx := context.Background()
	for _, sql := range []string{"CREATE ROLE alice LOGIN", "CREATE ROLE bob LOGIN", "CREATE DATABASE shop OWNER alice"} {
		pgclustertest.Exec(t, c, "postgres", sql)
	}
	files, err := c.LogFiles("*.log")
	if err != nil || len(files) != 1 {
		t.Fatalf("log files %v: %v", files, err)
	}
	logFile := files[0]
	waitSessionsEnded(t, logFile, 0)
	// One session sets each prefix: sessions that end while the prefix
	// changes would write their last lines in the old one after the run
	// starts, lines the real prefix does not read.
	admin := pgclustertest.PgConn(ctx, t, c.DSN("postgres"))
	defer admin.Close(ctx)
	adminExec := func(t *testing.T, sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	tcp := func(user, db, app string) string {
		return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s application_name='%s' sslmode=disable", c.Port(), user, db, app)
	}
	for i, rp := range realPrefixes {
		t.Run(strconv.Itoa(i)+" "+rp.prefix, func(t *testing.T) {
			quoted := strings.ReplaceAll(rp.prefix, "'", "''")
			adminExec(t, "ALTER SYSTEM SET log_line_prefix = '"+quoted+"'")
			adminExec(t, "SELECT pg_reload_conf()")
			waitSetting(t, admin, "log_line_prefix", rp.prefix)
			// The run starts after a line the session logs in the new
			// prefix, once the logging collector has written it: the
			// size of the file is not enough, lines written before it
			// (the reload's, in the old prefix) may still be in the
			// collector's pipe.
			startMarker := fmt.Sprintf("start of run %d'", i)
			from := fileSize(t, logFile)
			adminExec(t, "SELECT '"+startMarker)
			start := from + int64(len(waitLog(t, logFile, from, startMarker)))
			run := func(dsn string, sqls ...string) {
				conn, err := pgconn.Connect(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				for _, sql := range sqls {
					conn.Exec(ctx, sql).ReadAll() // some fail on purpose
				}
				conn.ExecParams(ctx, "SELECT $1::int + 1", [][]byte{[]byte("41")}, nil, nil, nil).Read()
			}
			run(tcp("alice", "shop", "web"), "SELECT 1", "SELECT 1/0", "SELECT * FROM missing")
			run(c.DSN("postgres")+" application_name=psql", "SELECT 2", "CHECKPOINT")
			run(tcp("bob", "shop", "batch job"), "SELECT 3")
			marker := fmt.Sprintf("end of run %d", i)
			run(c.DSN("postgres"), "SELECT '"+marker+"'")
			log := waitLog(t, logFile, start, marker)
			// The next run must not get this one's last lines.
			defer waitSessionsEnded(t, logFile, start)

			lines := HeadLines(log, MaxSamples)
			inf, err := Infer(lines)
			if err != nil {
				t.Fatalf("inferPrefix: %v\n%s", err, log)
			}
			t.Logf("real %q, inferred %q", rp.prefix, inf.Prefix)
			compareOnLines(t, rp.prefix, inf.Prefix, log)
			if n, want := countMatches(inf.Prefix, lines), countMatches(rp.prefix, lines); n < want {
				t.Errorf("inferred %q matches %d lines, the real one %d", inf.Prefix, n, want)
			}
			if t.Failed() {
				// Lines in another prefix make inference take another.
				for _, l := range lines {
					if countMatches(rp.prefix, [][]byte{l}) == 0 {
						t.Logf("not in the real prefix: %q", l)
					}
				}
			}
		})
	}
}

func waitSetting(t *testing.T, conn *pgconn.PgConn, name, want string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; {
		// A session reloads the configuration before it runs the next
		// statement once the server has signalled it.
		res, err := conn.Exec(ctx, "SHOW "+name).ReadAll()
		if err == nil && len(res) == 1 && len(res[0].Rows) == 1 && string(res[0].Rows[0][0]) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not %q after reload: %v", name, want, err)
		}
		time.Sleep(10 * time.Millisecond) // polling the server, not synchronizing goroutines
	}
}

// waitSessionsEnded polls the log until every session authorized after
// offset start has logged its disconnection: a backend writes that line
// as it exits, after its client has gone.
func waitSessionsEnded(t *testing.T, path string, start int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = b[start:]
		in, out := bytes.Count(b, []byte("LOG:  connection authorized: ")), bytes.Count(b, []byte("LOG:  disconnection: "))
		if in == out {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions authorized, %d disconnected after 10 s:\n%s", in, out, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitLog polls the log until marker appears after offset start and
// returns the lines written since start, up to the line holding marker.
func waitLog(t *testing.T, path string, start int64, marker string) []byte {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = b[start:]
		if i := bytes.Index(b, []byte(marker)); i >= 0 {
			if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
				return b[:i+j+1]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not in the log after 10 s:\n%s", marker, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInferPrefixSamples infers the prefix of the sample lines of other
// projects' tests (testdata/prefixes), a few lines per prefix, and checks
// it reads what the real prefix reads. Few lines say less than a log: where
// they cannot tell two readings apart, inference must say so, naming both.
func TestInferPrefixSamples(t *testing.T) {
	groups := readPrefixSamples(t, "testdata/prefixes/pganalyze.txt")
	// Lines that cannot tell the fields apart, and why.
	ambiguous := map[string]string{
		// "pgaweb" is both the user and the database of the only
		// session: nothing tells whether the first word is %u or %d.
		"%m %r %u %a [%c] [%p] ": "user and database have the same name",
	}
	// Lines that read alike either way: the prefix is taken with a
	// warning naming the other reading.
	warned := map[string]bool{
		"%p-%s-%c-%l-%h-%u-%d-%m ": true, // user and database are both "pgaweb"
	}
	for _, g := range groups {
		t.Run(g.prefix, func(t *testing.T) {
			var head []byte
			for _, l := range g.lines {
				head = append(head, l...)
				head = append(head, '\n')
			}
			inf, err := Infer(HeadLines(head, MaxSamples))
			if err == nil && warned[g.prefix] != (len(inf.Warnings) > 0) {
				t.Errorf("warnings %q, want some: %v", inf.Warnings, warned[g.prefix])
			}
			switch {
			case ambiguous[g.prefix] != "":
				if !errors.Is(err, ErrAmbiguousPrefix) {
					t.Fatalf("%s: inferred %q, %v; want ErrAmbiguousPrefix", ambiguous[g.prefix], inf.Prefix, err)
				}
				t.Logf("%v", err)
			case err != nil:
				t.Fatal(err)
			default:
				t.Logf("inferred %q", inf.Prefix)
				compareOnLines(t, g.prefix, inf.Prefix, head)
			}
		})
	}
}

type prefixSamples struct {
	prefix string
	lines  []string
}

// readPrefixSamples reads a file of testdata/prefixes: a "prefix:" line
// with the prefix as a JSON string, then log lines up to a blank line;
// "#" starts a comment line.
func readPrefixSamples(t *testing.T, path string) []prefixSamples {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []prefixSamples
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "prefix: "):
			var ps string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "prefix: ")), &ps); err != nil {
				t.Fatalf("%s: %q: %v", path, l, err)
			}
			out = append(out, prefixSamples{prefix: ps})
		case l == "":
		default:
			if len(out) == 0 {
				t.Fatalf("%s: line before any prefix: %q", path, l)
			}
			out[len(out)-1].lines = append(out[len(out)-1].lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
