package fingerprint

import "testing"

// TestReturningDefaulted checks which columns an INSERT returns as its
// table's defaults made them: those a RETURNING list reads (by name, a
// star, inside an expression) that the INSERT gives no value of its own.
func TestReturningDefaulted(t *testing.T) {
	for _, tc := range []struct {
		sql       string
		col       string
		defaulted bool
	}{
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING id", "id", true},
		{"INSERT INTO app.orders (customer) VALUES ($1), ($2) RETURNING orders.id", "id", true},
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING *", "id", true},
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING id + 1 AS next", "id", true},
		{"INSERT INTO orders (customer) SELECT c FROM staged RETURNING id", "id", true},
		{"INSERT INTO orders (id, customer) VALUES (DEFAULT, $1), (DEFAULT, $2) RETURNING id", "id", true},
		{"INSERT INTO orders (customer) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id", "id", true},
		// The statement's own value, not the sequence's.
		{"INSERT INTO orders (id, customer) VALUES ($1, $2) RETURNING id", "id", false},
		{"INSERT INTO orders (id, customer) VALUES (DEFAULT, $1), ($2, $3) RETURNING id", "id", false},
		{"INSERT INTO orders (id, customer) SELECT i, c FROM staged RETURNING *", "id", false},
		// Values by position: which column takes which is the table's.
		{"INSERT INTO orders VALUES (DEFAULT, $1) RETURNING id", "id", false},
		// Another column returned, or none.
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING customer", "id", false},
		{"INSERT INTO orders (customer) VALUES ($1)", "id", false},
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING (SELECT max(id) FROM other)", "id", false},
		// Not an INSERT.
		{"UPDATE orders SET customer = $1 RETURNING id", "id", false},
		{"DELETE FROM orders RETURNING id", "id", false},
		{"SELECT id FROM orders", "id", false},
	} {
		c := Classify(tc.sql)
		if got := c.Returning.Defaulted(tc.col); got != tc.defaulted {
			t.Errorf("%s: Defaulted(%q) = %v, want %v (%+v)", tc.sql, tc.col, got, tc.defaulted, c.Returning)
		}
	}
}
