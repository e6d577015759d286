package fixes

import "testing"

// TestTouchesWrites: a fix's relation, with or without its schema,
// against what a statement's text names; a function call is taken to
// touch any relation, never to write it.
func TestTouchesWrites(t *testing.T) {
	for _, tc := range []struct {
		sql, rel       string
		touch, written bool
	}{
		{"SELECT * FROM customers WHERE id = $1", "customers", true, false},
		{"SELECT * FROM public.customers WHERE id = $1", "public.customers", true, false},
		{"SELECT * FROM other.customers WHERE id = $1", "public.customers", false, false},
		{"SELECT * FROM customers", "public.customers", true, false},
		{"INSERT INTO customers (id) VALUES ($1)", "public.customers", true, true},
		{"UPDATE orders SET qty = $1 WHERE id = $2", "customers", false, false},
		{"SELECT count_customers()", "customers", true, false},
	} {
		if got := touches(tc.sql, tc.rel); got != tc.touch {
			t.Errorf("touches(%q, %q) = %v, want %v", tc.sql, tc.rel, got, tc.touch)
		}
		if got := writes(tc.sql, tc.rel); got != tc.written {
			t.Errorf("writes(%q, %q) = %v, want %v", tc.sql, tc.rel, got, tc.written)
		}
	}
}
