package fingerprint

import (
	"fmt"
	"slices"
	"testing"
)

func TestAssignedColumns(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want string
	}{
		{"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", "pgbench_accounts[abalance]"},
		{"UPDATE t SET (a, b) = (1, 2), c = DEFAULT WHERE id = 1", "t[a b c]"},
		{"UPDATE t SET (a, b) = (SELECT x, y FROM u WHERE u.id = t.id)", "t[a b]"},
		{"UPDATE s.t AS x SET v = u.v FROM u WHERE x.id = u.id", "s.t[v]"},
		{"WITH up AS (UPDATE a SET v = 1 WHERE id = $1 RETURNING *) SELECT * FROM up JOIN b USING (id)", "a[v]"},
		{`UPDATE "Accounts" SET "Balance" = 1, Other = 2`, "Accounts[Balance other]"},
		{"UPDATE t SET a[1] = 1, c.f = 2, a[2] = 3", "t[a c]"},
		{"INSERT INTO t (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v, n = t.n + 1", "t[v n]"},
		{"INSERT INTO t (id, v) VALUES (1, 2) ON CONFLICT DO NOTHING", ""},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.v IS NULL THEN DELETE " +
			"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)", "t[v]"},
		{"WITH a AS (UPDATE t SET x = 1 RETURNING id) UPDATE t SET y = 2 WHERE id IN (SELECT id FROM a)", "t[y x]"},
		{"WITH a AS (UPDATE t SET x = 1 RETURNING id) UPDATE u SET y = 2 WHERE id IN (SELECT id FROM a)", "u[y] t[x]"},
		{"SELECT * FROM t WHERE id = $1 FOR UPDATE", ""},
		{"INSERT INTO t VALUES (1)", ""},
		{"DELETE FROM t WHERE id = 1", ""},
		{"CREATE INDEX ON t (v)", ""},
		{"UPDATE t SET", ""},
		{"UPDATE a SET v = 1; UPDATE b SET w = 2", ""},
		{"", ""},
	} {
		if got := assignedString(AssignedColumns(tc.sql)); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.sql, got, tc.want)
		}
	}
}

func assignedString(as []Assigned) string {
	s := ""
	for i, a := range as {
		if i > 0 {
			s += " "
		}
		if a.Schema != "" {
			s += a.Schema + "."
		}
		s += fmt.Sprintf("%s%v", a.Name.Name, a.Columns)
	}
	return s
}

func FuzzAssignedColumns(f *testing.F) {
	for _, s := range []string{"UPDATE t SET (a, b) = (1, 2), c = DEFAULT", "WITH x AS (UPDATE a SET v = 1 RETURNING *) SELECT * FROM x",
		"INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET v = 2", "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 1",
		"SELECT 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		as := AssignedColumns(sql)
		c := Classify(sql)
		var seen []Name
		for _, a := range as {
			// Each relation once, with columns, each once, and
			// written as the classifier says.
			if a.Name.Name == "" || slices.Contains(seen, a.Name) {
				t.Fatalf("%q: relation %v empty or listed twice", sql, a.Name)
			}
			seen = append(seen, a.Name)
			if !slices.ContainsFunc(c.Write, func(w Write) bool { return w.Name == a.Name }) {
				t.Fatalf("%q: %v assigned but not written (%v)", sql, a.Name, c.Write)
			}
			for i, col := range a.Columns {
				if col == "" || slices.Contains(a.Columns[:i], col) {
					t.Fatalf("%q: columns %q", sql, a.Columns)
				}
			}
		}
	})
}
