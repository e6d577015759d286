package sqlstate

import "testing"

// The messages are as PostgreSQL 15 writes them (lc_messages = 'C').
func TestFromMessage(t *testing.T) {
	tests := []struct{ msg, code string }{
		{`duplicate key value violates unique constraint "customers_pkey"`, "23505"},
		{`insert or update on table "notes" violates foreign key constraint "notes_account_id_fkey"`, "23503"},
		{`update or delete on table "accounts" violates foreign key constraint "notes_account_id_fkey" on table "notes"`, "23503"},
		{`null value in column "name" of relation "accounts" violates not-null constraint`, "23502"},
		{`new row for relation "orders" violates check constraint "orders_total_check"`, "23514"},
		{`could not serialize access due to concurrent update`, "40001"},
		{`could not serialize access due to read/write dependencies among transactions`, "40001"},
		{`deadlock detected`, "40P01"},
		{`current transaction is aborted, commands ignored until end of transaction block`, "25P02"},
		{`VACUUM cannot run inside a transaction block`, "25001"},
		{`CREATE INDEX CONCURRENTLY cannot run inside a transaction block`, "25001"},
		{`canceling statement due to statement timeout`, "57014"},
		{`canceling statement due to lock timeout`, "55P03"},
		{`could not obtain lock on row in relation "jobs"`, "55P03"},
		{`terminating connection due to administrator command`, "57P01"},
		{`the database system is starting up`, "57P03"},
		{`sorry, too many clients already`, "53300"},
		{`syntax error at or near "SELEC"`, "42601"},
		{`syntax error at end of input`, "42601"},
		{`relation "missing_table" does not exist`, "42P01"},
		{`column "nope" does not exist`, "42703"},
		{`column "nope" of relation "accounts" does not exist`, "42703"},
		{`column o.nope does not exist`, "42703"},
		{`function no_such(integer) does not exist`, "42883"},
		{`operator does not exist: integer = text`, "42883"},
		{`relation "accounts" already exists`, "42P07"},
		{`database "app" does not exist`, "3D000"},
		{`password authentication failed for user "app"`, "28P01"},
		{`permission denied for table accounts`, "42501"},
		{`prepared statement "s1" does not exist`, "26000"},
		{`prepared statement "s1" already exists`, "42P05"},
		{`division by zero`, "22012"},
		{`invalid input syntax for type integer: "abc"`, "22P02"},
		{`invalid input syntax for type timestamp: "yesterday-ish"`, "22007"},
		{`integer out of range`, "22003"},
		{`value "99999999999" is out of range for type integer`, "22003"},
		{`value too long for type character varying(10)`, "22001"},
		{`more than one row returned by a subquery used as an expression`, "21000"},
		{`column "total" is of type numeric but expression is of type text`, "42804"},
	}
	for _, tt := range tests {
		code, ok := FromMessage(tt.msg)
		if !ok || code != tt.code {
			t.Errorf("FromMessage(%q) = %q, %v; want %q", tt.msg, code, ok, tt.code)
		}
	}
	for _, msg := range []string{"", "something the server never says", "the server said 42"} {
		if code, ok := FromMessage(msg); ok {
			t.Errorf("FromMessage(%q) = %q, want no code", msg, code)
		}
	}
}

func TestClass(t *testing.T) {
	tests := []struct{ in, want string }{
		{`duplicate key value violates unique constraint "customers_pkey"`, `duplicate key value violates unique constraint "…"`},
		{`value "99999999999" is out of range for type integer`, `value "…" is out of range for type integer`},
		{`could not extend file "base/16384/16385": No space left on device`, `could not extend file "…": No space left on device`},
		{"deadlock  detected\n", "deadlock detected"},
		{`process 4242 still waiting for ShareLock on transaction 738 after 1000.123 ms`, `process N still waiting for ShareLock on transaction N after N ms`},
		{`relation "t1" and t2v3`, `relation "…" and t2v3`},
		{`unterminated "quote`, `unterminated "quote`},
	}
	for _, tt := range tests {
		if got := Class(tt.in); got != tt.want {
			t.Errorf("Class(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Two errors of one kind on different objects share their class.
	a, b := Class(`duplicate key value violates unique constraint "a_pkey"`), Class(`duplicate key value violates unique constraint "b_key"`)
	if a != b {
		t.Errorf("classes differ: %q, %q", a, b)
	}
}

func FuzzClass(f *testing.F) {
	for _, s := range []string{`duplicate key "x"`, `value 12.5 out`, `"unterminated`, "a\tb  c", `'x' 1a 2`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Class(s)
		if Class(c) != c {
			t.Errorf("Class is not idempotent: %q -> %q -> %q", s, c, Class(c))
		}
		FromMessage(s)
	})
}
