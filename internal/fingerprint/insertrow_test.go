package fingerprint

import (
	"testing"
)

func TestParseInsertRow(t *testing.T) {
	for _, tc := range []struct {
		text  string
		key   string
		param int32
		not   NotBatchable
	}{
		{text: "INSERT INTO events (a, b) VALUES (1, 'x')", key: "events (a, b) 2"},
		{text: "insert into public.events(a,b) values ($1, $2::text)", key: "public.events (a, b) 2", param: 2},
		{text: "INSERT INTO events (a, b) VALUES (-1.5, DEFAULT)", key: "events (a, b) 2"},
		{text: "INSERT INTO events VALUES (1, NULL, E'\\n')", key: "events () 3"},
		{text: "INSERT INTO events (a) OVERRIDING SYSTEM VALUE VALUES (1)", key: "events (a) 1 OVERRIDING_SYSTEM_VALUE"},
		{text: "SELECT 1"},
		{text: "BEGIN"},
		{text: "SELEC 1"},
		{text: "INSERT INTO events (a) VALUES (1) RETURNING id", not: NotBatchableReturning},
		{text: "INSERT INTO events (a) VALUES (1) ON CONFLICT DO NOTHING", not: NotBatchableOnConflict},
		{text: "WITH x AS (SELECT 1) INSERT INTO events (a) VALUES (1)", not: NotBatchableWith},
		{text: "INSERT INTO events (a) SELECT 1", not: NotBatchableSelect},
		{text: "INSERT INTO events DEFAULT VALUES", not: NotBatchableSelect},
		{text: "INSERT INTO events (a) VALUES (1), (2)", not: NotBatchableMultiRow},
		{text: "INSERT INTO events (a) VALUES (now())", not: NotBatchableExpression},
		{text: "INSERT INTO events (a) VALUES ((SELECT 1))", not: NotBatchableExpression},
		{text: "INSERT INTO events (a) VALUES (1 + 1)", not: NotBatchableExpression},
		{text: "INSERT INTO events (a) VALUES (1); SELECT 1", not: NotBatchableSeveral},
		{text: "INSERT INTO events (a VALUES (1)", not: NotBatchableUnparsed},
	} {
		r, not := ParseInsertRow(tc.text)
		if not != tc.not {
			t.Errorf("%q: not batchable %q, want %q", tc.text, not, tc.not)
			continue
		}
		switch {
		case tc.key == "" && r != nil:
			t.Errorf("%q: a row with key %q, want none", tc.text, r.Key)
		case tc.key != "" && r == nil:
			t.Errorf("%q: no row, want key %q", tc.text, tc.key)
		case r != nil && (r.Key != tc.key || r.MaxParam != tc.param):
			t.Errorf("%q: key %q, max param %d; want %q, %d", tc.text, r.Key, r.MaxParam, tc.key, tc.param)
		}
	}
}

func TestMergeInserts(t *testing.T) {
	for _, tc := range []struct {
		texts  []string
		params []int
		want   string
	}{
		{
			texts:  []string{"INSERT INTO events (a, b) VALUES (1, 'x')", "insert into events (a,b) values (2,  'it''s')"},
			params: []int{0, 0},
			want:   "INSERT INTO events (a, b) VALUES (1, 'x'), (2, 'it''s')",
		},
		{
			texts:  []string{"INSERT INTO s.e (a, b) VALUES ($1, $2)", "INSERT INTO s.e (a, b) VALUES ($2::int, $1)", "INSERT INTO s.e (a, b) VALUES (3, DEFAULT)"},
			params: []int{2, 2, 0},
			want:   "INSERT INTO s.e (a, b) VALUES ($1, $2), ($4::int, $3), (3, DEFAULT)",
		},
	} {
		rows := make([]*InsertRow, len(tc.texts))
		for i, text := range tc.texts {
			r, not := ParseInsertRow(text)
			if r == nil {
				t.Fatalf("%q: not batchable: %s", text, not)
			}
			rows[i] = r
		}
		got, err := MergeInserts(rows, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("merged %q,\nwant   %q", got, tc.want)
		}
		// The rows are left as parsed: merging again gives the same.
		if again, _ := MergeInserts(rows, tc.params); again != got {
			t.Errorf("merged again %q, want %q", again, got)
		}
	}
	a, _ := ParseInsertRow("INSERT INTO events (a) VALUES (1)")
	b, _ := ParseInsertRow("INSERT INTO events (b) VALUES (1)")
	if _, err := MergeInserts([]*InsertRow{a, b}, []int{0, 0}); err == nil {
		t.Error("rows of different column lists merged")
	}
	p, _ := ParseInsertRow("INSERT INTO events (a) VALUES ($3)")
	if _, err := MergeInserts([]*InsertRow{p}, []int{1}); err == nil {
		t.Error("a row merged with fewer parameters than it uses")
	}
}

// FuzzMergeInserts: whatever the text, parsing it as a row never panics,
// and a row merged with itself parses as a row of two rows of its table.
func FuzzMergeInserts(f *testing.F) {
	for _, s := range []string{
		"INSERT INTO events (a, b) VALUES (1, 'x')",
		"INSERT INTO s.e (a, b) VALUES ($1, $2::int)",
		"insert into t values (DEFAULT, -1, E'\\\\x', B'101', true, null)",
		"INSERT INTO t (a[1], b.c) VALUES (1, 2)",
		"INSERT INTO t (a) VALUES (1) RETURNING *",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, _ := ParseInsertRow(text)
		if r == nil {
			return
		}
		n := int(r.MaxParam)
		merged, err := MergeInserts([]*InsertRow{r, r}, []int{n, n})
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if again, not := ParseInsertRow(merged); again != nil || not != NotBatchableMultiRow {
			t.Fatalf("%q merged into %q, which is not a multi-row INSERT (%q)", text, merged, not)
		}
	})
}
