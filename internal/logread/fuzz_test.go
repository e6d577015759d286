package logread

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// fuzzPrefixes are the prefixes FuzzStderrReader reads with, by index; the
// last, empty one makes the reader detect the prefix.
var fuzzPrefixes = []string{
	"%m [%p] ",
	"%m [%p] %q%u@%d/%a %c %e ",
	"%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
	"%t:%r:%u@%d:[%p]:",
	"%-10u %5p %x|",
	"",
}

func FuzzStderrReader(f *testing.F) {
	const ts = "2026-11-22 08:11:02.123 UTC"
	f.Add([]byte(ts+" [1] LOG:  statement: SELECT 1\n"+ts+" [1] LOG:  duration: 0.1 ms\n"), uint8(0))
	f.Add([]byte(ts+" [1] app@shop/web 6571e2a3.1 00000 LOG:  duration: 1.0 ms  execute S_1: SELECT $1\n"+
		ts+" [1] app@shop/web 6571e2a3.1 00000 DETAIL:  parameters: $1 = 'a\n\tb'\n"+
		ts+" [1] app@shop/web 6571e2a3.1 22012 ERROR:  division by zero\n"+
		ts+" [1] app@shop/web 6571e2a3.1 22012 STATEMENT:  SELECT 1/0"), uint8(1))
	f.Add([]byte("2017-09-06 08:41:41 UTC [36]: [121-1] user=postgres,db=postgres,app=pgbench,client=172.23.0.1 LOG:  duration: 2.280 ms  statement: END;\n\tmore\n\n"), uint8(2))
	f.Add([]byte("2020-03-11 20:40:50 CET:192.168.1.201(50906):gilles@pgbench:[12795]:FATAL:  no pg_hba.conf entry\r\n"), uint8(3))
	f.Add([]byte("\tDETAIL:  x\ngarbage\n"+ts+" [2] FEHLER:  x\n"), uint8(5))
	for _, g := range goldenStderr {
		if b, err := os.ReadFile("testdata/stderr/" + g.file); err == nil {
			f.Add(b, uint8(5))
		}
	}
	// A parallel worker's error and its leader's under the bare prefix
	// (held, then dropped), and one released by another line.
	f.Add([]byte(ts+" [7] ERROR:  division by zero\n"+ts+" [7] STATEMENT:  SELECT 1/a FROM t\n"+
		ts+" [6] LOG:  duration: 1.0 ms  statement: SELECT 2\n"+
		ts+" [6] ERROR:  division by zero\n"+ts+" [6] CONTEXT:  parallel worker\n"+ts+" [6] STATEMENT:  SELECT 1/a FROM t\n"+
		ts+" [8] ERROR:  division by zero\n"+ts+" [8] STATEMENT:  SELECT 1/0\n"+ts+" [8] LOG:  duration: 1.0 ms  statement: SELECT 3\n"), uint8(len(fuzzPrefixes)))
	f.Add([]byte(ts+" [1] LOG:  duration: 0.2 ms  fastpath function call: \"lo_open\" (OID 952)\n"), uint8(len(fuzzPrefixes)))
	f.Fuzz(func(t *testing.T, in []byte, which uint8) {
		ps := fuzzPrefixes[int(which)%len(fuzzPrefixes)]
		r, err := NewReader(bytes.NewReader(in), "fuzz", Options{Format: FormatStderr, Prefix: ps})
		if err != nil {
			if ps == "" && (errors.Is(err, ErrUnknownPrefix) || errors.Is(err, ErrAmbiguousPrefix) || errors.Is(err, ErrNotEnglish) ||
				errors.Is(err, ErrPgbouncer) || errors.Is(err, ErrEmptyLog)) {
				return
			}
			if errors.Is(err, ErrEmptyLog) || errors.Is(err, ErrNotALog) {
				return
			}
			t.Fatalf("NewReader with prefix %q: %v", ps, err)
		}
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				// A foreign language stops the reader where it was seen.
				if !errors.Is(err, ErrNotEnglish) {
					t.Fatalf("Next: %v", err)
				}
				c := r.Counters()
				if c.Total != c.Parsed+c.SkippedTotal() || c.Total > physicalLines(in) {
					t.Fatalf("counters %+v, input has %d lines", c, physicalLines(in))
				}
				return
			}
			if ev.Kind < event.Connect || ev.Kind > event.Error || ev.Line < 1 || ev.Line > physicalLines(in) {
				t.Fatalf("bad event %+v", ev)
			}
			if ev.Kind == event.Execute && ev.ParamState == event.ParamsMissing && len(ev.Params) > 0 {
				t.Fatalf("parameters missing, yet %d read: %+v", len(ev.Params), ev)
			}
		}
		c := r.Counters()
		if want := physicalLines(in); c.Total != want {
			t.Fatalf("lines.total = %d, input has %d lines (parsed %d, skipped %v)", c.Total, want, c.Parsed, c.Skipped)
		}
		if c.Total != c.Parsed+c.SkippedTotal() {
			t.Fatalf("total %d != parsed %d + skipped %d", c.Total, c.Parsed, c.SkippedTotal())
		}
	})
}

// formatParams writes parameters as the server does in a DETAIL line.
func formatParams(vals []event.Param) string {
	var b strings.Builder
	b.WriteString("parameters: ")
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i+1) + " = ")
		if v.Null {
			b.WriteString("NULL")
		} else {
			b.WriteString("'" + strings.ReplaceAll(v.Value, "'", "''") + "'")
		}
	}
	return b.String()
}

func FuzzParseParams(f *testing.F) {
	f.Add("parameters: $1 = '42', $2 = NULL, $3 = 'it''s'", "SELECT $1, $2, $3", "a\x00\x01\x00it's")
	f.Add("Parameters: $1 = 'abc...'", "SELECT $1", "line\none")
	f.Add("parameters: $1 = 'unterminated", "", "")
	f.Add("parameters: $1 = NULLx", "$", "NULL")
	f.Add("", "SELECT '$1'", "'")
	f.Fuzz(func(t *testing.T, detail, query, vals string) {
		params, state := parseParams(detail, query)
		if state > event.ParamsTruncated {
			t.Fatalf("state %d", state)
		}
		if state == event.ParamsMissing && len(params) > 0 {
			t.Fatalf("missing parameters, yet %d parsed", len(params))
		}
		// Values written the server's way read back as they were: "\x01"
		// alone stands for NULL, "\x00" separates values.
		var want []event.Param
		for _, v := range strings.Split(vals, "\x00") {
			if v == "\x01" {
				want = append(want, event.Param{Null: true})
			} else {
				want = append(want, event.Param{Value: v})
			}
		}
		got, state := parseParams(formatParams(want), query)
		wantState := event.ParamsComplete
		for _, p := range want {
			if strings.HasSuffix(p.Value, "...") {
				wantState = event.ParamsTruncated
			}
		}
		if state != wantState || !equalParams(got, want) {
			t.Fatalf("parseParams(%q) = %+v %d, want %+v %d", formatParams(want), got, state, want, wantState)
		}
	})
}

// FuzzReaderAuto reads anything with nothing given: detection of the
// format, the envelope and the prefix, then whichever reader that picks.
// It must not panic, and every line must be accounted for.
func FuzzReaderAuto(f *testing.F) {
	for _, p := range []string{"testdata/syslog/bsd.log", "testdata/syslog/rfc5424.log", "testdata/syslog/journald.log",
		"testdata/cloudwatch/run2-export.log", "testdata/cloudsql/textpayload.log", "testdata/azure/eventhub.json",
		"testdata/azure/single.json", "testdata/verbose/stderr.log", "testdata/locales/ja.log",
		"testdata/autoexplain/stderr.log", "testdata/autoexplain/csvlog.csv", "testdata/autoexplain/jsonlog.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b[:min(len(b), 4000)])
		}
	}
	f.Add([]byte("[\n  {\n    \"textPayload\": \"[1]: [1-1] db=a,user=b LOG:  statement: SELECT 1\",\n    \"timestamp\": \"2020-05-02T13:00:20Z\"\n  }\n]\n"))
	f.Add([]byte(`{"records":[{"time":"2023-02-27T23:21:40Z","properties":{"prefix":"2023-02-27 23:21:40 UTC-63fd3b04.cf0-","message":"duration: 0.1 ms  statement: SELECT 1","errorLevel":"LOG"}}]}` + "\n"))
	f.Add([]byte("Feb 11 13:15:39 h postgres[1]: [7-1] db=a LOG:  statement: SELECT 'x\nFeb 11 13:15:39 h postgres[2]: [3-1] db=a LOG:  x\nFeb 11 13:15:39 h postgres[1]: [7-2] #011y'\n"))
	f.Add([]byte("\x9c\x11\xe0\x07h\x8a\x02\xf4\xc3L\x1b\x00\x85\x7f\x13\xd9\x9e4\x05\xbb\xa1\x16\x08\xcc\xef\x03"))
	f.Add([]byte(`{"level":"info","msg":"not a server's record"}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in), "fuzz", Options{Year: 2026})
		if err != nil {
			// Refused: a clear error, which is all that is asked; no
			// log at all is said without its bytes.
			if errors.Is(err, ErrNotALog) && !printableASCII(err.Error()) {
				t.Fatalf("not a log, said with its bytes: %q", err)
			}
			return
		}
		for {
			ev, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrNotEnglish) {
					t.Fatalf("Next: %v", err)
				}
				if err == io.EOF {
					c := r.Counters()
					if c.Total != c.Parsed+c.SkippedTotal() {
						t.Fatalf("total %d != parsed %d + skipped %d", c.Total, c.Parsed, c.SkippedTotal())
					}
					if want := physicalLines(in); c.Total != want {
						t.Fatalf("lines.total = %d, input has %d lines (%s, parsed %d, skipped %v)", c.Total, want, r.Layout(), c.Parsed, c.Skipped)
					}
				}
				return
			}
			if ev.Kind < event.Connect || ev.Kind > event.Error || ev.Line < 1 || ev.Line > physicalLines(in) {
				t.Fatalf("bad event %+v", ev)
			}
		}
	})
}

// FuzzFastPathName: a fast-path call's message is read for its function's
// name or refused, never half read: a name read is not empty and reads
// back the same from the message fastpath.c would write for it, and its
// query begins with FastPathPrefix.
func FuzzFastPathName(f *testing.F) {
	for _, s := range []string{`"lo_open" (OID 952)`, `"my "f" (OID 16999)`, `lo_open (OID 952)`, `"" (OID 1)`,
		`"lo_open" (OID x)`, `"lo_open" (OID 952`, `"`, `"a" (OID 99999999999)`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ok := fastPathName(s)
		if !ok {
			return
		}
		if name == "" {
			t.Fatalf("%q: an empty name", s)
		}
		if again, ok := fastPathName(`"` + name + `" (OID 1)`); !ok || again != name {
			t.Fatalf("%q: name %q reads back as %q, %v", s, name, again, ok)
		}
		if q := FastPathQuery(name); !strings.HasPrefix(q, FastPathPrefix) {
			t.Fatalf("%q: query %q", s, q)
		}
	})
}
