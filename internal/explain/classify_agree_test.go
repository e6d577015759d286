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
// checks). A row whose answers disagree is marked so; those are the
// disagreements issue 35 item 5 resolves.
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

		// Disagreements.
		// A CTE that locks rows: catalog saw only that the CTE is a
		// SELECT; fingerprint refuses it as a write.
		{q: "WITH l AS (SELECT * FROM t FOR UPDATE) SELECT * FROM l", lockRows: true, plain: true, kind: kindSelect},
		// A subquery that locks rows: fingerprint's ReadOnly does not
		// look into FROM (LockRows does), catalog looks at the top only.
		{q: "SELECT * FROM (SELECT * FROM t FOR UPDATE) s", readOnly: true, lockRows: true, plain: true, kind: kindSelect},
		// A branch of a set operation that locks rows: catalog reads the
		// top SELECT's locking clause only.
		{q: "(SELECT a FROM t FOR UPDATE) UNION ALL SELECT 1", lockRows: true, plain: true, kind: kindSelect},
		// A function named with its database: explain took the last
		// part, fingerprint's Class cannot name it.
		{q: "SELECT db.s.f(1)", readOnly: true, plain: true, kind: kindSelect, funcs: []string{"f"}},
	} {
		cl := fingerprint.Classify(c.q)
		kind, funcs, prob := classify(c.q)
		slices.Sort(funcs)
		want := slices.Clone(c.funcs)
		slices.Sort(want)
		got := fmt.Sprint(cl.ReadOnly, cl.LockRows, catalog.PlainSelect(c.q), kind, prob, funcs)
		if w := fmt.Sprint(c.readOnly, c.lockRows, c.plain, c.kind, c.prob, want); got != w {
			t.Errorf("%s:\n got readOnly lockRows plain kind problem funcs = %s\nwant %s", c.q, got, w)
		}
	}
}
