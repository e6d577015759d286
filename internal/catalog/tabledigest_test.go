package catalog_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestDigestTables digests a source's tables, then copies of it: an
// identical copy (CREATE DATABASE ... TEMPLATE) matches; a copy with a
// tenth of one table's rows changed names that table and the key ranges
// holding them, and no other; a table without an integer key is one
// range; the table over the size limit is listed not digested, with why.
func TestDigestTables(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres",
		"CREATE DATABASE src",
	)
	pgclustertest.Exec(t, c, "src",
		"CREATE TABLE a (id int PRIMARY KEY, v text, at timestamptz, f float8)",
		"INSERT INTO a SELECT g, md5(g::text), '2026-01-01'::timestamptz + g * interval '1 minute', g / 3.0 FROM generate_series(1, 1600) g",
		"CREATE TABLE nokey (v text)",
		"INSERT INTO nokey SELECT md5(g::text) FROM generate_series(1, 100) g",
		"CREATE TABLE big (id bigint PRIMARY KEY, pad text)",
		"INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, 2000) g",
	)
	pgclustertest.Exec(t, c, "postgres",
		"CREATE DATABASE same TEMPLATE src", "CREATE DATABASE changed TEMPLATE src")
	// A tenth of a's rows, all in keys 1..160 (the first range) and
	// 801..960.
	pgclustertest.Exec(t, c, "changed",
		"UPDATE a SET v = v || 'x' WHERE id % 10 = 0 AND id <= 960 AND (id <= 160 OR id > 800)",
		"UPDATE nokey SET v = upper(v) WHERE v LIKE 'a%'")

	src := pgclustertest.Connect(ctx, t, c.DSN("src"))
	const below = 200 << 10 // a and nokey fit, big (about 0.5 MB) does not
	rec, err := catalog.DigestTables(ctx, src, below, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.LSN == "" || rec.Snapshot == "" || rec.Database != "src" {
		t.Errorf("position: %+v", rec)
	}
	var notDigested []string
	for _, td := range rec.Tables {
		if td.NotDigested != "" {
			notDigested = append(notDigested, td.Name+": "+td.NotDigested)
		}
	}
	if len(notDigested) != 1 || !strings.HasPrefix(notDigested[0], "big: larger than the size limit") {
		t.Errorf("not digested: %q", notDigested)
	}

	same, err := catalog.DigestTables(ctx, pgclustertest.Connect(ctx, t, c.DSN("same")), below, rec)
	if err != nil {
		t.Fatal(err)
	}
	if d := catalog.CompareDigests(rec, same); d != nil {
		t.Errorf("identical copy differs: %v", d)
	}

	changed, err := catalog.DigestTables(ctx, pgclustertest.Connect(ctx, t, c.DSN("changed")), below, rec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range catalog.CompareDigests(rec, changed) {
		got = append(got, d.String())
	}
	want := []string{"public.a: keys 1..100, keys 101..200, keys 801..900, keys 901..1000", "public.nokey: all rows"}
	if !slices.Equal(got, want) {
		t.Errorf("changed copy:\n got %q\nwant %q", got, want)
	}
}
