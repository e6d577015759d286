package logread

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// sharedFixtures holds the real-world logs of pgbadger's test suite (see
// testdata/README.md).
const sharedFixtures = "testdata/pgbadger/"

// readEntries reads every entry and, as the interpreter does, counts each
// entry's lines as parsed, so that c accounts for every line afterwards.
func readEntries(t testing.TB, fr formatReader, c *Counters) []entry {
	t.Helper()
	var out []entry
	for {
		ep, err := fr.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		e := *ep
		if e.f != nil {
			// A stderr reader's entry (an envelope's lines): its fields
			// as the other readers give them.
			e.pid, e.session, e.user, e.database, e.application, e.sqlstate = e.f.pid, e.f.session, e.f.user, e.f.database, e.f.application, e.f.sqlstate
			e.f = nil
		}
		if e.sev != prefix.SevNone {
			e.severity, e.sev = e.sev.String(), prefix.SevNone
		}
		if e.lines < 0 || e.lines == 0 && e.line < 1 {
			// 0 lines: a JSON value sharing its line with the one before.
			t.Fatalf("entry at line %d spans %d lines", e.line, e.lines)
		}
		c.parsed(e.lines)
		out = append(out, e)
	}
}

// physicalLines counts lines as an editor does: a last line without a
// newline still counts.
func physicalLines(b []byte) int64 {
	n := int64(bytes.Count(b, []byte{'\n'}))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// checkAccounting verifies that entries and skips cover every line once,
// in order and without overlap.
func checkAccounting(t testing.TB, input []byte, entries []entry, c *Counters) {
	t.Helper()
	want := physicalLines(input)
	if c.Total != want {
		t.Errorf("counters total %d lines, input has %d (parsed %d, skipped %v)", c.Total, want, c.Parsed, c.Skipped)
	}
	if c.Total != c.Parsed+c.SkippedTotal() {
		t.Errorf("total %d != parsed %d + skipped %d", c.Total, c.Parsed, c.SkippedTotal())
	}
	var prevEnd int64
	for _, e := range entries {
		if e.lines == 0 && e.line >= prevEnd && e.line <= want {
			continue // a JSON value on the line of the one before
		}
		if e.line <= prevEnd || e.line+e.lines-1 > want {
			t.Errorf("entry lines %d+%d overlap the previous (ending %d) or pass the end %d", e.line, e.lines, prevEnd, want)
			return
		}
		prevEnd = e.line + e.lines - 1
	}
}

// formatEntries renders entries for golden files: one header line per
// entry, then its text fields, quoted so that newlines and quotes show.
func formatEntries(entries []entry, c *Counters) string {
	var b strings.Builder
	for _, e := range entries {
		ts := "-"
		if e.time != 0 {
			ts = time.UnixMicro(e.time).UTC().Format("2006-01-02T15:04:05.000000Z")
		}
		fmt.Fprintf(&b, "line %d+%d %s pid=%d session=%q user=%q db=%q app=%q %s %s\n",
			e.line, e.lines, ts, e.pid, e.session, e.user, e.database, e.application, e.severity, e.sqlstate)
		for _, f := range []struct{ name, v string }{{"message", e.message}, {"detail", e.detail}, {"context", e.context}, {"statement", e.statement}} {
			if f.v != "" {
				fmt.Fprintf(&b, "  %s: %q\n", f.name, f.v)
			}
		}
	}
	fmt.Fprintf(&b, "total %d, parsed %d", c.Total, c.Parsed)
	reasons := c.Reasons()
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(&b, ", %s %d", r, c.Skipped[r])
	}
	b.WriteString("\n")
	return b.String()
}

// golden compares got with testdata file path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what was read (go test -update rewrites it); got:\n%s", path, got)
	}
}

// readFixture reads a shared fixture, decompressing .gz.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedFixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func readCSV(t testing.TB, input []byte) ([]entry, *Counters) {
	c := newCounters()
	entries := readEntries(t, newCSVReader(bytes.NewReader(input), c), c)
	checkAccounting(t, input, entries, c)
	return entries, c
}

// csvTail is the columns after message for a PostgreSQL 13 record with
// nothing in them but application_name and backend_type.
const csvTail = `,,,,,,,,,"psql","client backend"`

func csvRec(msg string) string {
	return `2026-11-22 08:11:02.123 UTC,"alice","shop",4242,"[local]",6383b33a.258,3,"SELECT",2026-11-22 08:10:00 UTC,3/7,0,LOG,00000,` + msg + csvTail
}

// readerT0 is the time of csvRec's and jsonTestRec's records.
var readerT0 = time.Date(2026, 11, 22, 8, 11, 2, 123000000, time.UTC).UnixMicro()

// fullEntry is the entry csvRec and jsonTestRec write for
// "statement: SELECT 1"; withEntry is it changed by f.
var fullEntry = entry{time: readerT0, pid: 4242, session: "6383b33a.258", user: "alice", database: "shop",
	application: "psql", severity: "LOG", sqlstate: "00000", message: "statement: SELECT 1", line: 1, lines: 1}

func withEntry(f func(*entry)) entry {
	e := fullEntry
	f(&e)
	return e
}

// readerCase is an input for a format reader, the entries it must give
// and the lines it must skip by reason (none for a reason not named).
type readerCase struct {
	name    string
	in      string
	want    []entry
	skipped map[string]int64
}

// runReaderCases reads each case's input with read, and an empty input
// (which must give nothing), and checks its entries and skipped lines.
func runReaderCases(t *testing.T, read func(testing.TB, []byte) ([]entry, *Counters), cases []readerCase) {
	for _, tc := range append(cases, readerCase{name: "empty input"}) {
		t.Run(tc.name, func(t *testing.T) {
			got, c := read(t, []byte(tc.in))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries, want %d:\n%s", len(got), len(tc.want), formatEntries(got, c))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], tc.want[i])
				}
			}
			for _, r := range c.Reasons() {
				if c.Skipped[r] != tc.skipped[r] {
					t.Errorf("skipped %q: %d, want %d", r, c.Skipped[r], tc.skipped[r])
				}
			}
			for r, n := range tc.skipped {
				if c.Skipped[r] != n {
					t.Errorf("skipped %q: %d, want %d", r, c.Skipped[r], n)
				}
			}
		})
	}
}

func TestCSVReader(t *testing.T) {
	t0, full, with := readerT0, fullEntry, withEntry
	cases := []readerCase{
		{
			name: "one record",
			in:   csvRec(`"statement: SELECT 1"`) + "\n",
			want: []entry{full},
		},
		{
			name: "no final newline",
			in:   csvRec(`"statement: SELECT 1"`),
			want: []entry{full},
		},
		{
			name: "CRLF line ends",
			in:   csvRec(`"statement: SELECT 1"`) + "\r\n" + csvRec(`"statement: SELECT 1"`) + "\r\n",
			want: []entry{full, with(func(e *entry) { e.line = 2 })},
		},
		{
			// "select * from ""users""": quotes are doubled inside a field
			name: "doubled quotes",
			in:   csvRec(`"statement: select * from ""users"" where n = 'a""b'"`) + "\n",
			want: []entry{with(func(e *entry) { e.message = `statement: select * from "users" where n = 'a"b'` })},
		},
		{
			// newlines inside quotes are literal and count as lines
			name: "embedded newlines",
			in: csvRec("\"statement: SELECT a,\n  b\n\nFROM t\"") + "\n" +
				csvRec(`"statement: SELECT 1"`) + "\n",
			want: []entry{
				with(func(e *entry) { e.message = "statement: SELECT a,\n  b\n\nFROM t"; e.lines = 4 }),
				with(func(e *entry) { e.line = 5 }),
			},
		},
		{
			name: "embedded CRLF kept",
			in:   csvRec("\"statement: SELECT 1\r\n\"") + "\n",
			want: []entry{with(func(e *entry) { e.message = "statement: SELECT 1\r\n"; e.lines = 2 })},
		},
		{
			name: "detail context query",
			in:   `2026-11-22 08:11:02.123 UTC,"alice","shop",4242,"[local]",6383b33a.258,3,"SELECT",2026-11-22 08:10:00 UTC,3/7,0,ERROR,22012,"division by zero","some detail","a hint",,,"SQL function ""f"" statement 1","SELECT f(1,` + "\n" + `2)",8,,"psql","client backend",,0` + "\n",
			want: []entry{with(func(e *entry) {
				e.severity, e.sqlstate, e.message, e.detail = "ERROR", "22012", "division by zero", "some detail"
				e.context, e.statement, e.lines = `SQL function "f" statement 1`, "SELECT f(1,\n2)", 2
			})},
		},
		{
			// PostgreSQL 8.4 wrote 22 columns: no application_name.
			name: "22 columns",
			in:   `2026-11-22 08:11:02.123 UTC,"alice","shop",4242,"[local]",6383b33a.258,3,"SELECT",2026-11-22 08:10:00 UTC,3/7,0,LOG,00000,"statement: SELECT 1",,,,,,,,` + "\n",
			want: []entry{with(func(e *entry) { e.application = "" })},
		},
		{
			name: "more columns than known",
			in:   csvRec(`"statement: SELECT 1"`) + `,0,1234,"future",x,y,z,1,2,3,4,5,6,7,8,9,10,11,12,13` + "\n",
			want: []entry{full},
		},
		{
			name: "empty fields",
			in:   `2026-11-22 08:11:02.123 UTC,,,,,,,,,,,,,,,,,,,,,,,` + "\n",
			want: []entry{{time: t0, line: 1, lines: 1}},
		},
		{
			name:    "too few columns",
			in:      `2026-11-22 08:11:02.123 UTC,"alice","shop",4242,LOG,"statement: SELECT 1"` + "\n" + csvRec(`"statement: SELECT 1"`) + "\n",
			want:    []entry{with(func(e *entry) { e.line = 2 })},
			skipped: map[string]int64{SkipMalformed: 1},
		},
		{
			name:    "garbage lines",
			in:      "hello world\n" + csvRec(`"statement: SELECT 1"`) + "\n\x00\xff\n" + `a,"b"c,d` + "\n",
			want:    []entry{with(func(e *entry) { e.line = 2 })},
			skipped: map[string]int64{SkipMalformed: 3},
		},
		{
			name:    "bad time",
			in:      strings.Replace(csvRec(`"statement: SELECT 1"`), "2026-11-22 08:11", "yesterday noon", 1) + "\n",
			skipped: map[string]int64{SkipMalformed: 1},
		},
		{
			name:    "bad pid",
			in:      strings.Replace(csvRec(`"statement: SELECT 1"`), "4242", "42a", 1) + "\n",
			skipped: map[string]int64{SkipMalformed: 1},
		},
		{
			name:    "blank lines",
			in:      "\n" + csvRec(`"statement: SELECT 1"`) + "\n\r\n",
			want:    []entry{with(func(e *entry) { e.line = 2 })},
			skipped: map[string]int64{SkipBlank: 2},
		},
		{
			// the server was killed while writing the last record
			name:    "cut inside quotes at EOF",
			in:      csvRec(`"statement: SELECT 1"`) + "\n" + `2026-11-22 08:11:03.000 UTC,"alice","shop",4242,"[local]",6383b33a.258,4,"SELECT",2026-11-22 08:10:00 UTC,3/7,0,LOG,00000,"statement: SELECT` + "\n  2,\n",
			want:    []entry{full},
			skipped: map[string]int64{SkipTruncated: 2},
		},
		{
			name:    "cut outside quotes at EOF",
			in:      csvRec(`"statement: SELECT 1"`) + "\n" + `2026-11-22 08:11:03.000 UTC,"alice","shop",4242,`,
			want:    []entry{full},
			skipped: map[string]int64{SkipTruncated: 1},
		},
	}
	runReaderCases(t, readCSV, cases)
}

// TestCSVReaderSmallReads feeds a record one byte at a time, so that every
// field and quote state crosses a read boundary.
func TestCSVReaderSmallReads(t *testing.T) {
	in := []byte(csvRec("\"statement: SELECT \"\"a\"\",\n 'b'\"") + "\n" + csvRec(`"x"`) + "\n")
	want, _ := readCSV(t, in)
	c := newCounters()
	got := readEntries(t, newCSVReader(&oneByteReader{b: in}, c), c)
	checkAccounting(t, in, got, c)
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("byte-by-byte read differs:\n%s\nwant\n%s", formatEntries(got, c), formatEntries(want, c))
	}
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

// TestCSVReaderLargeRecord checks a record larger than the read buffer is
// read whole, and the one after it too.
func TestCSVReaderLargeRecord(t *testing.T) {
	big := strings.Repeat("SELECT 'x\"\"y',\n", 200000) // ~3 MB, 200000 lines
	in := []byte(csvRec(`"statement: `+big+`"`) + "\n" + csvRec(`"statement: SELECT 1"`) + "\n")
	got, c := readCSV(t, in)
	if len(got) != 2 || len(got[0].message) != len("statement: ")+len(big)-200000*1 || got[0].lines != 200001 || got[1].line != 200002 {
		t.Fatalf("got %d entries; counters %+v", len(got), c)
	}
}

// shrinkBuffers makes records over 1 KB too long, so the cap on memory
// can be tested without 64 MB inputs. Tests using it must not be parallel.
func shrinkBuffers(t *testing.T) {
	oldBuf, oldMax := readBufSize, maxRecordSize
	readBufSize, maxRecordSize = 256, 1024
	t.Cleanup(func() { readBufSize, maxRecordSize = oldBuf, oldMax })
}

// TestCSVReaderTooLong checks a record over maxRecordSize is skipped as
// malformed, with all its lines, and reading goes on after it.
func TestCSVReaderTooLong(t *testing.T) {
	shrinkBuffers(t)
	long := csvRec(`"statement: `+strings.Repeat("SELECT 'x'\n", 50)+strings.Repeat("y", 2000)+`"`) + "\n"
	in := []byte(csvRec(`"statement: SELECT 1"`) + "\n" + long + csvRec(`"statement: SELECT 2"`) + "\n" + strings.Repeat("z", 3000))
	got, c := readCSV(t, in)
	// 51 lines of the long record, and the last line: 3000 bytes without
	// a newline are also too long.
	if len(got) != 2 || got[1].message != "statement: SELECT 2" || got[1].line != 53 ||
		c.Skipped[SkipMalformed] != 52 || c.SkippedTotal() != 52 {
		t.Errorf("got %s", formatEntries(got, c))
	}
	// an unterminated quote that runs past the cap until EOF
	in = []byte(csvRec(`"statement: SELECT 1"`) + "\n" + `"` + strings.Repeat("q\n", 1000))
	got, c = readCSV(t, in)
	if len(got) != 1 || c.Skipped[SkipMalformed] != 1000 {
		t.Errorf("got %s", formatEntries(got, c))
	}
}

func TestCSVGolden(t *testing.T) {
	readGoldens(t, "testdata/csvlog", ".csv", func(t *testing.T, in []byte) ([]entry, *Counters) {
		entries, c := readCSV(t, in)
		if c.SkippedTotal() != 0 {
			t.Errorf("skipped lines in a server-written csvlog: %v", c.Skipped)
		}
		return entries, c
	})
}

// readGoldens reads each dir/*ext with read and compares its entries with
// the .golden file beside it.
func readGoldens(t *testing.T, dir, ext string, read func(*testing.T, []byte) ([]entry, *Counters)) {
	files, err := filepath.Glob(dir + "/*" + ext)
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s/*%s: %v", dir, ext, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			entries, c := read(t, in)
			golden(t, strings.TrimSuffix(f, ext)+".golden", formatEntries(entries, c))
		})
	}
}

// TestCSVSharedFixtures reads the full shared csvlog fixtures and checks
// every line is accounted for and none is skipped.
func TestCSVSharedFixtures(t *testing.T) {
	for _, name := range []string{"anonymize.log", "csv_statement_without_duration.log", "weeknumber.log"} {
		t.Run(name, func(t *testing.T) {
			in := readFixture(t, name)
			entries, c := readCSV(t, in)
			if len(entries) == 0 || c.SkippedTotal() != 0 {
				t.Errorf("%d entries, skipped %v", len(entries), c.Skipped)
			}
		})
	}
}

func FuzzCSVReader(f *testing.F) {
	fuzzReader(f, readCSV, "testdata/csvlog", []string{"anonymize.csv", "weeknumber.csv"},
		csvRec(`"statement: SELECT 1"`)+"\n",
		csvRec("\"a\n\"\"b\"\"\n\"")+"\r\n\n",
		`2026-11-22 08:11:02.123 UTC,,,,,,,,,,,,,,,,,,,,,,,`,
		"\"unterminated\n,,\"\n\"")
}

// fuzzReader fuzzes read from the seeds and from dir's files named (those
// that are there).
func fuzzReader(f *testing.F, read func(testing.TB, []byte) ([]entry, *Counters), dir string, files []string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, name := range files {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		read(t, in)
	})
}

// benchInput repeats a file's content until it is at least n bytes.
func benchInput(b *testing.B, content []byte, n int) []byte {
	if len(content) == 0 {
		b.Fatal("empty benchmark input")
	}
	if content[len(content)-1] != '\n' {
		content = append(content, '\n')
	}
	out := make([]byte, 0, n+len(content))
	for len(out) < n {
		out = append(out, content...)
	}
	return out
}

// BenchmarkCSVReader reads each excerpt repeated to 64 MB: long records
// (anonymize, pg_vacuums) and short ones (weeknumber, cnpg).
func BenchmarkCSVReader(b *testing.B) {
	benchReader(b, "testdata/csvlog", []string{"anonymize.csv", "weeknumber.csv"}, newCSVReader)
}

// benchReader reads each of dir's files named, repeated to 64 MB, with
// the reader open makes.
func benchReader[R formatReader](b *testing.B, dir string, names []string, open func(io.Reader, *Counters) R) {
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			content, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				b.Fatal(err)
			}
			in := benchInput(b, content, 64<<20)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				c := newCounters()
				fr := open(bytes.NewReader(in), c)
				for _, err := fr.next(); err == nil; _, err = fr.next() {
				}
			}
		})
	}
}
