package logread

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// readEvents reads every event of path with opts, checking that every
// line is accounted for.
func readAllEvents(t *testing.T, path string, opts Options) ([]*event.Event, *Reader) {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var evs []*event.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, ev)
	}
	c := r.Counters()
	if want := decompressedLines(t, path); c.Total != want {
		t.Errorf("%s: lines.total = %d, the file has %d lines", path, c.Total, want)
	}
	if c.Total != c.Parsed+c.SkippedTotal() {
		t.Errorf("%s: total %d != parsed %d + skipped %d", path, c.Total, c.Parsed, c.SkippedTotal())
	}
	return evs, r
}

// eventKey is what must be the same in two copies of one log: everything
// but the line number, the session key (made from the process id when the
// prefix has no %c) and the time, compared apart.
func pairKey(ev *event.Event) string {
	var ps []string
	for _, p := range ev.Params {
		if p.Null {
			ps = append(ps, "NULL")
		} else {
			ps = append(ps, fmt.Sprintf("%q", p.Value))
		}
	}
	return fmt.Sprintf("%s pid=%d user=%q db=%q app=%q dur=%d name=%q portal=%q query=%q params=[%s]/%d failed=%v state=%q %s %q",
		ev.Kind, ev.PID, ev.User, ev.Database, ev.Application, ev.Duration, ev.Name, ev.Portal(), ev.Query,
		strings.Join(ps, ","), ev.ParamState, ev.Failed, ev.SQLState, ev.ErrorSeverity(), ev.ErrorMessage())
}

// sameEvents checks that got holds the events of want: per process, in
// the same order, with the same fields, times at most slack apart and
// sessions that split the events alike.
func sameEvents(t *testing.T, name string, got, want []*event.Event, slack time.Duration) {
	t.Helper()
	byPID := func(evs []*event.Event) map[int32][]*event.Event {
		m := make(map[int32][]*event.Event)
		for _, ev := range evs {
			m[ev.PID] = append(m[ev.PID], ev)
		}
		return m
	}
	g, w := byPID(got), byPID(want)
	if len(got) != len(want) {
		t.Errorf("%s: %d events, want %d", name, len(got), len(want))
	}
	sessions := make(map[string]string)
	for pid, wl := range w {
		gl := g[pid]
		for i := range max(len(gl), len(wl)) {
			if i >= len(gl) || i >= len(wl) {
				t.Errorf("%s: pid %d: %d events, want %d", name, pid, len(gl), len(wl))
				break
			}
			if gl[i].SQLState == "" {
				// The log does not say (no %e in the prefix): csvlog does.
				gl[i].SQLState = wl[i].SQLState
			}
			if gk, wk := pairKey(gl[i]), pairKey(wl[i]); gk != wk {
				t.Errorf("%s: pid %d event %d:\n got  %s\n want %s", name, pid, i, gk, wk)
				continue
			}
			if d := time.Duration(gl[i].Time-wl[i].Time) * time.Microsecond; d > slack || d < -slack {
				t.Errorf("%s: pid %d event %d (%s): time %s, want %s", name, pid, i, gl[i].Kind,
					time.UnixMicro(gl[i].Time).UTC().Format(time.RFC3339Nano), time.UnixMicro(wl[i].Time).UTC().Format(time.RFC3339Nano))
			}
			if s, ok := sessions[gl[i].Session]; ok && s != wl[i].Session {
				t.Errorf("%s: session %s holds events of sessions %s and %s", name, gl[i].Session, s, wl[i].Session)
			}
			sessions[gl[i].Session] = wl[i].Session
		}
	}
}

// TestSyslogPairs reads the syslog files testdata/syslog/generate.sh had
// rsyslog write, and checks that each gives the events of the csvlog the
// server wrote of the same run.
func TestSyslogPairs(t *testing.T) {
	dir := "testdata/syslog"
	utc := Options{Year: 2026, TimeZone: time.UTC}
	run1, _ := readAllEvents(t, filepath.Join(dir, "run1.csv"), Options{})
	run2, _ := readAllEvents(t, filepath.Join(dir, "run2.csv"), Options{})
	if len(run1) < 40 || len(run2) < 40 {
		t.Fatalf("the csvlog files hold %d and %d events", len(run1), len(run2))
	}
	for _, tc := range []struct {
		file   string
		want   []*event.Event
		layout string
		prefix string
		// slack: RFC 3164 times are to the second, rsyslog's other
		// times are when it received the message.
		slack time.Duration
	}{
		{"bsd.log", run1, "stderr lines in syslog", "user=%u,db=%d,app=%a,client=%h ", time.Second},
		{"iso.log", run1, "stderr lines in syslog", "user=%u,db=%d,app=%a,client=%h ", 50 * time.Millisecond},
		{"rfc5424.log", run1, "stderr lines in syslog (RFC 5424)", "user=%u,db=%d,app=%a,client=%h ", 50 * time.Millisecond},
		// journald forwards the server's own stderr lines, with their
		// own times and process ids.
		{"journald.log", run2, "stderr lines in syslog", "%m [%p] %q%u@%d/%a ", time.Millisecond},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, r := readAllEvents(t, filepath.Join(dir, tc.file), utc)
			if r.Layout() != tc.layout || r.Prefix() != tc.prefix {
				t.Errorf("layout %q prefix %q, want %q %q", r.Layout(), r.Prefix(), tc.layout, tc.prefix)
			}
			sameEvents(t, tc.file, got, tc.want, tc.slack)
			if u := r.Counters().Unparseable(); u != 0 {
				t.Errorf("%d lines unparseable: %v %v", u, r.Counters().Skipped, r.Counters().Samples)
			}
		})
	}
}

// TestSyslogYearAndZone checks the year and zone given to RFC 3164 times,
// which have neither, and the warnings that say what was assumed.
func TestSyslogYearAndZone(t *testing.T) {
	path := "testdata/syslog/bsd.log"
	evs, r := readAllEvents(t, path, Options{Year: 2030})
	if y := time.UnixMicro(evs[0].Time).UTC().Year(); y != 2030 {
		t.Errorf("year %d, want 2030", y)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "no time zone: read as UTC") || strings.Contains(w, "no year") {
		t.Errorf("warnings %q", w)
	}
	ny, _ := time.LoadLocation("America/New_York")
	evs2, r2 := readAllEvents(t, path, Options{Year: 2030, TimeZone: ny})
	if d := evs2[0].Time - evs[0].Time; d != 5*3600e6 {
		t.Errorf("New York times are %d µs after UTC's, want 5 h", d)
	}
	if w := strings.Join(r2.Warnings(), "\n"); !strings.Contains(w, "America/New_York") {
		t.Errorf("warnings %q", w)
	}
	_, r3 := readAllEvents(t, path, Options{})
	if w := strings.Join(r3.Warnings(), "\n"); !strings.Contains(w, "no year: read as") {
		t.Errorf("warnings %q", w)
	}
	// journald's lines carry the server's own times: nothing to assume.
	_, r4 := readAllEvents(t, "testdata/syslog/journald.log", Options{})
	if w := r4.Warnings(); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}

}

// formatGolden lists real samples of each format the reader takes, with
// the options to read them. Their events and line counts are kept in
// testdata/golden (go test -update rewrites them; a reviewer reads the
// diff).
var formatGolden = []struct {
	name string
	path string
	opts Options
}{
	{"syslog-bsd", "testdata/syslog/bsd.log", Options{Year: 2026, TimeZone: time.UTC}},
	{"syslog-iso", "testdata/syslog/iso.log", Options{}},
	{"syslog-rfc5424", "testdata/syslog/rfc5424.log", Options{}},
	{"syslog-journald", "testdata/syslog/journald.log", Options{}},
	{"logplex", "testdata/pgbadger/logplex.gz", Options{}},
}

func TestFormatGolden(t *testing.T) {
	for _, g := range formatGolden {
		t.Run(g.name, func(t *testing.T) {
			evs, r := readAllEvents(t, g.path, g.opts)
			var b strings.Builder
			fmt.Fprintf(&b, "layout: %s\nprefix: %q\n", r.Layout(), r.Prefix())
			for _, w := range r.Warnings() {
				fmt.Fprintf(&b, "warning: %s\n", w)
			}
			b.WriteString(dumpEvents(evs, r.Counters()))
			golden(t, filepath.Join("testdata/golden", g.name+".golden"), b.String())
		})
	}
}
