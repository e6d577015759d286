package logread

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestCSVAndJSONFromServer has a real PostgreSQL write the same statements
// to csvlog and jsonlog, and checks both readers return the same entries,
// with the SQL text exactly as sent: quotes doubled by csvlog and escaped
// by jsonlog, newlines literal in one and \n in the other.
func TestCSVAndJSONFromServer(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"logging_collector":          "on",
		"log_destination":            "csvlog,jsonlog",
		"log_min_duration_statement": "0",
	}})
	ctx := context.Background()
	statements := []string{
		"SELECT 1",
		"SELECT 'it''s a \"quoted\" string,\nwith \"\"doubled\"\" quotes\nand newlines\n\tand a tab' AS x",
		"SELECT a,\n       b\n  FROM (VALUES (1, 2)) AS t(a, b)\n -- a comment\r\n",
	}
	for _, sql := range statements {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			t.Fatalf("%q: %v", sql, err)
		}
	}
	failing := []struct{ sql, state, message, detail string }{
		{"SELECT 1/0", "22012", "division by zero", ""},
		{"DO $$ BEGIN\n  RAISE EXCEPTION 'boom \"%\"', 'x' USING DETAIL = E'two\\nlines \"quoted\"', ERRCODE = 'P0001';\nEND $$", "P0001", `boom "x"`, "two\nlines \"quoted\""},
	}
	for _, f := range failing {
		if err := c.Exec(ctx, "postgres", f.sql); err == nil {
			t.Fatalf("%q did not fail", f.sql)
		}
	}
	if err := c.StopServer(); err != nil {
		t.Fatalf("StopServer: %v", err)
	}

	read := func(pattern string, newReader func(*bytes.Reader, *Counters) formatReader) []entry {
		files, err := c.LogFiles(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s log files: %v", pattern, err)
		}
		var all []entry
		for _, f := range files {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cs := newCounters()
			entries := readEntries(t, newReader(bytes.NewReader(in), cs), cs)
			checkAccounting(t, in, entries, cs)
			if cs.SkippedTotal() != 0 {
				t.Errorf("%s: skipped %v\n%s", f, cs.Skipped, in)
			}
			for i := range entries {
				entries[i].line, entries[i].lines = 0, 0 // they differ by format
			}
			all = append(all, entries...)
		}
		return all
	}
	csv := read("*.csv", func(r *bytes.Reader, cs *Counters) formatReader { return newCSVReader(r, cs) })
	jsn := read("*.json", func(r *bytes.Reader, cs *Counters) formatReader { return newJSONReader(r, cs) })

	// The collector writes each destination as its processes send their
	// lines: two processes' lines may come in another order in each.
	for _, es := range [][]entry{csv, jsn} {
		slices.SortStableFunc(es, func(a, b entry) int {
			return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(a.pid, b.pid))
		})
	}
	if len(csv) != len(jsn) {
		t.Fatalf("csvlog has %d entries, jsonlog %d:\n%s\n%s", len(csv), len(jsn), formatEntries(csv, newCounters()), formatEntries(jsn, newCounters()))
	}
	for i := range csv {
		if csv[i] != jsn[i] {
			t.Errorf("entry %d differs:\n csv %+v\njson %+v", i, csv[i], jsn[i])
		}
	}

	find := func(pred func(e *entry) bool) *entry {
		for i := range csv {
			if pred(&csv[i]) {
				return &csv[i]
			}
		}
		return nil
	}
	for _, sql := range statements {
		e := find(func(e *entry) bool {
			return strings.HasPrefix(e.message, "duration: ") && strings.HasSuffix(e.message, " ms  statement: "+sql)
		})
		if e == nil {
			t.Errorf("no entry logs %q with its duration", sql)
			continue
		}
		if e.user != c.User() || e.database != "postgres" || e.pid == 0 || e.session == "" || e.time == 0 || e.severity != "LOG" {
			t.Errorf("entry for %q: %+v", sql, *e)
		}
	}
	for _, f := range failing {
		e := find(func(e *entry) bool { return e.severity == "ERROR" && e.statement == f.sql })
		if e == nil {
			t.Errorf("no ERROR entry with statement %q", f.sql)
			continue
		}
		if e.sqlstate != f.state || e.message != f.message || e.detail != f.detail {
			t.Errorf("error entry for %q: %+v", f.sql, *e)
		}
	}
}
