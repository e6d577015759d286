package syncdep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// serverSchema is shopCatalog's schema on a real server.
const serverSchema = `
CREATE SCHEMA archive;
CREATE TABLE orders (id bigint PRIMARY KEY, state text);
CREATE TABLE archive.orders (id bigint PRIMARY KEY);
CREATE TABLE shipments (order_id bigint PRIMARY KEY REFERENCES orders (id));
CREATE TABLE order_lines (id bigint PRIMARY KEY, order_id bigint REFERENCES orders (id) ON DELETE CASCADE);
CREATE TABLE line_notes (line_id bigint REFERENCES order_lines (id) ON DELETE CASCADE);
CREATE VIEW open_orders AS SELECT * FROM orders WHERE state IS NULL;
CREATE TABLE events (at date, v int) PARTITION BY RANGE (at);
CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TABLE audited (v int);
CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER audited_t BEFORE INSERT ON audited FOR EACH ROW EXECUTE FUNCTION audit();
CREATE TABLE ruled (v int);
CREATE RULE ruled_r AS ON DELETE TO ruled DO INSTEAD NOTHING;
CREATE FUNCTION ship(bigint) RETURNS void LANGUAGE sql AS $$UPDATE orders SET state = 'shipped' WHERE id = $1$$;
CREATE FUNCTION order_total(bigint) RETURNS bigint LANGUAGE sql STABLE AS $$SELECT count(*) FROM order_lines WHERE order_id = $1$$;
CREATE FUNCTION tax(numeric) RETURNS numeric LANGUAGE sql IMMUTABLE AS $$SELECT $1 * 0.2$$;
CREATE TABLE serials (id serial PRIMARY KEY, v int);
INSERT INTO serials (v) VALUES (1), (2), (3);
CREATE TABLE idents (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY);
CREATE TABLE cycling (id int PRIMARY KEY);
CREATE SEQUENCE cycling_seq CYCLE OWNED BY cycling.id;
`

// TestLoadCatalog reads the catalog of a real database and expands
// statements through it as through the hand-written one.
func TestLoadCatalog(t *testing.T) {
	ctx := context.Background()
	cat, conn := serverCatalog(t, serverSchema)
	if len(cat.Builtins) < 1000 {
		t.Errorf("%d builtin function names", len(cat.Builtins))
	}
	// The connection is usable after: the catalog's transaction ended.
	if _, err := conn.Exec(ctx, "CREATE TABLE after_load (v int)").ReadAll(); err != nil {
		t.Errorf("after LoadCatalog: %v", err)
	}
	// The sequences' last values: 3 given; none given (its start, 1,
	// less one); a cycling one left out.
	var seqs []string
	names := map[uint32]string{}
	for _, r := range cat.Relations {
		names[r.OID] = r.Name
	}
	for _, sq := range cat.Sequences {
		seqs = append(seqs, fmt.Sprintf("%s.%s<=%d", names[sq.Rel], sq.Column, sq.Last))
	}
	slices.Sort(seqs)
	if got := strings.Join(seqs, " "); got != "idents.id<=0 serials.id<=3" {
		t.Errorf("sequences %q, want idents.id<=0 serials.id<=3", got)
	}
	server, hand := NewResolver(cat), NewResolver(shopCatalog())
	for _, sql := range []string{
		"INSERT INTO shipments (order_id) VALUES ($1)",
		"UPDATE public.orders SET state = $1 WHERE id = $2",
		"DELETE FROM public.orders WHERE id = $1",
		"SELECT * FROM orders",
		"SELECT * FROM open_orders",
		"UPDATE open_orders SET state = $1",
		"INSERT INTO events_2026 VALUES ($1)",
		"INSERT INTO audited VALUES ($1)",
		"SELECT * FROM audited",
		"DELETE FROM ruled",
		"SELECT count(*), now() FROM shipments",
		"SELECT tax(1)",
		"SELECT order_total($1)",
		"SELECT ship($1)",
		"SELECT not_in_catalog()",
	} {
		st := fingerprint.Classify(sql)
		got, want := effectString(server.Effect(st)), effectString(hand.Effect(st))
		if got != want {
			t.Errorf("%s:\n server %q\n   hand %q", sql, got, want)
		}
	}
}

// TestLoadCatalogKeys reads the unique indexes of a real database:
// statements reach rows by key on it as on keyedCatalog, written by hand.
func TestLoadCatalogKeys(t *testing.T) {
	cat, _ := serverCatalog(t, keyedSchema)
	checkRowCases(t, NewResolver(cat))
}

// serverCatalog makes schema in a new cluster's postgres database and
// returns its catalog, read by LoadCatalog, and the connection it used
// (open until the test ends).
func serverCatalog(t *testing.T, schema string) (*Catalog, *pgconn.PgConn) {
	t.Helper()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres", schema)
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	cat, err := LoadCatalog(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	return cat, conn
}
