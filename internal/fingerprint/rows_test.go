package fingerprint

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// rowsString renders a RowAccess for the table below: "op rel eq=col:$n,...
// set=a,b", "-" for nil.
func rowsString(r *RowAccess) string {
	if r == nil {
		return "-"
	}
	op := map[Op]string{0: "select", OpInsert: "insert", OpUpdate: "update", OpDelete: "delete"}[r.Op]
	var eq []string
	for _, c := range r.Eq {
		eq = append(eq, fmt.Sprintf("%s:$%d", c.Column, c.Param))
	}
	s := fmt.Sprintf("%s %s eq=%s", op, r.Rel.Name, strings.Join(eq, ","))
	if r.Rel.Schema != "" {
		s = fmt.Sprintf("%s %s.%s eq=%s", op, r.Rel.Schema, r.Rel.Name, strings.Join(eq, ","))
	}
	if len(r.Set) > 0 {
		s += " set=" + strings.Join(r.Set, ",")
	}
	if r.Upsert {
		s += " upsert"
	}
	for _, g := range r.Ranges {
		s += fmt.Sprintf(" range=%s:", g.Column)
		if g.Lo > 0 {
			s += fmt.Sprintf("$%d", g.Lo)
		}
		s += ".."
		if g.Hi > 0 {
			s += fmt.Sprintf("$%d", g.Hi)
		}
	}
	return s
}

func TestRowAccess(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		// pgbench's tpcb-like transaction, -M prepared.
		{"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", "update pgbench_accounts eq=aid:$2 set=abalance"},
		{"SELECT abalance FROM pgbench_accounts WHERE aid = $1", "select pgbench_accounts eq=aid:$1"},
		{"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
			"insert pgbench_history eq=tid:$1,bid:$2,aid:$3,delta:$4"},
		// Either side, casts, qualified columns, aliases, more conjuncts.
		{"SELECT * FROM shop.orders o WHERE $1::int8 = o.id AND o.state <> 'x'", "select shop.orders eq=id:$1"},
		{"DELETE FROM orders WHERE orders.id = $1::bigint AND (tenant = $2)", "delete orders eq=id:$1,tenant:$2"},
		{"SELECT 1 FROM t WHERE a = $1 AND b = $2 AND a = $3", "select t eq=a:$1,b:$2"},
		{"SELECT * FROM t WHERE id = $1 FOR UPDATE", "select t eq=id:$1"},
		{"UPDATE t SET (a, b) = ($1, $2), c[1] = 3 WHERE id = $3 RETURNING *", "update t eq=id:$3 set=a,b,c"},
		{"INSERT INTO t (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET w = EXCLUDED.v", "insert t eq=id:$1,v:$2 set=w upsert"},
		// No key: still a RowAccess, without Eq.
		{"SELECT * FROM t WHERE id = $1 OR id = $2", "select t eq="},
		{"SELECT * FROM t WHERE id > $1", "select t eq= range=id:$1.."},
		// Ranges of a SELECT (issue 59): BETWEEN, either side, bounds
		// from two conjuncts; not under OR, NOT BETWEEN, SYMMETRIC.
		{"SELECT id, v FROM items WHERE id BETWEEN $1 AND $2 ORDER BY id", "select items eq= range=id:$1..$2"},
		{"SELECT * FROM t WHERE $1 <= t.id AND id < $2::int8 AND v = $3", "select t eq=v:$3 range=id:$1..$2"},
		{"SELECT * FROM t WHERE $2 > id", "select t eq= range=id:..$2"},
		{"SELECT * FROM t WHERE id >= $1 OR id <= $2", "select t eq="},
		{"SELECT * FROM t WHERE id NOT BETWEEN $1 AND $2", "select t eq="},
		{"SELECT * FROM t WHERE id BETWEEN SYMMETRIC $1 AND $2", "select t eq="},
		{"SELECT * FROM t WHERE id BETWEEN $1 AND 100", "select t eq="},
		{"SELECT * FROM t WHERE id = 5", "select t eq="},
		{"SELECT * FROM t WHERE id = $1::numeric", "select t eq="},
		{"SELECT * FROM t WHERE id::text = $1", "select t eq="},
		{"SELECT * FROM t WHERE u.id = $1", "select t eq="},
		{"INSERT INTO t (id, v) VALUES ($1, $2), ($3, $4)", "insert t eq="},
		{"INSERT INTO h (a, b) SELECT x, y FROM s WHERE s.k = $1", "insert h eq="},
		// No column list: which column a value is, the catalog says.
		{"INSERT INTO t VALUES ($1, $2)", "insert t eq="},
		{"INSERT INTO t VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET v = 3", "insert t eq= set=v upsert"},
		{"UPDATE t SET v = (SELECT max(v) FROM u) WHERE id = $1", "update t eq=id:$1 set=v"},
		// Not a form it reads.
		{"SELECT * FROM t JOIN u USING (id) WHERE t.id = $1", "-"},
		{"SELECT * FROM t, u WHERE t.id = $1", "-"},
		{"SELECT * FROM t WHERE id = $1 UNION SELECT * FROM t WHERE id = $2", "-"},
		{"SELECT * FROM t WHERE id = $1 AND v IN (SELECT v FROM t)", "-"},
		{"WITH x AS (SELECT 1) SELECT * FROM t WHERE id = $1", "-"},
		{"UPDATE t SET v = 1 FROM u WHERE t.id = u.id AND u.k = $1", "-"},
		{"DELETE FROM t USING u WHERE t.id = $1", "-"},
		{"INSERT INTO t (id) SELECT id + 1 FROM t", "-"},
		{"SELECT * FROM f($1)", "-"},
		{"SELECT 1", "-"},
		{"BEGIN", "-"},
		{"CREATE TABLE t (id int)", "-"},
		{"SELECT * INTO x FROM t WHERE id = $1", "-"},
		{"EXPLAIN ANALYZE SELECT * FROM t WHERE id = $1", "-"},
	} {
		if got := rowsString(Classify(tc.sql).Rows); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}

func TestMaxParamRef(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want int32
	}{
		{"SELECT 1", 0},
		{"UPDATE t SET a = $1 WHERE id = $2", 2},
		{"SELECT $12, $3", 12},
		{"SELECT '$5' FROM t WHERE a = $1", 1},
		{"SELECT 'it''s $7', $2", 2},
		{`SELECT "col$9" FROM t WHERE x = $1`, 1},
		{"SELECT a$1 FROM t", 0},
		{"SELECT 1 -- $4\n, $2", 2},
		{"SELECT /* $8 /* $9 */ */ $1", 1},
		{"SELECT $$ $6 $$, $tag$ $7 $tag$, $1", 1},
		{"SELECT E'\\' $3', $1", 1},
		{"SELECT '\\' $3', $1", -1},
		{"SELECT 'open", -1},
		{"SELECT $tag$ open", -1},
		{"SELECT date'2020-01-01', $2", 2},
	} {
		if got := MaxParamRef(tc.sql); got != tc.want {
			t.Errorf("MaxParamRef(%q) = %d, want %d", tc.sql, got, tc.want)
		}
	}
}

// FuzzMaxParamRef checks MaxParamRef against PostgreSQL's own scanner
// (through pg_query) wherever it answers: it must never see a parameter
// the scanner does not, which would let a constant pass for one.
func FuzzMaxParamRef(f *testing.F) {
	for _, s := range []string{"SELECT $1", "SELECT '$2', $1", "SELECT $$ $3 $$", "/* $4 */ SELECT $1 -- $5",
		`SELECT "a$6", E'\'$7', $1`, "SELECT x$8 FROM t", "UPDATE t SET a = $1 WHERE id = $2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := MaxParamRef(s)
		if got < 0 {
			return
		}
		res, err := pg_query.Scan(s)
		if err != nil {
			return
		}
		var want int32
		for _, tok := range res.Tokens {
			if tok.Token == pg_query.Token_PARAM {
				v, err := strconv.ParseInt(s[tok.Start+1:tok.End], 10, 32)
				if err != nil {
					return
				}
				want = max(want, int32(v))
			}
		}
		if got > want {
			t.Errorf("MaxParamRef(%q) = %d, the scanner's highest parameter is %d", s, got, want)
		}
	})
}
