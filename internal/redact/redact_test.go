package redact

import "testing"

func TestMessage(t *testing.T) {
	for in, want := range map[string]string{
		`invalid input syntax for type integer: "bob@example.com"`:                   `invalid input syntax for type integer: "…"`,
		`invalid input syntax for type integer: "bob@example.com" at character 8`:    `invalid input syntax for type integer: "…" at character 8`,
		`invalid input value for enum mood: "secret"`:                                `invalid input value for enum mood: "…"`,
		`value "99999999999" is out of range for type integer`:                       `value "…" is out of range for type integer`,
		`invalid value "x""y" for "DD"`:                                              `invalid value "…" for "DD"`,
		`syntax error at or near "'hunter2'"`:                                        `syntax error at or near "…"`,
		`date/time field value out of range: "2024-13-45"`:                           `date/time field value out of range: "…"`,
		`duplicate key value violates unique constraint "users_pkey"`:                `duplicate key value violates unique constraint "users_pkey"`,
		`relation "no_such_table" does not exist`:                                    `relation "no_such_table" does not exist`,
		`column "x" of relation "t" does not exist`:                                  `column "x" of relation "t" does not exist`,
		`password authentication failed for user "app"`:                              `password authentication failed for user "app"`,
		`insert or update on table "shipments" violates foreign key constraint "fk"`: `insert or update on table "shipments" violates foreign key constraint "fk"`,
		`division by zero`: `division by zero`,
	} {
		if got := Message(in); got != want {
			t.Errorf("Message(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzMessage(f *testing.F) {
	f.Add(`invalid input syntax for type integer: "x"`)
	f.Add(`value "1" is out of range`)
	f.Fuzz(func(t *testing.T, s string) {
		out := Message(s)
		if Message(out) != out {
			t.Errorf("not idempotent: %q -> %q -> %q", s, out, Message(out))
		}
	})
}
