package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// digestVersionsData holds values whose text depends on the session's
// settings (timestamps, dates, floats, intervals, bytea, numerics, a
// jsonb), in a table with an integer key (ranges), one with a composite
// key and one without a key (one range each).
const digestVersionsData = `SET TimeZone = 'UTC';
CREATE TABLE k (id int PRIMARY KEY, at timestamptz, day date, f float8, r real, d interval, raw bytea, n numeric, j jsonb);
INSERT INTO k SELECT g, '2024-01-01 00:00:00+00'::timestamptz + g * interval '17 minutes 3.25 seconds', '2024-02-29'::date + g,
  g / 7.0, g / 3.0, g * interval '1 day 3 hours 5.5 seconds', int4send(g), g / 9.0, jsonb_build_object('g', g, 'f', g / 7.0)
  FROM generate_series(1, 800) g;
CREATE TABLE pair (a int, b text, at timestamp, PRIMARY KEY (a, b));
INSERT INTO pair SELECT g, 'b' || g, '2024-01-01'::timestamp + g * interval '1 hour' FROM generate_series(1, 300) g;
CREATE TABLE nokey (v numeric, f float4); INSERT INTO nokey SELECT g / 3.0, g / 11.0 FROM generate_series(1, 50) g;`

// TestVersionsDigests digests the same data on every major of
// pgcluster.Majors, each server set to write values otherwise (TimeZone,
// DateStyle, extra_float_digits, IntervalStyle, bytea_output): the
// digests are equal on all, range by range, and each version's target
// read on the first version's ranges compares equal: a candidate on
// another major (an upgrade's) matches its source.
func TestVersionsDigests(t *testing.T) {
	ctx := context.Background()
	// The servers write values in turn in two ways.
	settings := []map[string]string{
		{"timezone": "Asia/Tokyo", "datestyle": "German, DMY", "extra_float_digits": "-2", "intervalstyle": "iso_8601", "bytea_output": "escape"},
		{"timezone": "America/St_Johns", "datestyle": "SQL, MDY", "extra_float_digits": "0", "intervalstyle": "sql_standard", "bytea_output": "hex"},
	}
	var first *capture.TableDigests
	var firstMajor int
	var firstText string
	for i, major := range pgcluster.Majors {
		// One subtest a version (docs/versions.md's cells), each read
		// against the first's digests.
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			if i > 0 && first == nil {
				t.Fatalf("PostgreSQL %d's digests, which the others are read against, failed", pgcluster.Majors[0])
			}
			c := pgclustertest.StartVersion(t, major, settings[i%2])
			pgclustertest.Exec(t, c, "postgres", digestVersionsData)
			conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
			// The servers' own text of a row differs: the digest's session
			// settings are what make the digests equal.
			var text string
			if err := conn.QueryRow(ctx, "SELECT k::text FROM k WHERE id = 1").Scan(&text); err != nil {
				t.Fatal(err)
			}
			if i == 1 && text == firstText {
				t.Fatalf("PostgreSQL %d and %d write a row alike, %s: the settings test nothing", major, firstMajor, text)
			}
			rec, err := catalog.DigestTables(ctx, conn, 1<<30, nil)
			if err != nil {
				t.Fatalf("PostgreSQL %d: %v", major, err)
			}
			shape := fmt.Sprint(len(rec.Tables))
			for _, td := range rec.Tables {
				shape += fmt.Sprintf(" %s %q %d %q;", td.Name, td.Key, len(td.Ranges), td.NotDigested)
			}
			if want := `3 k "id" 17 ""; nokey "" 1 ""; pair "" 1 "";`; shape != want {
				t.Fatalf("PostgreSQL %d: tables %s, want %s", major, shape, want)
			}
			if first == nil {
				first, firstMajor, firstText = rec, major, text
				return
			}
			if got, want := ranges(rec), ranges(first); got != want {
				t.Errorf("PostgreSQL %d's digests differ from %d's:\n%s\n%s", major, firstMajor, got, want)
			}
			tgt, err := catalog.DigestTables(ctx, conn, first.Below, first)
			if err != nil {
				t.Fatal(err)
			}
			if d := catalog.CompareDigests(first, tgt); d != nil {
				t.Errorf("PostgreSQL %d read on %d's ranges differs: %v", major, firstMajor, d)
			}
		})
	}
}

// ranges writes each table's ranges: bounds, rows and hashes.
func ranges(d *capture.TableDigests) string {
	s := ""
	for _, td := range d.Tables {
		s += td.Name + ":"
		for _, r := range td.Ranges {
			lo := "-"
			if r.Lo != nil {
				lo = fmt.Sprint(*r.Lo)
			}
			s += fmt.Sprintf(" %s %d %s", lo, r.Rows, r.Hash)
		}
		s += "\n"
	}
	return s
}
