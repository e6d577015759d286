package report

import "testing"

func TestDisplayQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT id, name FROM customers WHERE email = $2 || $1 || $3", "SELECT id, name FROM customers WHERE email = $1 || $2 || $3"},
		{"SELECT $1 + $2", "SELECT $1 + $2"},
		{"SELECT $3 + $3 * $1", "SELECT $1 + $1 * $2"},
		{"SELECT '$2' || $2 || \"a$1\" || $1", "SELECT '$2' || $1 || \"a$1\" || $2"},
		{"SELECT 'it''s $2', $2, $1", "SELECT 'it''s $2', $1, $2"},
		{"SELECT $$ $2 $$ || $2 || $1", "SELECT $$ $2 $$ || $1 || $2"},
		{"SELECT $f$ $2 $f$, $2, $1 -- $9\n/* $8 */", "SELECT $f$ $2 $f$, $1, $2 -- $9\n/* $8 */"},
		{"SELECT a$2, $2, $1", "SELECT a$2, $1, $2"},
		{"SELECT $10, $2", "SELECT $1, $2"},
		{"no parameters", "no parameters"},
		{"SELECT '$2", "SELECT '$2"},
	}
	for _, tt := range tests {
		if got := DisplayQuery(tt.in); got != tt.want {
			t.Errorf("DisplayQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzDisplayQuery(f *testing.F) {
	for _, s := range []string{"SELECT $2 || $1", "SELECT '$1' -- x\n", "$$ $1 $$", "SELECT $f$ $2", "/* $3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := DisplayQuery(s)
		// Renumbering never changes the text's length class by much and
		// is idempotent.
		if again := DisplayQuery(got); again != got {
			t.Errorf("not idempotent: %q -> %q -> %q", s, got, again)
		}
	})
}
