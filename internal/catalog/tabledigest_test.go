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
// The identical copy's database writes values otherwise by default
// (search_path, which regclass's text follows; lc_monetary, money's):
// the digest's session fixes them.
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
		"CREATE TABLE m (id int PRIMARY KEY, price money, rel regclass)",
		"INSERT INTO m SELECT g, g * 1234.5, 'a' FROM generate_series(1, 50) g",
	)
	pgclustertest.Exec(t, c, "postgres",
		"CREATE DATABASE same TEMPLATE src", "CREATE DATABASE changed TEMPLATE src",
		// Only C locales may exist here (C.utf8 writes money as C does):
		// the session check below is lc_monetary's; search_path changes
		// m's text (a, public.a).
		"ALTER DATABASE same SET lc_monetary = 'C.utf8'", "ALTER DATABASE same SET search_path = pg_catalog")
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
	// The digest's session overrides the database's settings.
	sameConn := pgclustertest.Connect(ctx, t, c.DSN("same"))
	tx, err := sameConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var monetary, path string
	if err := tx.QueryRow(ctx, "SELECT current_setting('lc_monetary'), current_setting('search_path')").Scan(&monetary, &path); err != nil {
		t.Fatal(err)
	}
	if monetary != "C.utf8" || path != "pg_catalog" {
		t.Fatalf("database same's settings: lc_monetary %q, search_path %q", monetary, path)
	}
	if _, err := tx.Exec(ctx, catalog.DigestSettings); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, "SELECT current_setting('lc_monetary')").Scan(&monetary); err != nil {
		t.Fatal(err)
	}
	if monetary != "C" {
		t.Errorf("the digest's session's lc_monetary is %q, want C", monetary)
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

// TestDigestWritten reads a start state while another session updates
// one table without pause: that table's digest records the rows written
// around it, the quiet table's none. Read again after the writes, the
// written table differs, not proven (a copy at the start's position may
// hold rows the digest's snapshot did not); the quiet one matches.
func TestDigestWritten(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres",
		"CREATE TABLE hot (id int PRIMARY KEY, n int NOT NULL)",
		"INSERT INTO hot SELECT g, 0 FROM generate_series(1, 100) g",
		"CREATE TABLE cold (id int PRIMARY KEY, v text)",
		"INSERT INTO cold SELECT g, md5(g::text) FROM generate_series(1, 100) g",
	)
	// The setup's writes reach the statistics first: late, they would
	// read as cold's writes.
	waitFor(t, c, "SELECT sum(n_tup_ins) = 200 FROM pg_stat_user_tables WHERE relname IN ('hot', 'cold')")

	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	writer := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	go func() {
		for i := 0; ; i++ {
			if _, err := writer.Exec(wctx, "UPDATE hot SET n = n + 1 WHERE id = $1", 1+i%100); err != nil {
				if wctx.Err() != nil {
					err = nil
				}
				done <- err
				return
			}
		}
	}()
	st, err := catalog.ReadStartState(ctx, c.DSN("postgres"), catalog.Options{}, catalog.StartCount{Below: 1 << 30})
	stop()
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	rec := st.Digests
	if rec == nil || len(rec.Tables) != 2 {
		t.Fatalf("digests %+v, want cold and hot", rec)
	}
	written := map[string]int64{}
	for _, td := range rec.Tables {
		written[td.Name] = td.Written
	}
	if written["hot"] <= 0 || written["cold"] != 0 {
		t.Errorf("written around the digest: %v; want hot's updates, none in cold", written)
	}
	tgt, err := catalog.DigestTables(ctx, pgclustertest.Connect(ctx, t, c.DSN("postgres")), rec.Below, rec)
	if err != nil {
		t.Fatal(err)
	}
	diffs := catalog.CompareDigests(rec, tgt)
	if len(diffs) != 1 || diffs[0].Name != "hot" || diffs[0].Proven() || len(catalog.ProvenDiffs(diffs)) != 0 ||
		!strings.Contains(diffs[0].String(), "rows written while the start's digest was read: not proven") {
		t.Errorf("after the writes: %v; want hot alone differing, not proven", diffs)
	}
}

// BenchmarkDigestTables is the digests' cost on pgbench's tables at
// scale 10 (pgbench_accounts: 1,000,000 rows, 128 MB): at a capture's
// start (the key's bounds, then the ranges) and on a target, on the
// start's ranges, as the pre-flight reads them. docs/start-state.md
// quotes it:
//
//	go test -run '^$' -bench DigestTables -benchtime 3x ./internal/catalog
func BenchmarkDigestTables(b *testing.B) {
	c := pgclustertest.StartT(b, pgcluster.Options{})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "10", "postgres"); err != nil {
		b.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	conn := pgclustertest.Connect(ctx, b, c.DSN("postgres"))
	// Warm: the first read of a table written by COPY sets its hint bits.
	rec, err := catalog.DigestTables(ctx, conn, catalog.DefaultCountBelow, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, td := range rec.Tables {
		if td.NotDigested != "" {
			b.Fatalf("%s not digested: %s", td.Name, td.NotDigested)
		}
	}
	b.Run("start", func(b *testing.B) {
		for b.Loop() {
			if _, err := catalog.DigestTables(ctx, conn, catalog.DefaultCountBelow, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("target", func(b *testing.B) {
		for b.Loop() {
			tgt, err := catalog.DigestTables(ctx, conn, rec.Below, rec)
			if err != nil {
				b.Fatal(err)
			}
			if d := catalog.CompareDigests(rec, tgt); d != nil {
				b.Fatalf("the same tables differ: %v", d)
			}
		}
	})
}
