package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

const testPrefix = "%m [%p] %q%u@%d/%a %c "

// stderrLog is a log of n statements, one per second from start, in
// sessions of 10 statements each.
func stderrLog(start time.Time, n int) string {
	var b strings.Builder
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second).UTC().Format("2006-01-02 15:04:05.000")
		pid := 100 + i/10
		fmt.Fprintf(&b, "%s UTC [%d] app@shop/web %x.%x LOG:  duration: 0.500 ms  statement: SELECT %d\n", at, pid, start.Unix(), pid, i)
	}
	return b.String()
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipped(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

// readAll reads every source of a set, and returns the statements.
func readAll(t *testing.T, s *Set) int {
	t.Helper()
	n := 0
	for _, src := range s.Sources() {
		for ev, err := range event.All(src) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.IsExecution() {
				n++
			}
		}
	}
	return n
}

// TestOpen: of several logs, an empty one and one that repeats another
// are skipped with a warning; logs that neither overlap nor follow each
// other are refused unless allowed; each file read is named with its size
// and hashes; a log without times is said to be one.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	a := write(t, dir, "a.log", stderrLog(day, 60))
	copyA := write(t, dir, "copy.log", stderrLog(day, 60))
	empty := write(t, dir, "empty.log", "")
	next := write(t, dir, "next.log", stderrLog(day.Add(90*time.Second), 30)) // 30 s after a ends
	later := write(t, dir, "later.log", stderrLog(day.Add(26*time.Hour), 30)) // the next day
	laterGz := write(t, dir, "later.log.gz", gzipped(t, stderrLog(day.Add(26*time.Hour), 30)))
	earlyGz := write(t, dir, "early.log.gz", gzipped(t, stderrLog(day.Add(-26*time.Hour), 30)))
	// More events than the opener reads of a compressed log's head
	// (logread.ProbeLog): its end is not known before it is read.
	earlyLongGz := write(t, dir, "early-long.log.gz", gzipped(t, stderrLog(day.Add(-26*time.Hour), 10100)))
	// Logs of one time from two servers, which their startup lines tell
	// apart; and a rotated log of the first server, restarted on another
	// version (a minor upgrade): the same server.
	started := func(at time.Time, port int, version string) string {
		ts := at.Add(-time.Second).UTC().Format("2006-01-02 15:04:05.000")
		return fmt.Sprintf("%s UTC [99] LOG:  starting PostgreSQL %s on x86_64-pc-linux-gnu, compiled by gcc, 64-bit\n"+
			"%s UTC [99] LOG:  listening on IPv4 address \"0.0.0.0\", port %d\n", ts, version, ts, port)
	}
	serverA := write(t, dir, "server-a.log", started(day, 5432, "15.4")+stderrLog(day, 60))
	serverB := write(t, dir, "server-b.log", started(day, 5433, "15.4")+stderrLog(day.Add(time.Hour), 60))
	serverA2 := write(t, dir, "server-a2.log", started(day.Add(90*time.Second), 5432, "15.5")+stderrLog(day.Add(90*time.Second), 30))
	timeless := write(t, dir, "timeless.log", "[100]: [1-1] db=shop,user=app LOG:  duration: 0.050 ms  statement: SELECT 1\n[100]: [2-1] db=shop,user=app LOG:  duration: 0.050 ms  statement: SELECT 2\n")

	open := func(allow bool, paths ...string) (*Set, []string, error) {
		var warns []string
		s, err := Open(paths, Options{Log: logread.Options{Prefix: testPrefix}, Select: &Selection{}, AllowMixed: allow,
			Warn: func(w string) { warns = append(warns, w) }})
		return s, warns, err
	}
	tests := []struct {
		name       string
		allow      bool
		paths      []string
		statements int
		warn, err  string
	}{
		{"one log", false, []string{a}, 60, "", ""},
		{"a copy", false, []string{a, copyA}, 60, "copy.log holds the same events as " + a, ""},
		{"twice", false, []string{a, a}, 60, "a.log is given twice", ""},
		{"an empty one", false, []string{a, empty}, 60, "empty.log is empty: skipped", ""},
		{"rotated", false, []string{a, next}, 90, "", ""},
		{"out of order, rotated", false, []string{next, a}, 90, "", ""},
		{"a day apart", false, []string{a, later}, 0, "", "neither overlap nor follow"},
		{"a day apart, allowed", true, []string{a, later}, 90, "", ""},
		{"a day apart, compressed after", false, []string{a, laterGz}, 0, "", "neither overlap nor follow"},
		// A compressed log's end is not known before it is read: only
		// what is certain is refused.
		{"compressed before, end unknown", false, []string{earlyLongGz, a}, 10160, "", ""},
		{"compressed before, read whole", false, []string{earlyGz, a}, 0, "", "neither overlap nor follow"},
		{"only empty", false, []string{empty}, 0, "", "the logs are empty"},
		{"two servers", false, []string{serverA, serverB}, 0, "", "different servers (port 5432 and 5433)"},
		{"two servers, allowed", true, []string{serverA, serverB}, 120, "", ""},
		{"one server restarted on a minor upgrade", false, []string{serverA, serverA2}, 90, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, warns, err := open(tt.allow, tt.paths...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := readAll(t, s); got != tt.statements {
				t.Errorf("%d statements, want %d", got, tt.statements)
			}
			if tt.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], tt.warn)) {
				t.Errorf("warnings %q, want %q", warns, tt.warn)
			}
			if tt.warn == "" && len(warns) > 0 {
				t.Errorf("warnings %q", warns)
			}
		})
	}
	var mixed *Mixed
	if _, _, err := open(false, a, later); !errors.As(err, &mixed) || mixed.Reason != MixedTimes || mixed.A != a || mixed.B != later {
		t.Errorf("mixed: %#v", err)
	}
	if _, _, err := open(false, serverA, serverB); !errors.As(err, &mixed) || mixed.Reason != MixedServers || mixed.What != "port" || mixed.A != serverA || mixed.B != serverB {
		t.Errorf("mixed servers: %#v", err)
	}

	// The input: the files read, with sizes and hashes; a copy elsewhere
	// is the same input.
	s1, _, _ := open(false, a, next)
	s2, _, _ := open(false, copyA, next)
	in1, in2 := s1.Input(), s2.Input()
	s1.Close()
	s2.Close()
	fi, _ := os.Stat(a)
	if len(in1.Files) != 2 || in1.Files[0].Name != a || in1.Files[0].Size != fi.Size() || len(in1.Files[0].Hash) != 64 || !in1.Same(in2) {
		t.Errorf("inputs %+v and %+v", in1, in2)
	}
	if s3, _, _ := open(true, a, later); s3.Input().Same(in1) {
		t.Error("different files are the same input")
	}

	s, err := Open([]string{timeless}, Options{Log: logread.Options{Prefix: "[%p]: [%l-1] db=%d,user=%u "}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Timeless(); len(got) != 1 || got[0] != timeless {
		t.Errorf("timeless %v", got)
	}
	s.Close()
}

// TestMeasured: a run that measured nothing says which cause dropped the
// statements, and the remedy for it.
func TestMeasured(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	a := write(t, dir, "a.log", stderrLog(day, 20))
	timeless := write(t, dir, "timeless.log", "[100]: [1-1] db=shop,user=app LOG:  duration: 0.050 ms  statement: SELECT 1\n")
	noise := write(t, dir, "noise.log", stderrLog(day, 20)+strings.Repeat("host kernel: something else entirely\n", 5))
	// What real logs hold instead of statements, or beside them.
	line := func(i int, msg string) string {
		return day.Add(time.Duration(i)*time.Second).UTC().Format("2006-01-02 15:04:05.000") + " UTC [100] app@shop/web 6632.64 LOG:  " + msg + "\n"
	}
	var plans, durations strings.Builder
	for i := range 20 {
		plans.WriteString(line(i, "duration: 0.050 ms  plan:\n\tQuery Text: SELECT 1\n\tResult  (cost=0.00..0.01 rows=1 width=4)"))
		durations.WriteString(line(i, "duration: 0.050 ms"))
	}
	plansAlone := write(t, dir, "plans.log", plans.String())
	durationsAlone := write(t, dir, "durations.log", durations.String())
	dump := "TopMemoryContext: 97664 total in 5 blocks; 14720 free (4 chunks); 82944 used\n" +
		strings.Repeat("  TopTransactionContext: 8192 total in 1 blocks; 7744 free (0 chunks); 448 used\n", 40) +
		"Grand total: 1245184 bytes in 150 blocks; 301312 free (97 chunks); 943872 used\n"
	oom := write(t, dir, "oom.log", stderrLog(day, 10)+dump+stderrLog(day.Add(time.Minute), 10)+"\n")
	// Captures of the proxy: a session that sent no query, and one that
	// sent some.
	idle, busy := filepath.Join(dir, "idle"), filepath.Join(dir, "busy")
	writeTestCapture(t, idle, 0, 0)
	writeTestCapture(t, busy, 5, 0)
	tests := []struct {
		name   string
		path   string
		prefix string
		sel    Selection
		want   Reason
		remedy string
	}{
		{"outside the window", a, testPrefix, Selection{Start: day.Add(time.Hour).UnixMicro()}, NothingOutsideWindow, "time window"},
		{"no time", timeless, "[%p]: [%l-1] db=%d,user=%u ", Selection{Start: day.UnixMicro()}, NothingTimeless, "%m"},
		{"filters", a, testPrefix, Selection{Databases: []string{"other"}}, NothingFiltered, "databases, users or applications"},
		{"other shards", a, testPrefix, Selection{Shard: Shard{K: 1, Of: 2, Assign: func(string) (int, bool) { return 0, true }}}, NothingOtherShards, "fewer shards"},
		{"wrong prefix", a, "%t [%p]: [%l-1] user=%u,db=%d ", Selection{}, NothingNoStatement, "log_line_prefix"},
		{"unreadable", noise, testPrefix, Selection{}, NothingUnreadable, "log_line_prefix (SHOW log_line_prefix)"},
		{"plans without statements", plansAlone, testPrefix, Selection{}, NothingNoStatement, "auto_explain logged plans"},
		{"durations without statements", durationsAlone, testPrefix, Selection{}, NothingNoStatement, "log_duration writes durations"},
		// A memory-context dump mid-log and a blank last line are
		// neither unreadable nor a reason to measure nothing.
		{"the server's own output and a blank line", oom, testPrefix, Selection{}, 0, ""},
		{"measured", a, testPrefix, Selection{}, 0, ""},
		{"a capture without a query", idle, "", Selection{}, NothingNoQuery, "through the proxy"},
		{"a capture outside the window", busy, "", Selection{Start: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()}, NothingOutsideWindow, "time window"},
		{"a capture measured", busy, "", Selection{}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel := tt.sel
			s, err := Open([]string{tt.path}, Options{Log: logread.Options{Prefix: tt.prefix}, Select: &sel})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			n := s.Measured(int64(readAll(t, s)), 0.1)
			if tt.want == 0 {
				if n != nil {
					t.Errorf("nothing measured: %v", n)
				}
				return
			}
			if n == nil || n.Reason != tt.want || !strings.Contains(n.Error(), tt.remedy) {
				t.Errorf("%#v (%v), want reason %d naming %q", n, n, tt.want, tt.remedy)
			}
		})
	}
}

// TestLookahead: the first look reads the beginning, within its bound;
// the second reader gets every event once, in order, those of the first
// look included, and the same counts.
func TestLookahead(t *testing.T) {
	var evs []*event.Event
	for i := range 1000 {
		evs = append(evs, &event.Event{Kind: event.Statement, Session: "s", Query: "SELECT 1", Time: t0 + int64(i), Line: int64(i)})
	}
	src := []event.Source{&sliceSource{evs: evs[:600]}, &sliceSource{evs: evs[600:]}}
	l := NewLookahead(src, 100*eventSize(evs[0]))
	first := l.First()
	n := 0
	for {
		_, err := first[0].Next()
		if err != nil {
			if !errors.Is(err, ErrLookaheadFull) {
				t.Fatalf("first look ended with %v", err)
			}
			break
		}
		n++
	}
	if _, err := first[1].Next(); !errors.Is(err, ErrLookaheadFull) || n != 100 {
		t.Errorf("first look: %d events, then %v", n, err)
	}
	if kept, _ := l.Kept(); kept != 100 {
		t.Errorf("kept %d", kept)
	}
	var lines []int64
	second := l.Sources()
	for _, s := range second {
		for {
			ev, err := s.Next()
			if err != nil {
				break
			}
			lines = append(lines, ev.Line)
		}
	}
	if len(lines) != 1000 {
		t.Fatalf("second reader: %d events, want 1000", len(lines))
	}
	for i, l := range lines {
		if l != int64(i) {
			t.Fatalf("event %d is line %d", i, l)
		}
	}
	if _, ok := second[0].(results.SourceCounter); !ok {
		t.Error("the second reader's sources do not pass their counts on")
	}
}

// TestCopiesInOtherFormats: copies of one log in other formats (a run's
// syslog in two formats and its csvlog) are read once; logs of other
// traffic are all read.
func TestCopiesInOtherFormats(t *testing.T) {
	const dir = "../logread/testdata/syslog/"
	open := func(paths ...string) (int, []string) {
		t.Helper()
		var warns []string
		s, err := Open(paths, Options{Log: logread.Options{Year: 2026, TimeZone: time.UTC}, AllowMixed: true,
			Warn: func(w string) { warns = append(warns, w) }})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return len(s.Readers()), warns
	}
	for _, tc := range []struct {
		name  string
		paths []string
		read  int
	}{
		{"run1 syslog and its csvlog", []string{dir + "bsd.log", dir + "run1.csv"}, 1},
		{"run1 in two syslog formats", []string{dir + "iso.log", dir + "bsd.log"}, 1},
		{"run2 journald and its csvlog", []string{dir + "journald.log", dir + "run2.csv"}, 1},
		{"two runs", []string{dir + "run2.csv", dir + "run1.csv"}, 2},
		{"two runs, other formats", []string{dir + "journald.log", dir + "bsd.log"}, 2},
	} {
		read, warns := open(tc.paths...)
		if read != tc.read || len(warns) != len(tc.paths)-tc.read {
			t.Errorf("%s: %d logs read, warnings %q; want %d read", tc.name, read, warns, tc.read)
		}
	}
}
