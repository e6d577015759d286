package replay

import (
	"context"
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// testPrefix is the log_line_prefix of the logs testLog writes.
const testPrefix = "%m [%p] %q%u@%d/%a %c "

// logStart is the log time of a test log's first line.
var logStart = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// testLog builds a stderr log by hand: sessions of one user and database
// each, whose statements are logged with their duration, as
// log_min_duration_statement = 0 does.
type testLog struct {
	entries []logEntry
	nextPID int
}

type logEntry struct {
	at   time.Time // time of the line
	text string
}

type testSession struct {
	l              *testLog
	pid            int
	user, db, app  string
	connected, end time.Time
}

// session starts a session at offset at.
func (l *testLog) session(user, db string, at time.Duration) *testSession {
	return l.sessionApp(user, db, "test", at)
}

// sessionApp starts a session of application app at offset at.
func (l *testLog) sessionApp(user, db, app string, at time.Duration) *testSession {
	l.nextPID++
	s := &testSession{l: l, pid: 1000 + l.nextPID, user: user, db: db, app: app, connected: logStart.Add(at)}
	s.line(at, fmt.Sprintf("LOG:  connection authorized: user=%s database=%s application_name=%s", user, db, s.app))
	return s
}

// selectOnes adds sessions that each run "SELECT 1" every step from 0
// to span and disconnect at span.
func (l *testLog) selectOnes(sessions int, step, span time.Duration) {
	for range sessions {
		s := l.session("postgres", "postgres", 0)
		for at := time.Duration(0); at <= span; at += step {
			s.query(at, time.Millisecond, "SELECT 1")
		}
		s.disconnect(span)
	}
}

func (s *testSession) line(at time.Duration, msg string) {
	prefix := fmt.Sprintf("%s [%d] %s@%s/%s %x.%x ", logStart.Add(at).Format("2006-01-02 15:04:05.000 MST"),
		s.pid, s.user, s.db, s.app, s.connected.Unix(), s.pid)
	s.l.entries = append(s.l.entries, logEntry{at: logStart.Add(at), text: prefix + msg + "\n"})
}

// query logs sql as started at offset at and lasting d.
func (s *testSession) query(at, d time.Duration, sql string) {
	s.line(at+d, fmt.Sprintf("LOG:  duration: %.3f ms  statement: %s", float64(d.Microseconds())/1000, sql))
}

// execute logs an extended-protocol execution of the unnamed statement
// (name "") or a named one, with text parameters.
func (s *testSession) execute(at, d time.Duration, name, sql string, params ...string) {
	if name == "" {
		name = "<unnamed>"
	}
	s.line(at+d, fmt.Sprintf("LOG:  duration: %.3f ms  execute %s: %s", float64(d.Microseconds())/1000, name, sql))
	if len(params) > 0 {
		var ps []string
		for i, p := range params {
			ps = append(ps, fmt.Sprintf("$%d = '%s'", i+1, strings.ReplaceAll(p, "'", "''")))
		}
		s.line(at+d, "DETAIL:  parameters: "+strings.Join(ps, ", "))
	}
}

func (s *testSession) disconnect(at time.Duration) {
	s.line(at, fmt.Sprintf("LOG:  disconnection: session time: 0:00:01.000 user=%s database=%s host=[local]", s.user, s.db))
}

// write sorts the lines by time, as the server writes them, and returns the
// file's path.
func (l *testLog) write(t testing.TB) string {
	sort.SliceStable(l.entries, func(i, j int) bool { return l.entries[i].at.Before(l.entries[j].at) })
	var b strings.Builder
	for _, e := range l.entries {
		b.WriteString(e.text)
	}
	path := filepath.Join(t.TempDir(), "postgresql.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// replayFile replays a log file against target with opts, its own
// sessions left out as the commands do (source.Selection).
func replayFile(t testing.TB, path string, opts Options) *results.Result {
	t.Helper()
	return replaySelected(t, path, opts, source.Selection{})
}

// replaySelected replays the events of a log file that sel selects.
func replaySelected(t testing.TB, path string, opts Options, sel source.Selection) *results.Result {
	t.Helper()
	res, _ := replayKept(t, path, opts, sel)
	return res
}

// replayKept is replaySelected that also returns the Replayer, for a test
// that looks at what it kept (its engines).
func replayKept(t testing.TB, path string, opts Options, sel source.Selection) (*results.Result, *Replayer) {
	t.Helper()
	return replayWith(t, path, opts, sel, nil)
}

// replayWith is replayKept that calls before with the Replayer before it
// runs, unless before is nil.
func replayWith(t testing.TB, path string, opts Options, sel source.Selection, before func(*Replayer)) (*results.Result, *Replayer) {
	t.Helper()
	rd, err := logread.Open(path, logread.Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := r.Run(ctx, ctx, selected(sel, rd))
	if err != nil {
		t.Fatal(err)
	}
	if tt, ok := t.(*testing.T); ok {
		checkInvariant(tt, res)
	}
	return res, r
}

// selected wraps the sources of one workload with sel, as source.Open
// does.
func selected(sel source.Selection, srcs ...event.Source) []event.Source {
	st := source.NewState()
	out := make([]event.Source, len(srcs))
	for i, s := range srcs {
		out[i] = source.Select(s, &sel, st, &source.Counts{})
	}
	return out
}
