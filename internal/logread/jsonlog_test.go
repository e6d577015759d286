package logread

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func readJSON(t testing.TB, input []byte) ([]entry, *Counters) {
	c := newCounters()
	fr, _, err := newJSONFormat(newJSONReader(bytes.NewReader(input), c), c)
	if err != nil {
		t.Fatal(err)
	}
	entries := readEntries(t, fr, c)
	checkAccounting(t, input, entries, c)
	return entries, c
}

// jsonTestRec is a PostgreSQL 15 jsonlog line with the given extra members.
func jsonTestRec(extra string) string {
	return `{"timestamp":"2026-11-22 08:11:02.123 UTC","user":"alice","dbname":"shop","pid":4242,"remote_host":"[local]","session_id":"6383b33a.258","line_num":3,"ps":"SELECT","session_start":"2026-11-22 08:10:00 UTC","vxid":"3/7","txid":0,"error_severity":"LOG",` + extra + `,"application_name":"psql","backend_type":"client backend","query_id":0}`
}

func TestJSONReader(t *testing.T) {
	t0, full, with := readerT0, fullEntry, withEntry
	cloud := func(ts, text string) string {
		b, _ := json.Marshal(text)
		return `{"insertId":"x","resource":{"labels":{"a":"b"},"type":"cloudsql_database"},"severity":"INFO","textPayload":` + string(b) + `,"timestamp":"` + ts + `"}` + "\n"
	}
	cases := []readerCase{
		{
			name: "jsonlog",
			in:   jsonTestRec(`"message":"statement: SELECT 1"`) + "\n",
			want: []entry{full},
		},
		{
			name: "no final newline, CRLF, spaces",
			in:   jsonTestRec(`"message":"statement: SELECT 1"`) + "\r\n" + " " + strings.ReplaceAll(jsonTestRec(`"message" : "statement: SELECT 1"`), ",", " , ") + " ",
			want: []entry{full, with(func(e *entry) { e.line = 2 })},
		},
		{
			name: "escapes",
			in:   jsonTestRec(`"message":"statement: SELECT 'a\"b\\c',\n\t\u00e9\ud83d\ude00\u0001\/"`) + "\n",
			want: []entry{with(func(e *entry) { e.message = "statement: SELECT 'a\"b\\c',\n\t\u00e9\U0001F600\x01/" })},
		},
		{
			name: "lone surrogate",
			in:   jsonTestRec(`"message":"x\ud83dy"`) + "\n",
			want: []entry{with(func(e *entry) { e.message = "x\uFFFDy" })},
		},
		{
			name: "error with detail context statement",
			in:   jsonTestRec(`"state_code":"22012","message":"division by zero","detail":"d","hint":"h","context":"SQL function \"f\"","statement":"SELECT f(1)","cursor_position":8`) + "\n",
			want: []entry{with(func(e *entry) {
				e.sqlstate, e.message, e.detail, e.context, e.statement = "22012", "division by zero", "d", `SQL function "f"`, "SELECT f(1)"
			})},
		},
		{
			name: "nulls and unknown nested values",
			in:   jsonTestRec(`"message":"statement: SELECT 1","detail":null,"extra":{"a":[1,{"b":"}"}],"c":true},"more":[[],{}]`) + "\n",
			want: []entry{full},
		},
		{
			name: "cnpg record",
			in:   `{"level":"info","ts":1669575482.0968924,"logger":"postgres","msg":"record","logging_pod":"p-1","record":{"log_time":"2026-11-22 08:11:02.123 UTC","user_name":"alice","database_name":"shop","process_id":"4242","connection_from":"[local]","session_id":"6383b33a.258","session_line_num":"4","error_severity":"LOG","sql_state_code":"00000","message":"statement: SELECT 1","application_name":"psql","backend_type":"client backend","query_id":"0"}}` + "\n",
			want: []entry{with(func(e *entry) { e.sqlstate = "00000" })},
		},
		{
			name: "cnpg error with query",
			in:   `{"level":"info","ts":1669575023.5332925,"logger":"postgres","msg":"record","record":{"log_time":"2026-11-22 08:11:02.123 UTC","process_id":"4242","error_severity":"ERROR","sql_state_code":"42601","message":"syntax error at or near \"CREATE\"","query":"CREATE TABLE t(\n  a int\n);","query_pos":"1"}}` + "\n",
			want: []entry{{time: t0, pid: 4242, severity: "ERROR", sqlstate: "42601", message: `syntax error at or near "CREATE"`, statement: "CREATE TABLE t(\n  a int\n);", line: 1, lines: 1}},
		},
		{
			// the operator's own messages, and stderr lines copied before
			// the logging collector started
			name: "cnpg other lines",
			in: `{"level":"info","ts":1669575244.9152422,"logger":"wal-archive","msg":"Backup not configured, skip WAL archiving","walName":"pg_wal/000000010000000000000003"}` + "\n" +
				`{"level":"info","ts":1669574898.9460704,"logger":"postgres","msg":"2022-11-27 18:48:18.943 UTC [28] LOG:  ending log output to stderr","source":"/controller/log/postgres"}` + "\n",
			skipped: map[string]int64{SkipUnsupportedLine: 2},
		},
		{
			name: "cloud logging jsonPayload",
			in:   `{"insertId":"x","jsonPayload":{"pid":4242,"error_severity":"LOG","message":"statement: SELECT 1","user":"alice"},"severity":"INFO","timestamp":"2026-11-22T08:11:02.123Z"}` + "\n",
			want: []entry{{time: t0, pid: 4242, user: "alice", severity: "LOG", message: "statement: SELECT 1", line: 1, lines: 1}},
		},
		{
			name: "cloud sql text with continuations",
			in: cloud("2026-11-22T08:11:02.123Z", `[24670]: [1-1] db=,user= LOG:  automatic vacuum of table "t.public.x": index scans: 0`) +
				cloud("2026-11-22T08:11:02.124Z", "\tpages: 0 removed, 1 remain") +
				cloud("2026-11-22T08:11:02.125Z", "\ttuples: 60 removed") +
				cloud("2026-11-22T08:11:02.126Z", `[202]: [4-1] db=test,user=admin ERROR:  division by zero`) +
				cloud("2026-11-22T08:11:02.127Z", `[202]: [5-1] db=test,user=admin STATEMENT:  SELECT 1/0`) +
				cloud("2026-11-22T08:11:02.128Z", "\t  FROM t") +
				cloud("2026-11-22T08:11:02.129Z", `[203]: [1-1] db=[unknown],user=[unknown] LOG:  connection received: host=127.0.0.1 port=59760`),
			want: []entry{
				{time: t0, pid: 24670, severity: "LOG", message: "automatic vacuum of table \"t.public.x\": index scans: 0\npages: 0 removed, 1 remain\ntuples: 60 removed", line: 1, lines: 3},
				{time: t0 + 3000, pid: 202, user: "admin", database: "test", severity: "ERROR", message: "division by zero", statement: "SELECT 1/0\n  FROM t", line: 4, lines: 3},
				{time: t0 + 6000, pid: 203, user: "[unknown]", database: "[unknown]", severity: "LOG", message: "connection received: host=127.0.0.1 port=59760", line: 7, lines: 1},
			},
		},
		{
			name: "cloud sql orphans and other text",
			in: cloud("2026-11-22T08:11:02.123Z", "\tpages: 0 removed") +
				cloud("2026-11-22T08:11:02.123Z", `[202]: [5-1] db=test,user=admin DETAIL:  x`) +
				cloud("2026-11-22T08:11:02.123Z", `2026-11-22 08:11:02 UTC LOG:  other prefix`),
			skipped: map[string]int64{SkipOrphanLine: 2, SkipNoPrefix: 1},
		},
		{
			name: "garbage",
			in: "not json\n" + `{"a":1}` + "\n" + `{"timestamp":` + "\n" + `[1,2]` + "\n" + `{"error_severity":"LOG"} x` + "\n" +
				`{"error_severity":"LOG","pid":"x"}` + "\n" + `{"error_severity":"LOG","timestamp":"yesterday"}` + "\n" +
				`{"error_severity":"LOG","message":"\x"}` + "\n" + `{"error_severity":"LOG","message":"\u12"}` + "\n" +
				jsonTestRec(`"message":"statement: SELECT 1"`) + "\n",
			want:    []entry{with(func(e *entry) { e.line = 10 })},
			skipped: map[string]int64{SkipMalformed: 8, SkipUnsupportedLine: 1},
		},
		{
			name:    "blank lines",
			in:      "\n" + jsonTestRec(`"message":"statement: SELECT 1"`) + "\n \t\r\n",
			want:    []entry{with(func(e *entry) { e.line = 2 })},
			skipped: map[string]int64{SkipBlank: 2},
		},
		{
			name:    "cut at EOF",
			in:      jsonTestRec(`"message":"statement: SELECT 1"`) + "\n" + `{"timestamp":"2026-11-22 08:11:02.123 UTC","pid":42`,
			want:    []entry{full},
			skipped: map[string]int64{SkipTruncated: 1},
		},
	}
	runReaderCases(t, readJSON, cases)
}

// TestJSONReaderMatchesEncodingJSON checks the hand-written scanner decodes
// strings as encoding/json does, on every line of the jsonlog excerpt.
func TestJSONReaderMatchesEncodingJSON(t *testing.T) {
	in, err := os.ReadFile("testdata/jsonlog/pg_vacuums.json")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readJSON(t, in)
	lines := bytes.Split(bytes.TrimRight(in, "\n"), []byte("\n"))
	if len(got) != len(lines) {
		t.Fatalf("%d entries for %d lines", len(got), len(lines))
	}
	for i, l := range lines {
		var m struct {
			Timestamp string `json:"timestamp"`
			PID       int32  `json:"pid"`
			Session   string `json:"session_id"`
			Severity  string `json:"error_severity"`
			Message   string `json:"message"`
			Detail    string `json:"detail"`
			Context   string `json:"context"`
			Statement string `json:"statement"`
			User      string `json:"user"`
			DB        string `json:"dbname"`
			App       string `json:"application_name"`
			State     string `json:"state_code"`
		}
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		ts, _ := parseLogTime([]byte(m.Timestamp))
		if m.State == "" {
			m.State = "00000" // left out by jsonlog when it is 00000
		}
		want := entry{time: ts, pid: m.PID, session: m.Session, user: m.User, database: m.DB, application: m.App,
			severity: m.Severity, sqlstate: m.State, message: m.Message, detail: m.Detail, context: m.Context,
			statement: m.Statement, line: int64(i + 1), lines: 1}
		if got[i] != want {
			t.Errorf("line %d:\n got %+v\nwant %+v", i+1, got[i], want)
		}
	}
}

func TestJSONReaderLongLine(t *testing.T) {
	big := strings.Repeat(`SELECT 1;\n`, 300000) // ~3 MB on one line
	in := []byte(jsonTestRec(`"message":"statement: `+big+`"`) + "\n" + jsonTestRec(`"message":"statement: SELECT 1"`) + "\n")
	got, c := readJSON(t, in)
	if len(got) != 2 || len(got[0].message) != len("statement: ")+len(big)-300000 || got[1].line != 2 {
		t.Fatalf("got %d entries; counters %+v", len(got), c)
	}
	// and byte by byte across reads
	c = newCounters()
	small := []byte(jsonTestRec(`"message":"statement: SELECT \"1\""`) + "\n" + jsonTestRec(`"message":"x"`))
	got = readEntries(t, newJSONReader(&oneByteReader{b: small}, c), c)
	checkAccounting(t, small, got, c)
	if len(got) != 2 || got[0].message != `statement: SELECT "1"` {
		t.Fatalf("byte by byte: %s", formatEntries(got, c))
	}
}

func TestJSONReaderTooLong(t *testing.T) {
	shrinkBuffers(t)
	in := []byte(jsonTestRec(`"message":"statement: SELECT 1"`) + "\n" +
		jsonTestRec(`"message":"`+strings.Repeat("x", 3000)+`"`) + "\n" +
		jsonTestRec(`"message":"statement: SELECT 2"`) + "\n" + strings.Repeat("z", 3000))
	got, c := readJSON(t, in)
	if len(got) != 2 || got[1].message != "statement: SELECT 2" || got[1].line != 3 ||
		c.Skipped[SkipMalformed] != 2 || c.SkippedTotal() != 2 {
		t.Errorf("got %s", formatEntries(got, c))
	}
}

func TestJSONGolden(t *testing.T) {
	readGoldens(t, "testdata/jsonlog", ".json", func(t *testing.T, in []byte) ([]entry, *Counters) { return readJSON(t, in) })
}

// TestJSONSharedFixtures reads the full shared json fixtures: every line
// accounted for, and only the lines known not to be PostgreSQL records
// skipped.
func TestJSONSharedFixtures(t *testing.T) {
	cases := []struct {
		name       string
		minEntries int
		// allowed skip reasons: pg_vacuums is plain jsonlog (none);
		// cnpg has operator lines (unsupported); cloudsql none, since
		// every tab line follows its entry.
		allowed map[string]bool
	}{
		{"pg_vacuums.json.gz", 3544, nil},
		{"cnpg.log.gz", 1975, map[string]bool{SkipUnsupportedLine: true}},
		{"cloudsql.log.gz", 1100, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := readFixture(t, tc.name)
			entries, c := readJSON(t, in)
			if len(entries) < tc.minEntries {
				t.Errorf("%d entries, want at least %d", len(entries), tc.minEntries)
			}
			for r, n := range c.Skipped {
				if !tc.allowed[r] {
					t.Errorf("skipped %d lines as %q", n, r)
				}
			}
		})
	}
}

func FuzzJSONReader(f *testing.F) {
	fuzzReader(f, readJSON, "testdata/jsonlog", []string{"cnpg.json", "cloudsql.json"},
		jsonTestRec(`"message":"statement: SELECT 1"`)+"\n",
		`{"record":{"log_time":"2026-11-22 08:11:02.123 UTC","error_severity":"LOG","message":"a\nb\u00e9"}}`+"\n{}\n",
		`{"textPayload":"[1]: [1-1] db=a,user=b LOG:  x","timestamp":"2020-05-02T13:00:20Z"}`+"\n"+`{"textPayload":"\tmore"}`+"\n"+`{"textPayload":"[1]: [2-1] db=a,user=b DETAIL:  y"}`,
		"[[[[{\"a\":\"\\\"")
}

// BenchmarkJSONReader reads each excerpt repeated to 64 MB: long records
// (anonymize, pg_vacuums) and short ones (weeknumber, cnpg).
func BenchmarkJSONReader(b *testing.B) {
	benchReader(b, "testdata/jsonlog", []string{"pg_vacuums.json", "cnpg.json"}, newJSONReader)
}
