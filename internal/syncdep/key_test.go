package syncdep

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// TestConstantAt reads constants of logged texts where pg_query's
// normalization numbered them, with the normalizer's own output.
func TestConstantAt(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		k    int32
		want string
		ok   bool
	}{
		{"SELECT * FROM t WHERE id = 7", 1, "7", true},
		{"  \n SELECT * FROM t WHERE id = 7;", 1, "7", true},
		{"SELECT * FROM t WHERE id = -7", 1, "-7", true},
		{"SELECT * FROM t WHERE id = '7'::int", 1, "7", true},
		{"SELECT * FROM t WHERE name = 'it''s'", 1, "it's", true},
		{"SELECT * FROM t WHERE name = 'a' AND id = 12", 2, "12", true},
		{"UPDATE t SET v = $1 WHERE id = 5", 2, "5", true},
		{"UPDATE t SET v = $1 WHERE id = 5", 1, "", false}, // a parameter, not a constant
		{"/* app */ SELECT * FROM t /* x */ WHERE id = 42 -- end", 1, "42", true},
		{"SELECT * FROM t WHERE id = 1.5", 1, "", false},
		{"SELECT * FROM t WHERE id = 0x1F", 1, "", false},
		{"SELECT * FROM t WHERE name = E'a\\nb'", 1, "", false},
		{"SELECT * FROM t WHERE name = 'a\\b'", 1, "a\\b", false}, // an escape without standard_conforming_strings
		{"SELECT * FROM t WHERE name = $$x$$", 1, "", false},
		{"SELECT * FROM t WHERE name = U&'x'", 1, "", false},
		{"SELECT * FROM t WHERE id = 7", 2, "", false},
		{"SELECT * FROM t WHERE id = - 7", 1, "", false},
	} {
		items := fingerprint.Compute(tc.raw)
		if len(items) != 1 || items[0].Unparsed {
			t.Fatalf("%q: items %+v", tc.raw, items)
		}
		got, ok := fingerprint.ConstantValue(items[0].Query, tc.raw, tc.k)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%q ($%d, normalized %q): %q %v, want %q %v", tc.raw, tc.k, items[0].Query, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzConstantAt: on any text the normalizer takes, fingerprint.ConstantValue does not
// fail, and an integer it reads is a constant of the text.
func FuzzConstantAt(f *testing.F) {
	for _, s := range []string{"SELECT * FROM t WHERE id = 7", "UPDATE t SET v = $1 WHERE id = -5", "SELECT 'a''b', 3 FROM t",
		"SELECT $$x$$, E'\\'', 1e3, x'1f'", "select/*'*/ 1 -- '"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		items := fingerprint.Compute(raw)
		if len(items) != 1 || items[0].Unparsed {
			return
		}
		for k := int32(1); k <= 4; k++ {
			v, ok := fingerprint.ConstantValue(items[0].Query, raw, k)
			if ok && !strings.HasPrefix(v, "'") && !strings.Contains(raw, v) && !strings.Contains(raw, strings.ReplaceAll(v, "'", "''")) {
				t.Errorf("%q: $%d read as %q, not in the text", raw, k, v)
			}
		}
	})
}
