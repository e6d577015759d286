package cli

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestCaptureAnswerSequence: an INSERT ... RETURNING of a serial or an
// identity column, captured through the proxy and replayed onto a copy
// whose sequences were advanced first, returns other ids with nothing
// wrong: its differing values are explained by the sequence (by the
// table and column), while a plain SELECT whose values differ on the
// copy is the target's data (issue 59 item 3), and so is an INSERT that
// returns a column it gives itself.
func TestCaptureAnswerSequence(t *testing.T) {
	ctx, c := parallelServer(t)
	const schema = `CREATE TABLE orders (id bigserial PRIMARY KEY, customer text);
		CREATE TABLE lines (order_id bigint REFERENCES orders);
		CREATE TABLE items (no int GENERATED ALWAYS AS IDENTITY, name text);
		CREATE TABLE stock (sku int PRIMARY KEY, qty int);
		INSERT INTO stock VALUES (1, 10), (2, 20);`
	createDatabases(t, c, map[string]string{
		"orig": schema,
		"advanced": schema + `SELECT setval('orders_id_seq', 1000);
			SELECT setval(pg_get_serial_sequence('items', 'no'), 500);
			UPDATE stock SET qty = 21 WHERE sku = 2;`,
	})
	rc := startCapture(t, c.DSN("orig"))
	conn := pgclustertest.Connect(ctx, t, rc.dsn(c.User(), "orig"))
	const (
		order = "INSERT INTO orders (customer) VALUES ($1) RETURNING id"
		item  = "INSERT INTO items (name) VALUES ($1) RETURNING no, name"
		given = "INSERT INTO stock (sku, qty) VALUES ($1, $2) RETURNING sku, qty * 2"
		read  = "SELECT sku, qty FROM stock ORDER BY sku"
		// By the id the order's INSERT returned.
		rename = "UPDATE orders SET customer = $1 WHERE id = $2"
		line   = "INSERT INTO lines (order_id) VALUES ($1)"
		later  = "INSERT INTO later (v) VALUES ($1) RETURNING id"
	)
	for i := range 2 {
		var id int64
		if err := conn.QueryRow(ctx, order, "ann").Scan(&id); err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{rename, []any{"bea", id}},
			{line, []any{id}},
			{item, []any{"bolt"}},
			{given, []any{int32(10 + i), int32(i)}},
			{read, nil},
		} {
			queryAll(ctx, t, conn, q.sql, q.args...)
		}
	}
	// A table the capture creates, after the replay first read the
	// target's sequences: its sequence stood elsewhere in the original
	// (advanced there outside the capture).
	if _, err := conn.Exec(ctx, "CREATE TABLE later (id serial, v text)"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "orig", "SELECT setval('later_id_seq', 50)")
	for range 2 {
		if _, err := conn.Exec(ctx, later, "x"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	rc.stopOK(t)

	_, text, res := runReplay(t, "--target", c.DSN("advanced"), "--database-map", "orig=advanced", "--speed", "0", "--findings=false", rc.dir)
	if res == nil {
		t.Fatalf("no result:\n%s", text)
	}
	for _, tc := range []struct {
		sql    string
		values int64
		cause  string
	}{
		{order, 2, "sequence_assigned: orders.id"},
		{item, 2, "sequence_assigned: items.no"},
		{given, 0, ""},
		{read, 2, ""},
		{rename, 0, "sequence_assigned: orders.id an earlier INSERT returned"},
		{later, 2, "sequence_assigned: later.id"},
		{line, 0, "sequence_assigned: orders.id an earlier INSERT returned"},
	} {
		var found bool
		for _, q := range res.Queries {
			if q.Fingerprint != fingerprint.Compute(tc.sql)[0].Fingerprint {
				continue
			}
			found = true
			if tc.sql == line {
				if q.Answered != 2 || q.AnswerDiffers["error_only_on_target"] != 2 || len(q.AnswerDiffers) != 1 {
					t.Errorf("%s: %d compared, differ %v, want 2 compared, error_only_on_target 2", tc.sql, q.Answered, q.AnswerDiffers)
				}
			} else if tc.sql == rename {
				if q.Answered != 2 || q.AnswerDiffers["rows"] != 2 || len(q.AnswerDiffers) != 1 {
					t.Errorf("%s: %d compared, differ %v, want 2 compared, rows 2", tc.sql, q.Answered, q.AnswerDiffers)
				}
			} else if q.Answered != 2 || q.AnswerDiffers["values"] != tc.values || len(q.AnswerDiffers) > 1 {
				t.Errorf("%s: %d compared, differ %v, want 2 compared, values %d", tc.sql, q.Answered, q.AnswerDiffers, tc.values)
			}
			if q.AnswerCause != tc.cause {
				t.Errorf("%s: explained %q, want %q", tc.sql, q.AnswerCause, tc.cause)
			}
		}
		if !found {
			t.Errorf("%s: not in the result", tc.sql)
		}
	}
	o := res.Outcomes
	// The lines refer to orders the target numbered otherwise: an error
	// from an id of the original's, as a large object's OID is, which
	// explains their answers too.
	if o.AnswerDiffersUnexplained != 0 || o.AnswerDiffersTargetData != 2 || o.AnswerDiffersTargetDataByTable["public.stock"] != 2 ||
		o.AnswerDiffersExplained["sequence_assigned"] != 10 || len(o.AnswerDiffersExplained) != 1 ||
		o.FailedOnlyOnTarget != 2 || o.OnlyOnTargetBakedIDs != 2 || o.OnlyOnTargetBySQLState["23503"] != 2 {
		t.Errorf("outcomes %+v: want 2 of the target's data in public.stock (the reads), 10 sequence-assigned (2 lines' foreign-key errors from baked ids)", o)
	}
	if !strings.Contains(text, "sequence_assigned 10") || !strings.Contains(text, "explained by the statement's text (a volatile function, what a server assigns, a sequence's value an INSERT returns):") || !strings.Contains(text, "explained: sequence_assigned: orders.id") {
		t.Errorf("the replay's text does not set the sequence's answers apart:\n%s", text)
	}
	t.Logf("%s", text)
}
