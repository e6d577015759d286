package syncdep

import (
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
	return strings.Join(parts, " ")
}

func TestResolverEffect(t *testing.T) {
	r := NewResolver(shopCatalog())
	for _, tc := range []struct{ sql, want string }{
		// A child insert reads its parent: the text names only
		// shipments.
		{"INSERT INTO shipments (order_id) VALUES ($1)", "touch=public.orders,public.shipments write=public.shipments"},
		// A parent update reads its children.
		{"UPDATE public.orders SET state = $1 WHERE id = $2", "touch=public.order_lines,public.orders,public.shipments write=public.orders"},
		// An unqualified name is every schema's.
		{"SELECT * FROM orders", "touch=archive.orders,public.orders"},
		{"SELECT * FROM archive.orders", "touch=archive.orders"},
		// A parent insert checks no child.
		{"INSERT INTO public.orders (id) VALUES ($1)", "touch=public.orders write=public.orders"},
		// A cascading delete writes the children, and theirs.
		{"DELETE FROM public.orders WHERE id = $1", "touch=public.line_notes,public.order_lines,public.orders,public.shipments write=public.line_notes,public.order_lines,public.orders"},
		// A view reads and writes its base table.
		{"SELECT * FROM open_orders", "touch=public.open_orders,public.orders"},
		{"UPDATE open_orders SET state = $1", "touch=public.open_orders,public.order_lines,public.orders,public.shipments write=public.open_orders,public.orders"},
		// A partition is its partitioned table.
		{"INSERT INTO events_2026 VALUES ($1)", "touch=public.events write=public.events"},
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
