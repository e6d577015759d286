package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestHypothetical explains a statement with and without a hypothetical
// index, in each of the modes a finding uses, on a real server with hypopg.
func TestHypothetical(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	so := filepath.Join(filepath.Dir(c.BinDir()), "lib", "hypopg.so")
	if _, err := os.Stat(so); err != nil {
		t.Fatalf("hypopg is not installed for the PostgreSQL in %s (%v): run `make extensions`, which installs the Debian package postgresql-<major>-hypopg", c.BinDir(), err)
	}
	ctx := context.Background()
	if err := c.Exec(ctx, "postgres", `CREATE EXTENSION hypopg;
		CREATE TABLE items (id int, kind int, body text);
		INSERT INTO items SELECT g, g % 1000, 'item ' || g FROM generate_series(1, 100000) g;
		ANALYZE items`); err != nil {
		t.Fatalf("%v (is hypopg installed? run `make extensions`)", err)
	}
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	e := &Explainer{Conn: conn}
	// A hypothetical index left by someone else in the session is not
	// counted in the plan before.
	if _, err := conn.Exec(ctx, "SELECT hypopg_create_index('CREATE INDEX ON items (kind)')"); err != nil {
		t.Fatal(err)
	}
	seven := "7"
	const ddl = "CREATE INDEX ON items (kind)"
	for _, r := range []Request{
		{Query: "SELECT body FROM items WHERE kind = 7"},
		{Query: "SELECT body FROM items WHERE kind = $1", Params: []*string{&seven}},
		// A generic plan, which a prepared statement caches: the plan
		// after must not be the one cached before the index.
		{Query: "SELECT body FROM items WHERE kind = $1", Generic: true},
	} {
		h, err := e.Hypothetical(ctx, r, ddl)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if h.Before.Root.Type != "Seq Scan" || !h.Used || !strings.HasPrefix(h.Index, "<") ||
			h.After.Root.TotalCost >= h.Before.Root.TotalCost {
			t.Errorf("%s: before %s %.1f, after %+v, index %q used %v", h.Before.Mode, h.Before.Root.Type, h.Before.Root.TotalCost,
				h.After.Root, h.Index, h.Used)
		}
		t.Logf("%s: cost %.1f -> %.1f with %s", h.Before.Mode, h.Before.Root.TotalCost, h.After.Root.TotalCost, h.Index)
		assertNoHypothetical(t, conn)
	}
	// A failure still resets.
	if _, err := e.Hypothetical(ctx, Request{Query: "SELECT body FROM items WHERE kind = 7"}, "CREATE INDEX ON items (no_such_column)"); err == nil {
		t.Error("hypothetical index on a missing column: no error")
	}
	assertNoHypothetical(t, conn)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relkind = 'i' AND relnamespace = 'public'::regnamespace").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d indexes in pg_class (%v)", n, err)
	}
}

func assertNoHypothetical(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM hypopg()").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d hypothetical indexes left (%v)", n, err)
	}
}
