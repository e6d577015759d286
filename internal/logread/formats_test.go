package logread

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// allEvents reads r to its end and returns its events.
func allEvents(t testing.TB, r *Reader) []*event.Event {
	t.Helper()
	var evs []*event.Event
	for ev, err := range event.All(r) {
		if err != nil {
			t.Fatalf("%s: %v", r.Name(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// readAllEvents reads every event of path with opts, checking that every
// line is accounted for.
func readAllEvents(t *testing.T, path string, opts Options) ([]*event.Event, *Reader) {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs := allEvents(t, r)
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
	ps := quotedParams(ev)
	return fmt.Sprintf("%s pid=%d user=%q db=%q app=%q dur=%d name=%q portal=%q query=%q params=[%s]/%d failed=%v state=%q %s %q",
		ev.Kind, ev.PID, ev.User, ev.Database, ev.Application, ev.Duration, ev.Name, ev.Portal(), ev.Query,
		strings.Join(ps, ","), ev.ParamState, ev.Failed, ev.SQLState, ev.ErrorSeverity(), ev.ErrorMessage())
}

// quotedParams is each of ev's parameters quoted, or NULL.
func quotedParams(ev *event.Event) []string {
	var ps []string
	for _, p := range ev.Params {
		if p.Null {
			ps = append(ps, "NULL")
		} else {
			ps = append(ps, fmt.Sprintf("%q", p.Value))
		}
	}
	return ps
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
	{"azure-flexible", "testdata/azure/flexible.json", Options{}},
	{"azure-single", "testdata/azure/single.json", Options{}},
	{"azure-eventhub", "testdata/azure/eventhub.json", Options{}},
	{"cloudsql-gcloud", "testdata/cloudsql/gcloud.json", Options{}},
	{"cloudsql-textpayload", "testdata/cloudsql/textpayload.log", Options{}},
	{"cloudwatch-rds", "testdata/cloudwatch/rds-export.log", Options{}},
	{"verbose-stderr", "testdata/verbose/stderr.log", Options{}},
	{"verbose-csvlog", "testdata/verbose/csvlog.csv", Options{}},
	{"autoexplain-stderr", "testdata/autoexplain/stderr.log", Options{}},
	{"autoexplain-jsonlog", "testdata/autoexplain/jsonlog.json", Options{}},
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

// TestCloudSQLShapes reads one stretch of a Cloud SQL log in each shape
// gcloud writes it: JSON lines (the reference), a JSON array with the
// newest entry first (--format=json), the text payloads with their times
// (--format='value(timestamp,textPayload)') and alone
// (--format='value(textPayload)').
func TestCloudSQLShapes(t *testing.T) {
	dir := "testdata/cloudsql"
	want, _ := readAllEvents(t, filepath.Join(dir, "cloudsql.jsonl"), Options{})
	if len(want) < 50 {
		t.Fatalf("%d events in the reference", len(want))
	}
	for _, tc := range []struct {
		file   string
		format Format
		noTime bool
	}{
		{"gcloud.json", FormatJSON, false},
		{"timestamp-textpayload.log", FormatStderr, false},
		{"textpayload.log", FormatStderr, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, r := readAllEvents(t, filepath.Join(dir, tc.file), Options{})
			if r.Format() != tc.format {
				t.Errorf("format %s, want %s", r.Format(), tc.format)
			}
			if tc.noTime {
				for i := range got {
					if got[i].Time != 0 {
						t.Fatalf("event %d has a time: %+v", i, got[i])
					}
					if i < len(want) {
						got[i].Time = want[i].Time
					}
				}
				if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "no time") {
					t.Errorf("no warning that the lines have no time: %q", w)
				}
			}
			sameEvents(t, tc.file, got, want, 0)
			if u := r.Counters().Unparseable(); u != 0 {
				t.Errorf("%d lines unparseable: %v %v", u, r.Counters().Skipped, r.Counters().Samples)
			}
		})
	}
}

// TestCloudWatchExports reads logs with an ISO time column in front, as
// CloudWatch and S3 exports of RDS and Aurora write them, and checks they
// give the events of the same lines without it.
func TestCloudWatchExports(t *testing.T) {
	dir := "testdata/cloudwatch"
	for _, tc := range []struct{ export, plain string }{
		// RDS's own lines (pgbadger's rds.log), each with an export time.
		{"rds-export.log", "rds.log"},
		// A real server's stderr lines (testdata/syslog, run 2), with
		// multi-line statements whose continuation lines have no time.
		{"run2-export.log", "../syslog/run2.csv"},
	} {
		t.Run(tc.export, func(t *testing.T) {
			want, _ := readAllEvents(t, filepath.Join(dir, tc.plain), Options{})
			got, r := readAllEvents(t, filepath.Join(dir, tc.export), Options{})
			if !strings.Contains(r.Layout(), "ISO time column") {
				t.Errorf("layout %q", r.Layout())
			}
			slack := time.Duration(0)
			if strings.HasSuffix(tc.plain, ".csv") {
				slack = time.Millisecond
			}
			sameEvents(t, tc.export, got, want, slack)
			if u := r.Counters().Unparseable(); u != 0 {
				t.Errorf("%d lines unparseable: %v %v", u, r.Counters().Skipped, r.Counters().Samples)
			}
		})
	}
}

// TestAzureShapes writes the records of a real server's csvlog (run 2 of
// testdata/syslog) in each shape Azure's diagnostic logs take, as the
// samples in testdata/azure show them, and checks that each gives the
// csvlog's events: Flexible Server (the message holds the server's prefix
// line), Single Server (a "prefix" property, "%t-%c-"), an Event Hub's
// "records" arrays and a Log Analytics export (a JSON array of flat rows
// with typed column names).
func TestAzureShapes(t *testing.T) {
	csvPath := "testdata/syslog/run2.csv"
	want, _ := readAllEvents(t, csvPath, Options{})
	in, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	c := newCounters()
	entries := readEntries(t, newCSVReader(bytes.NewReader(in), c), c)
	ts := func(us int64, frac bool) string {
		if frac {
			return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000 UTC")
		}
		return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05 UTC")
	}
	// The stderr line of an entry, with run 2's prefix '%m [%p] %q%u@%d/%a '.
	line := func(e *entry, sev, msg string) string {
		p := ts(e.time, true) + " [" + strconv.Itoa(int(e.pid)) + "] "
		if e.user != "" {
			p += e.user + "@" + e.database + "/" + e.application + " "
		}
		return p + sev + ":  " + msg
	}
	type rec = map[string]any
	var flexible, single, analytics []rec
	for i := range entries {
		e := &entries[i]
		iso := time.UnixMicro(e.time).UTC().Format("2006-01-02T15:04:05.000Z")
		props := rec{"timestamp": ts(e.time, true), "processId": e.pid, "errorLevel": e.severity, "sqlerrcode": e.sqlstate,
			"message": line(e, e.severity, e.message)}
		if e.detail != "" {
			props["detail"] = e.detail
		}
		flexible = append(flexible, rec{"time": iso, "category": "PostgreSQLLogs", "operationName": "LogEvent", "properties": props})
		single = append(single, rec{"time": iso, "category": "PostgreSQLLogs", "properties": rec{
			"prefix": ts(e.time, false) + "-" + e.session + "-", "message": e.message, "detail": e.detail, "errorLevel": e.severity}})
		analytics = append(analytics, rec{"TimeGenerated": iso, "Category": "PostgreSQLLogs", "errorLevel_s": e.severity,
			"Message": line(e, e.severity, e.message), "processId_d": e.pid, "sqlerrcode_s": e.sqlstate, "detail_s": e.detail, "timestamp_s": ts(e.time, true)})
		if e.statement != "" {
			// The STATEMENT line, a record of its own.
			flexible = append(flexible, rec{"time": iso, "category": "PostgreSQLLogs", "properties": rec{"timestamp": ts(e.time, true),
				"processId": e.pid, "errorLevel": "STATEMENT", "sqlerrcode": e.sqlstate, "message": line(e, "STATEMENT", e.statement)}})
			single = append(single, rec{"time": iso, "properties": rec{"prefix": ts(e.time, false) + "-" + e.session + "-", "message": e.statement, "errorLevel": "STATEMENT"}})
			analytics = append(analytics, rec{"TimeGenerated": iso, "errorLevel_s": "STATEMENT", "Message": line(e, "STATEMENT", e.statement),
				"processId_d": e.pid, "sqlerrcode_s": e.sqlstate, "timestamp_s": ts(e.time, true)})
		}
	}
	jsonLines := func(recs []rec) []byte {
		var b bytes.Buffer
		for _, r := range recs {
			j, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(j)
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	var hub bytes.Buffer
	for i := 0; i < len(flexible); i += 7 {
		j, _ := json.Marshal(rec{"records": flexible[i:min(i+7, len(flexible))]})
		hub.Write(j)
		hub.WriteByte('\n')
	}
	la, err := json.MarshalIndent(analytics, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		data   []byte
		prefix string
		slack  time.Duration
	}{
		{"flexible.json", jsonLines(flexible), "%m [%p] %q%u@%d/%a ", 0},
		{"single.json", jsonLines(single), "%t-%c-", time.Second},
		{"eventhub.json", hub.Bytes(), "%m [%p] %q%u@%d/%a ", 0},
		{"loganalytics.json", la, "%m [%p] %q%u@%d/%a ", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, r := readAllEvents(t, path, Options{})
			if r.Prefix() != tc.prefix || !strings.Contains(r.Layout(), "Azure") {
				t.Errorf("layout %q prefix %q, want Azure, %q", r.Layout(), r.Prefix(), tc.prefix)
			}
			sameEvents(t, tc.name, got, want, tc.slack)
			if u := r.Counters().Unparseable(); u != 0 {
				t.Errorf("%d lines unparseable: %v %v", u, r.Counters().Skipped, r.Counters().Samples)
			}
		})
	}
}

// TestLocales reads logs a real server wrote with lc_messages in ten
// languages (testdata/locales), to stderr and csvlog: each must stop with
// ErrNotEnglish, naming the word that gave it away, whatever the language.
func TestLocales(t *testing.T) {
	files, err := filepath.Glob("testdata/locales/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".sh") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := Open(f, Options{})
			for err == nil {
				_, err = r.Next()
			}
			if !errors.Is(err, ErrNotEnglish) {
				t.Fatalf("err = %v, want ErrNotEnglish", err)
			}
			t.Log(err)
		})
	}
	if n < 20 {
		t.Errorf("%d locale logs, want 20", n)
	}
}

// TestTimeZones reads a line in each zone abbreviation that used to be
// read as UTC without a word, and in ambiguous ones: the times must be
// right, and the warnings say what was assumed; --timezone settles them.
func TestTimeZones(t *testing.T) {
	read := func(zone string, loc *time.Location) (int64, []string) {
		t.Helper()
		line := "2026-06-01 12:00:00.000 " + zone + " [1] LOG:  statement: SELECT 1\n"
		r, err := NewReader(strings.NewReader(line), "tz", Options{TimeZone: loc})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		return ev.Time, r.Warnings()
	}
	noon := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	for _, tc := range []struct {
		zone   string
		offset time.Duration // east of UTC
		warn   string        // in a warning, "" for none
	}{
		{"UTC", 0, ""},
		{"CEST", 2 * time.Hour, ""},
		{"EAT", 3 * time.Hour, ""},
		{"CAT", 2 * time.Hour, ""},
		{"WAT", 1 * time.Hour, ""},
		{"IDT", 3 * time.Hour, ""},
		{"HDT", -9 * time.Hour, ""},
		{"ChST", 10 * time.Hour, ""},
		{"SST", -11 * time.Hour, ""},
		{"CST", -6 * time.Hour, `"CST" is ambiguous: read as UTC-6 (America/Chicago), not UTC-5 (America/Havana) or UTC+8 (Asia/Shanghai)`},
		{"IST", 5*time.Hour + 30*time.Minute, `"IST" is ambiguous: read as UTC+5:30 (Asia/Kolkata)`},
		{"XYZT", 0, `"XYZT" is not an abbreviation the reader knows: read as UTC`},
	} {
		got, warnings := read(tc.zone, nil)
		if want := noon - tc.offset.Microseconds(); got != want {
			t.Errorf("%s: %s, want %s", tc.zone, time.UnixMicro(got).UTC(), time.UnixMicro(want).UTC())
		}
		if w := strings.Join(warnings, "\n"); tc.warn == "" && w != "" || !strings.Contains(w, tc.warn) {
			t.Errorf("%s: warnings %q, want %q", tc.zone, w, tc.warn)
		}
	}
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	got, warnings := read("CST", shanghai)
	if want := noon - 8*3600e6; got != want {
		t.Errorf("CST with --timezone Asia/Shanghai: %s", time.UnixMicro(got).UTC())
	}
	if w := strings.Join(warnings, "\n"); !strings.Contains(w, "Asia/Shanghai, as given") {
		t.Errorf("warnings %q", w)
	}
	got, _ = read("XYZT", shanghai)
	if want := noon - 8*3600e6; got != want {
		t.Errorf("XYZT with --timezone Asia/Shanghai: %s", time.UnixMicro(got).UTC())
	}
}

// TestLongFirstLine: a first line longer than the head the reader looks
// at (1.1 MB, a big statement) is read, not "the log is empty".
func TestLongFirstLine(t *testing.T) {
	const p = "2026-11-22 08:11:02.123 UTC [7] app@shop/web "
	big := "SELECT '" + strings.Repeat("x", 1100<<10) + "'"
	for _, tc := range []struct {
		name string
		log  string
	}{
		{"stderr", p + "LOG:  duration: 1.000 ms  statement: " + big + "\n" + p + "LOG:  duration: 1.000 ms  statement: SELECT 2\n"},
		{"jsonlog", `{"timestamp":"2026-11-22 08:11:02.123 UTC","pid":7,"error_severity":"LOG","message":"duration: 1.000 ms  statement: ` + big + `"}` + "\n" +
			`{"timestamp":"2026-11-22 08:11:02.123 UTC","pid":7,"error_severity":"LOG","message":"duration: 1.000 ms  statement: SELECT 2"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tc.log), "big", Options{})
			if err != nil {
				t.Fatal(err)
			}
			var queries []int
			for _, ev := range allEvents(t, r) {
				queries = append(queries, len(ev.Query))
			}
			if len(queries) != 2 || queries[0] != len(big) {
				t.Errorf("queries of %v bytes, want %d and 8", queries, len(big))
			}
		})
	}
}

// TestUnparseable: the skip reasons that mean lines the reader failed to
// read are told from those it had no use for, and the first line of each
// is kept as a sample.
func TestUnparseable(t *testing.T) {
	for reason, want := range map[string]bool{
		SkipNoPrefix: true, SkipOrphanLine: true, SkipMalformed: true, SkipUnsupportedLine: true,
		SkipTruncated: false, SkipCheckpoint: false, SkipAutovacuum: false, SkipConnection: false, SkipLockWait: false,
		SkipTempFile: false, SkipDurationAlone: false, SkipPortalFetch: false, SkipOtherMessage: false,
		SkipNotice: false, SkipBlank: false, SkipOtherProgram: false,
	} {
		if Unparseable(reason) != want {
			t.Errorf("Unparseable(%q) = %v", reason, !want)
		}
	}
	const p = "2026-11-22 08:11:02.123 UTC [7] app@shop/web "
	log := p + "LOG:  statement: SELECT 1\n" +
		"garbage one\n" +
		p + "LOG:  checkpoint starting: time\n" +
		"garbage two\n" +
		p + "LOG:  duration: 0.100 ms\n"
	r, err := NewReader(strings.NewReader(log), "t", Options{Prefix: "%m [%p] %q%u@%d/%a "})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	c := r.Counters()
	if c.Unparseable() != 2 || c.Skipped[SkipNoPrefix] != 2 || c.Skipped[SkipCheckpoint] != 1 {
		t.Errorf("counters %+v", c)
	}
	if s := c.Samples[SkipNoPrefix]; s.Line != 2 || s.Text != "garbage one" {
		t.Errorf("sample %+v, want line 2 \"garbage one\"", s)
	}
	if _, ok := c.Samples[SkipCheckpoint]; ok {
		t.Errorf("a sample of a harmless reason: %+v", c.Samples)
	}
}
