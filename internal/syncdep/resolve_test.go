package syncdep

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// shopCatalog is a small schema written by hand: orders and shipments
// (a foreign key), order_lines (cascading delete), a view over orders, a
// partitioned events table, an audited table with a trigger, a table with
// a rule, a same-named table in another schema, and functions.
func shopCatalog() *Catalog {
	return &Catalog{
		Relations: []Relation{
			{OID: 1, Schema: "public", Name: "orders", Kind: 'r'},
			{OID: 2, Schema: "public", Name: "shipments", Kind: 'r'},
			{OID: 3, Schema: "public", Name: "order_lines", Kind: 'r'},
			{OID: 4, Schema: "public", Name: "open_orders", Kind: 'v'},
			{OID: 5, Schema: "public", Name: "events", Kind: 'p'},
			{OID: 6, Schema: "public", Name: "events_2026", Kind: 'r'},
			{OID: 7, Schema: "public", Name: "audited", Kind: 'r', Triggers: true},
			{OID: 8, Schema: "public", Name: "ruled", Kind: 'r', Rules: true},
			{OID: 9, Schema: "archive", Name: "orders", Kind: 'r'},
			{OID: 10, Schema: "public", Name: "line_notes", Kind: 'r'},
		},
		Inherits: []Inherit{{Child: 6, Parent: 5}},
		ForeignKeys: []ForeignKey{
			{Child: 2, Parent: 1},
			{Child: 3, Parent: 1, DeleteWrites: true},
			{Child: 10, Parent: 3, DeleteWrites: true},
		},
		ViewBases: []ViewBase{{View: 4, Base: 1}},
		Functions: []Function{
			{Schema: "public", Name: "ship", Volatility: 'v', Language: "plpgsql"},
			{Schema: "public", Name: "order_total", Volatility: 's', Language: "sql"},
			{Schema: "public", Name: "tax", Volatility: 'i', Language: "sql"},
			{Schema: "public", Name: "uuid_generate_v4", Volatility: 'v', Language: "c", Extension: true},
		},
		Builtins: []string{"now", "count", "nextval"},
		Indexes: []Index{
			{Rel: 1, Primary: true, Columns: []IndexColumn{{Name: "id", Type: 20, Deterministic: true}}},
			{Rel: 2, Primary: true, Columns: []IndexColumn{{Name: "order_id", Type: 20, Deterministic: true}}},
			{Rel: 3, Primary: true, Columns: []IndexColumn{{Name: "id", Type: 20, Deterministic: true}}},
			{Rel: 9, Primary: true, Columns: []IndexColumn{{Name: "id", Type: 20, Deterministic: true}}},
		},
	}
}

// keyedCatalog has tables for RowKey: accounts (an integer key, and a
// unique email), tags (a text key with a nondeterministic collation),
// pairs (a two-column key of int and uuid), log (no unique index), books
// (an exclusion constraint), nodes (a key and a foreign key to itself),
// kids (an inheritance tree with keys), parts (a partitioned table).
func keyedCatalog() *Catalog {
	col := func(name string, typ uint32) IndexColumn {
		return IndexColumn{Name: name, Type: typ, Deterministic: true}
	}
	return &Catalog{
		Relations: []Relation{
			{OID: 1, Schema: "public", Name: "accounts", Kind: 'r'},
			{OID: 2, Schema: "public", Name: "tags", Kind: 'r'},
			{OID: 3, Schema: "public", Name: "pairs", Kind: 'r'},
			{OID: 4, Schema: "public", Name: "log", Kind: 'r'},
			{OID: 5, Schema: "public", Name: "books", Kind: 'r'},
			{OID: 6, Schema: "public", Name: "nodes", Kind: 'r'},
			{OID: 7, Schema: "public", Name: "kids", Kind: 'r'},
			{OID: 8, Schema: "public", Name: "kids_a", Kind: 'r'},
			{OID: 9, Schema: "public", Name: "parts", Kind: 'p'},
			{OID: 10, Schema: "public", Name: "parts_1", Kind: 'r'},
			{OID: 11, Schema: "public", Name: "plain", Kind: 'r'},
			{OID: 12, Schema: "public", Name: "accounts_view", Kind: 'v'},
			{OID: 13, Schema: "public", Name: "floats", Kind: 'r'},
		},
		Inherits:    []Inherit{{Child: 8, Parent: 7}, {Child: 10, Parent: 9}},
		ForeignKeys: []ForeignKey{{Child: 6, Parent: 6}},
		ViewBases:   []ViewBase{{View: 12, Base: 1}},
		Indexes: []Index{
			{Rel: 1, Primary: true, Columns: []IndexColumn{col("id", 23)}},
			{Rel: 1, Columns: []IndexColumn{col("email", 25)}},
			{Rel: 2, Primary: true, Columns: []IndexColumn{{Name: "name", Type: 25}}},
			{Rel: 3, Primary: true, Columns: []IndexColumn{col("a", 20), col("u", 2950)}},
			{Rel: 5, Primary: true, Columns: []IndexColumn{col("id", 20)}},
			{Rel: 5, Columns: []IndexColumn{col("during", 3908)}, Other: true},
			{Rel: 6, Primary: true, Columns: []IndexColumn{col("id", 20)}},
			{Rel: 7, Primary: true, Columns: []IndexColumn{col("id", 20)}},
			{Rel: 8, Primary: true, Columns: []IndexColumn{col("id", 20)}},
			{Rel: 9, Primary: true, Columns: []IndexColumn{col("id", 20), col("at", 23)}},
			{Rel: 10, Primary: true, Columns: []IndexColumn{col("id", 20), col("at", 23)}},
			{Rel: 11, Primary: true, Columns: []IndexColumn{col("id", 20)}},
			{Rel: 13, Primary: true, Columns: []IndexColumn{col("id", 701)}},
		},
	}
}

// TestResolverRows: which statements reach rows by key, and which fall
// back to whole relations.
func TestResolverRows(t *testing.T) {
	r := NewResolver(keyedCatalog())
	checkRowCases(t, r)
	for key, want := range map[string]bool{"public.accounts": true, "public.log": false, "public.kids": false, "public.parts": true, "public.tags": false} {
		if got := r.Keyed(key); got != want {
			t.Errorf("Keyed(%s) = %v, want %v", key, got, want)
		}
	}
}

// keyedSchema is keyedCatalog's schema on a real server.
const keyedSchema = `
CREATE EXTENSION IF NOT EXISTS btree_gist;
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE accounts (id int PRIMARY KEY, email text UNIQUE, balance int);
CREATE TABLE tags (name text COLLATE ci PRIMARY KEY);
CREATE TABLE pairs (a bigint, u uuid, v int, PRIMARY KEY (a, u));
CREATE TABLE log (a int, b int);
CREATE TABLE books (id bigint PRIMARY KEY, during tstzrange, note text, EXCLUDE USING gist (during WITH &&));
CREATE TABLE nodes (id bigint PRIMARY KEY, parent bigint REFERENCES nodes (id));
CREATE TABLE kids (id bigint PRIMARY KEY);
CREATE TABLE kids_a (PRIMARY KEY (id)) INHERITS (kids);
CREATE TABLE parts (id bigint, at int, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO (10);
CREATE TABLE plain (id bigint PRIMARY KEY, v int);
CREATE VIEW accounts_view AS SELECT * FROM accounts;
CREATE TABLE floats (id float8 PRIMARY KEY);
`

// rowCases are statements on keyedCatalog and their effects.
var rowCases = []struct{ sql, want string }{
	{"SELECT * FROM accounts WHERE id = $1", "rows=public.accounts($1)"},
	{"SELECT * FROM accounts WHERE id = $1 FOR UPDATE", "rows=public.accounts($1 lock)"},
	{"UPDATE accounts SET balance = balance + $1 WHERE id = $2", "rows=public.accounts($2 write lock)"},
	{"DELETE FROM accounts WHERE id = $1", "rows=public.accounts($1 write lock)"},
	// Setting a unique column, or inserting into a table with
	// another unique index, may conflict with other rows.
	{"UPDATE accounts SET email = $1 WHERE id = $2", "touch=public.accounts write=public.accounts"},
	{"INSERT INTO accounts (id, email) VALUES ($1, $2)", "touch=public.accounts write=public.accounts"},
	// By another column than the key: whole.
	{"SELECT * FROM accounts WHERE email = $1", "touch=public.accounts"},
	{"SELECT * FROM accounts_view WHERE id = $1", "touch=public.accounts,public.accounts_view"},
	// Nondeterministic collation, a float key: whole.
	{"SELECT * FROM tags WHERE name = $1", "touch=public.tags"},
	{"SELECT * FROM floats WHERE id = $1", "touch=public.floats"},
	// Two-column key: both, in key order.
	{"SELECT * FROM pairs WHERE u = $1 AND a = $2", "rows=public.pairs($2,$1)"},
	{"SELECT * FROM pairs WHERE a = $1", "touch=public.pairs"},
	{"INSERT INTO pairs (u, a, v) VALUES ($1, $2, $3) ON CONFLICT (a, u) DO UPDATE SET v = EXCLUDED.v", "rows=public.pairs($2,$1 write lock)"},
	{"INSERT INTO pairs (u, a) VALUES ($1, $2) ON CONFLICT (a, u) DO UPDATE SET a = 0", "touch=public.pairs write=public.pairs"},
	// No unique index: a blind insert waits for nothing there.
	{"INSERT INTO log (a, b) VALUES ($1, $2)", "write=public.log"},
	{"INSERT INTO log VALUES ($1, $2)", "write=public.log"},
	{"INSERT INTO log VALUES (1, 2), (3, 4)", "write=public.log"},
	{"INSERT INTO log (a) SELECT id FROM accounts WHERE id = $1", "touch=public.accounts write=public.log"},
	// An exclusion constraint: whole.
	{"UPDATE books SET note = $1 WHERE id = $2", "touch=public.books write=public.books"},
	{"SELECT * FROM books WHERE id = $1", "rows=public.books($1)"},
	// A foreign key to itself reaches other rows of the table.
	{"DELETE FROM nodes WHERE id = $1", "touch=public.nodes write=public.nodes"},
	{"SELECT * FROM nodes WHERE id = $1", "rows=public.nodes($1)"},
	// An inheritance tree: keys hold per table only.
	{"SELECT * FROM kids WHERE id = $1", "touch=public.kids"},
	// A partitioned table's key holds across its partitions.
	{"SELECT * FROM parts WHERE id = $1 AND at = $2", "rows=public.parts($1,$2)"},
	{"SELECT * FROM parts_1 WHERE id = $1 AND at = $2", "rows=public.parts($1,$2)"},
	{"INSERT INTO plain (id, v) VALUES ($1, $2)", "rows=public.plain($1 write lock)"},
	{"INSERT INTO plain (id, v) VALUES (1, $1)", "touch=public.plain write=public.plain"},
	// Without a column list, a key cannot be read from the values.
	{"INSERT INTO plain VALUES ($1, $2)", "touch=public.plain write=public.plain"},
}

func checkRowCases(t *testing.T, r *Resolver) {
	t.Helper()
	for _, tc := range rowCases {
		if got := effectString(r.Effect(fingerprint.Classify(tc.sql))); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, tc.want)
		}
	}
}

func effectString(e Effect) string {
	var parts []string
	if len(e.Touch) > 0 {
		parts = append(parts, "touch="+strings.Join(e.Touch, ","))
	}
	if len(e.Write) > 0 {
		parts = append(parts, "write="+strings.Join(e.Write, ","))
	}
	if e.ReadAll {
		parts = append(parts, "readall")
	}
	if e.WriteAll {
		parts = append(parts, "writeall")
	}
	if e.Barrier {
		parts = append(parts, "barrier")
	}
	if k := e.Rows; k != nil {
		var ps []string
		for _, p := range k.Params {
			ps = append(ps, "$"+strconv.Itoa(int(p)))
		}
		s := strings.Join(ps, ",")
		if k.Write {
			s += " write"
		}
		if k.Lock {
			s += " lock"
		}
		parts = append(parts, "rows="+k.Rel+"("+s+")")
	}
	return strings.Join(parts, " ")
}

func TestResolverEffect(t *testing.T) {
	r := NewResolver(shopCatalog())
	for _, tc := range []struct{ sql, want string }{
		// A child insert reads its parent: the text names only
		// shipments.
		{"INSERT INTO shipments (order_id) VALUES ($1)", "touch=public.orders rows=public.shipments($1 write lock)"},
		{"INSERT INTO shipments (order_id) SELECT $1", "touch=public.orders,public.shipments write=public.shipments"},
		// A parent update reads its children (and, by its key, only its
		// own row).
		{"UPDATE public.orders SET state = $1 WHERE id = $2", "touch=public.order_lines,public.shipments rows=public.orders($2 write lock)"},
		{"UPDATE public.orders SET state = $1 WHERE state = $2", "touch=public.order_lines,public.orders,public.shipments write=public.orders"},
		// An unqualified name is every schema's.
		{"SELECT * FROM orders", "touch=archive.orders,public.orders"},
		{"SELECT * FROM archive.orders", "touch=archive.orders"},
		// A parent insert checks no child.
		{"INSERT INTO public.orders (id) VALUES ($1)", "rows=public.orders($1 write lock)"},
		{"INSERT INTO public.orders (id) VALUES (nextval('s'))", "touch=public.orders write=public.orders"},
		// A cascading delete writes the children, and theirs (and, since
		// a cascaded write may read its parents, orders whole).
		{"DELETE FROM public.orders WHERE id = $1", "touch=public.line_notes,public.order_lines,public.orders,public.shipments write=public.line_notes,public.order_lines,public.orders"},
		// A view reads and writes its base table.
		{"SELECT * FROM open_orders", "touch=public.open_orders,public.orders"},
		{"UPDATE open_orders SET state = $1", "touch=public.open_orders,public.order_lines,public.orders,public.shipments write=public.open_orders,public.orders"},
		// A partition is its partitioned table.
		{"INSERT INTO events_2026 VALUES ($1)", "write=public.events"}, // blind: no unique index
		{"SELECT * FROM events", "touch=public.events"},
		// Triggers or rules on a written table: unknown effects.
		{"INSERT INTO audited VALUES ($1)", "touch=public.audited write=public.audited readall writeall"},
		{"SELECT * FROM audited", "touch=public.audited"},
		{"DELETE FROM ruled", "touch=public.ruled write=public.ruled readall writeall"},
		// Names the catalog does not know.
		{"INSERT INTO tmp_x SELECT * FROM orders", "touch=?tmp_x,archive.orders,public.orders write=?tmp_x"},
		// Functions: builtins and immutable ones are nothing; a stable
		// one reads anything; a volatile one, or one not in the
		// catalog, is opaque; C functions of extensions are nothing.
		{"SELECT count(*), now() FROM shipments", "touch=public.shipments"},
		{"SELECT tax(1)", ""},
		{"SELECT order_total($1)", "readall"},
		{"SELECT ship($1)", "readall writeall"},
		{"SELECT public.ship($1)", "readall writeall"},
		{"SELECT not_in_catalog()", "readall writeall"},
		{"INSERT INTO shipments (id) VALUES (uuid_generate_v4())", "touch=public.orders,public.shipments write=public.shipments"},
		{"SELECT pg_catalog.pg_sleep(1)", ""},
		{"CREATE INDEX ON orders (id)", "readall writeall barrier"},
		{"DO $$BEGIN END$$", "readall writeall barrier"},
		{"COMMIT", ""},
		{"SET x = 1", ""},
	} {
		if got := effectString(r.Effect(fingerprint.Classify(tc.sql))); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, tc.want)
		}
	}
}

// TestResolverWithoutCatalog: a database whose catalog could not be read
// waits as in commit mode for what reaches a relation, and nothing else.
func TestResolverWithoutCatalog(t *testing.T) {
	var r *Resolver
	for _, tc := range []struct{ sql, want string }{
		{"SELECT * FROM orders", "readall"},
		{"INSERT INTO orders VALUES (1)", "readall writeall"},
		{"SELECT now()", "readall writeall"},
		{"SELECT 1", ""},
		{"BEGIN", ""},
	} {
		if got := effectString(r.Effect(fingerprint.Classify(tc.sql))); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sql, got, tc.want)
		}
	}
}
