package logread

import (
	"context"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// The tests in this file read logs written by a real PostgreSQL server
// started for the test, in both logging styles.

const serverPrefix = "%m [%p] %q%u@%d/%a %c %e "

// serverScript runs on one connection what the reader must recognize:
// simple and extended protocol, named statements, odd parameter values,
// multi-line text and failures of each kind.
func serverScript(ctx context.Context, t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	conn := pgclustertest.PgConn(ctx, t, c.DSN("postgres")+" application_name=readertest")
	defer conn.Close(ctx)
	simple := func(sql string, wantErr bool) {
		t.Helper()
		_, err := conn.Exec(ctx, sql).ReadAll()
		if (err != nil) != wantErr {
			t.Fatalf("%q: err = %v, want error %v", sql, err, wantErr)
		}
	}
	params := func(sql string, wantErr bool, args ...[]byte) {
		t.Helper()
		err := conn.ExecParams(ctx, sql, args, nil, nil, nil).Read().Err
		if (err != nil) != wantErr {
			t.Fatalf("%q: err = %v, want error %v", sql, err, wantErr)
		}
	}
	simple("CREATE TABLE t (id int PRIMARY KEY, v text)", false)
	simple("SELECT 1;\nSELECT\n\t2 AS two", false)
	params("INSERT INTO t VALUES ($1, $2)", false, []byte("1"), []byte("it's \"odd\"\nsecond line"))
	params("INSERT INTO t VALUES ($1, $2)", false, []byte("2"), nil)
	params("INSERT INTO t VALUES ($1, $2)", false, []byte("3"), []byte("NULL"))
	if _, err := conn.Prepare(ctx, "ins", "SELECT v FROM t WHERE id = $1", nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2"} {
		if err := conn.ExecPrepared(ctx, "ins", [][]byte{[]byte(id)}, nil, nil).Read().Err; err != nil {
			t.Fatal(err)
		}
	}
	simple("SELECT 1/0", true)
	// Fails in bind: planning the unnamed statement folds 10/0.
	params("SELECT 10/$1::int", true, []byte("0"))
	// Fails in execute, after the bind was logged.
	params("SELECT 10/(id - $1::int) FROM t WHERE id = 1", true, []byte("1"))
	simple("INSERT INTO t VALUES (1, 'dup')", true)
	simple("SELEC oops", true)
}

// readAll reads every event of path and checks the line accounting.
func readAll(t *testing.T, path string, opts Options) ([]*event.Event, *Counters) {
	t.Helper()
	evs, r := readAllEvents(t, path, opts)
	return evs, r.Counters()
}

func countLines(t *testing.T, path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(strings.Count(string(b), "\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// ofSession keeps the events of application readertest.
func ofSession(evs []*event.Event) []*event.Event {
	var out []*event.Event
	for _, ev := range evs {
		if ev.Application == "readertest" {
			out = append(out, ev)
		}
	}
	return out
}

type wantEvent struct {
	kind   event.Kind
	name   string
	query  string
	params []event.Param
	failed string // SQLSTATE when failed
	timed  bool

	paramState event.ParamState
}

func checkEvents(t *testing.T, got []*event.Event, want []wantEvent) {
	t.Helper()
	var execs []*event.Event
	for _, ev := range got {
		if ev.Kind != event.Error && ev.Kind != event.Prepare {
			execs = append(execs, ev)
		}
	}
	if len(execs) != len(want) {
		for _, ev := range execs {
			t.Logf("got %s %q %q failed=%v", ev.Kind, ev.Name, ev.Query, ev.Failed)
		}
		t.Fatalf("got %d events, want %d", len(execs), len(want))
	}
	for i, w := range want {
		ev := execs[i]
		if ev.Kind != w.kind || ev.Name != w.name || ev.Query != w.query {
			t.Errorf("event %d: got %s %q %q, want %s %q %q", i, ev.Kind, ev.Name, ev.Query, w.kind, w.name, w.query)
		}
		if w.params != nil && !equalParams(ev.Params, w.params) {
			t.Errorf("event %d: params %+v, want %+v", i, ev.Params, w.params)
		}
		if ev.ParamState != w.paramState {
			t.Errorf("event %d %q: param state %d, want %d", i, ev.Query, ev.ParamState, w.paramState)
		}
		if ev.Failed != (w.failed != "") || ev.SQLState != w.failed {
			t.Errorf("event %d %q: failed=%v %q, want %q", i, ev.Query, ev.Failed, ev.SQLState, w.failed)
		}
		if (ev.Duration >= 0) != w.timed {
			t.Errorf("event %d %q: duration %d, want timed=%v", i, ev.Query, ev.Duration, w.timed)
		}
		if ev.User != "postgres" || ev.Database != "postgres" || ev.Session == "" || ev.Time == 0 {
			t.Errorf("event %d: user %q db %q session %q time %d", i, ev.User, ev.Database, ev.Session, ev.Time)
		}
	}
}

func equalParams(a, b []event.Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var (
	pOdd  = []event.Param{{Value: "1"}, {Value: "it's \"odd\"\nsecond line"}}
	pNull = []event.Param{{Value: "2"}, {Null: true}}
	pStr  = []event.Param{{Value: "3"}, {Value: "NULL"}}
)

// scriptLogged starts a cluster that logs to stderr through the logging
// collector, connections and disconnections included, with prefix
// serverPrefix, as settings add or override; runs serverScript on it and
// stops the server, so that its log is whole.
func scriptLogged(t *testing.T, settings map[string]string) *pgcluster.Cluster {
	t.Helper()
	all := map[string]string{
		"logging_collector":  "on",
		"log_destination":    "stderr",
		"log_connections":    "on",
		"log_disconnections": "on",
		"log_line_prefix":    serverPrefix,
	}
	maps.Copy(all, settings)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: all})
	serverScript(context.Background(), t, c)
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStderrMinDuration(t *testing.T) {
	c := scriptLogged(t, map[string]string{"log_min_duration_statement": "0"})
	files, err := c.LogFiles("*.log")
	if err != nil || len(files) != 1 {
		t.Fatalf("log files %v, %v", files, err)
	}
	evs, _ := readAll(t, files[0], Options{})
	sess := ofSession(evs)
	if sess[0].Kind != event.Connect || sess[len(sess)-1].Kind != event.Disconnect {
		t.Errorf("session does not start with connect and end with disconnect: %s ... %s", sess[0].Kind, sess[len(sess)-1].Kind)
	}
	checkEvents(t, sess, scriptEvents(false))
}

func TestStderrLogStatementAll(t *testing.T) {
	c := scriptLogged(t, map[string]string{"log_statement": "all", "log_duration": "on"})
	files, _ := c.LogFiles("*.log")
	evs, counters := readAll(t, files[0], Options{Prefix: serverPrefix})
	checkEvents(t, ofSession(evs), scriptEvents(true))
	// Parse and bind durations (log_duration) have no statement.
	if counters.Skipped[SkipDurationAlone] == 0 {
		t.Errorf("no parse/bind durations counted as %q: %v", SkipDurationAlone, counters.Skipped)
	}
}

// scriptEvents is what serverScript must leave in the log, in the
// log_min_duration_statement style or, with logStatement, the
// log_statement = 'all' + log_duration style.
func scriptEvents(logStatement bool) []wantEvent {
	ins := "INSERT INTO t VALUES ($1, $2)"
	sel := "SELECT v FROM t WHERE id = $1"
	// A bind that fails leaves its parse line with durations logged; with
	// log_statement, which logs an execute when it starts, only the error
	// is left, and it cannot tell the protocol.
	bindFailure := wantEvent{kind: event.Execute, query: "SELECT 10/$1::int", failed: "22012", paramState: event.ParamsMissing}
	if logStatement {
		bindFailure = wantEvent{kind: event.Statement, query: "SELECT 10/$1::int", failed: "22012"}
	}
	return []wantEvent{
		{kind: event.Connect},
		{kind: event.Statement, query: "CREATE TABLE t (id int PRIMARY KEY, v text)", timed: true},
		{kind: event.Statement, query: "SELECT 1;\nSELECT\n\t2 AS two", timed: true},
		{kind: event.Execute, query: ins, params: pOdd, timed: true},
		{kind: event.Execute, query: ins, params: pNull, timed: true},
		{kind: event.Execute, query: ins, params: pStr, timed: true},
		{kind: event.Execute, name: "ins", query: sel, params: []event.Param{{Value: "1"}}, timed: true},
		{kind: event.Execute, name: "ins", query: sel, params: []event.Param{{Value: "2"}}, timed: true},
		{kind: event.Statement, query: "SELECT 1/0", failed: "22012"},
		bindFailure,
		{kind: event.Execute, query: "SELECT 10/(id - $1::int) FROM t WHERE id = 1", params: []event.Param{{Value: "1"}}, failed: "22012"},
		{kind: event.Statement, query: "INSERT INTO t VALUES (1, 'dup')", failed: "23505"},
		{kind: event.Statement, query: "SELEC oops", failed: "42601"},
		{kind: event.Disconnect},
	}
}

// TestVerboseErrorsFromServer has a real server log the script with
// log_error_verbosity = verbose, which writes the SQLSTATE before every
// message ("LOG:  00000: duration: ...") and a LOCATION line after it, to
// stderr and csvlog at once, and checks both give the same events.
func TestVerboseErrorsFromServer(t *testing.T) {
	c := scriptLogged(t, map[string]string{
		"log_destination":            "stderr,csvlog",
		"log_error_verbosity":        "verbose",
		"log_min_duration_statement": "0",
		"log_line_prefix":            "%m [%p] %q%u@%d/%a ",
	})
	logs, _ := c.LogFiles("*.log")
	csvs, _ := c.LogFiles("*.csv")
	if len(logs) != 1 || len(csvs) != 1 {
		t.Fatalf("log files %v %v", logs, csvs)
	}
	b, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(b), "LOG:  00000: duration: ") || !strings.Contains(string(b), "LOCATION:  ") {
		t.Fatalf("the log is not verbose:\n%s", b)
	}
	got, r := readAll(t, logs[0], Options{})
	want, _ := readAll(t, csvs[0], Options{})
	sameEvents(t, "verbose stderr", got, want, time.Millisecond)
	if *update {
		// Keep this run's logs as the verbose samples of the golden test.
		for src, dst := range map[string]string{logs[0]: "testdata/verbose/stderr.log", csvs[0]: "testdata/verbose/csvlog.csv"} {
			b, err := os.ReadFile(src)
			if err == nil {
				err = os.WriteFile(dst, b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	checkEvents(t, ofSession(got), scriptEvents(false))
	if u := r.Unparseable(); u != 0 {
		t.Errorf("%d lines unparseable: %v %v", u, r.Skipped, r.Samples)
	}
}
