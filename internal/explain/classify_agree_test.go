package explain

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// TestClassifierAgreement pins, statement by statement, what each
// package that asks "what is this statement" answers: fingerprint's Class
// (ReadOnly, LockRows), catalog.PlainSelect (the gate of EXPLAIN ANALYZE
// for the findings) and explain's own classify (the gate of EXPLAIN
// ANALYZE for the plan comparison, and the functions whose volatility it
// checks). They all ask fingerprint now; the rows at the end are the
// disagreements there were before, each with the answer chosen.
func TestClassifierAgreement(t *testing.T) {
	for _, c := range []struct {
		q string
		// fingerprint.Classify
		readOnly, lockRows bool
		// catalog.PlainSelect
		plain bool
		// explain's classify
		kind  stmtKind
		prob  ProblemKind
		funcs []string
	}{
		{q: "SELECT * FROM t WHERE id = $1", readOnly: true, plain: true, kind: kindSelect},
		{q: "VALUES (1), (2)", readOnly: true, plain: true, kind: kindSelect},
		{q: "WITH a AS (SELECT * FROM t) SELECT * FROM a", readOnly: true, plain: true, kind: kindSelect},
		{q: "SELECT * FROM t FOR UPDATE", lockRows: true, kind: kindRead},
		{q: "SELECT * INTO u FROM t", kind: kindRead},
		{q: "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", kind: kindRead},
		{q: "INSERT INTO t VALUES (1)", kind: kindWrite},
		{q: "UPDATE t SET a = 1 WHERE id = 2", kind: kindWrite},
		{q: "DELETE FROM t WHERE id = 2", kind: kindWrite},
		{q: "SHOW work_mem", readOnly: true, prob: ProblemUtility},
		{q: "SELECT 1; SELECT 2", prob: ProblemSeveral},
		{q: "SELECT FROM WHERE", prob: ProblemUnparsable},
		{q: "SELECT random(), now()", readOnly: true, plain: true, kind: kindSelect, funcs: []string{"random", "now"}},
		{q: "SELECT pg_catalog.lower('A')", readOnly: true, plain: true, kind: kindSelect, funcs: []string{"lower"}},

		// The disagreements of before issue 35 item 5, resolved: every
		// package now asks fingerprint, and the answer is the safer one.
		// A CTE that locks rows: catalog.PlainSelect saw only that the
		// CTE is a SELECT and let EXPLAIN ANALYZE run it; fingerprint
		// refused it as a write. Not a plain SELECT.
		{q: "WITH l AS (SELECT * FROM t FOR UPDATE) SELECT * FROM l", lockRows: true, kind: kindRead},
		// A subquery that locks rows: fingerprint's ReadOnly does not
		// look into FROM (LockRows does), catalog looked at the top
		// only, and both let it run. Not a plain SELECT: it locks rows.
		{q: "SELECT * FROM (SELECT * FROM t FOR UPDATE) s", readOnly: true, lockRows: true, kind: kindRead},
		// A branch of a set operation that locks rows: catalog read the
		// top SELECT's locking clause only. Not a plain SELECT.
		{q: "(SELECT a FROM t FOR UPDATE) UNION ALL SELECT 1", lockRows: true, kind: kindRead},
		// A function named with its database: explain took the last
		// part, fingerprint's Funcs cannot name it. Class.FuncNames
		// takes the last part, so its volatility is still checked.
		{q: "SELECT db.s.f(1)", readOnly: true, plain: true, kind: kindSelect, funcs: []string{"f"}},
	} {
		cl := fingerprint.Classify(c.q)
		kind, funcs, prob := classify(c.q)
		slices.Sort(funcs)
		want := slices.Clone(c.funcs)
		slices.Sort(want)
		if cl.PlainSelect != catalog.PlainSelect(c.q) {
			t.Errorf("%s: Class.PlainSelect %v, catalog.PlainSelect %v", c.q, cl.PlainSelect, catalog.PlainSelect(c.q))
		}
		got := fmt.Sprint(cl.ReadOnly, cl.LockRows, catalog.PlainSelect(c.q), kind, prob, funcs)
		if w := fmt.Sprint(c.readOnly, c.lockRows, c.plain, c.kind, c.prob, want); got != w {
			t.Errorf("%s:\n got readOnly lockRows plain kind problem funcs = %s\nwant %s", c.q, got, w)
		}
	}
}
