package fingerprint

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// summary prints a Class compactly: transaction control, touched
// relations, written ones with their ops, functions, flags.
func summary(c *Class) string {
	var parts []string
	if c.Tx != TxNone {
		s := []string{"", "begin", "commit", "rollback", "prepare", "commit-prepared", "rollback-prepared", "savepoint"}[c.Tx]
		if c.Chain {
			s += "+chain"
		}
		if c.Gid != "" {
			s += "(" + c.Gid + ")"
		}
		parts = append(parts, s)
	}
	name := func(n Name) string {
		if n.Schema != "" {
			return n.Schema + "." + n.Name
		}
		return n.Name
	}
	var t, w, f []string
	for _, n := range c.Touch {
		t = append(t, name(n))
	}
	for _, n := range c.Write {
		ops := ""
		for i, ch := range "iud" {
			if n.Op&(1<<i) != 0 {
				ops += string(ch)
			}
		}
		w = append(w, name(n.Name)+":"+ops)
	}
	for _, n := range c.Funcs {
		f = append(f, name(n))
	}
	for _, l := range [][]string{t, w, f} {
		slices.Sort(l)
	}
	if len(t) > 0 {
		parts = append(parts, "touch="+strings.Join(t, ","))
	}
	if len(w) > 0 {
		parts = append(parts, "write="+strings.Join(w, ","))
	}
	if len(f) > 0 {
		parts = append(parts, "funcs="+strings.Join(f, ","))
	}
	for _, flag := range []struct {
		on   bool
		name string
	}{{c.Opaque, "opaque"}, {c.ReadAll, "readall"}, {c.LockRows, "lockrows"}} {
		if flag.on {
			parts = append(parts, flag.name)
		}
	}
	return strings.Join(parts, " ")
}

// TestClassifyRelations: what a statement reads, writes and does to the
// transaction, as the synchronized replay needs it.
func TestClassifyRelations(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		{"SELECT 1", ""},
		{"SELECT * FROM orders WHERE id = 1", "touch=orders"},
		{"SELECT * FROM shop.orders o JOIN customers c ON c.id = o.customer_id", "touch=customers,shop.orders"},
		{`SELECT * FROM "Mixed"`, "touch=Mixed"},
		{"SELECT count(*) FROM orders WHERE created > now()", "touch=orders funcs=count,now"},
		{"SELECT pg_catalog.now()", "funcs=pg_catalog.now"},
		{"SELECT * FROM generate_series(1, 3)", "funcs=generate_series"},
		{"SELECT * FROM a WHERE id IN (SELECT a_id FROM b)", "touch=a,b"},
		{"INSERT INTO shipments (order_id) VALUES ($1)", "touch=shipments write=shipments:i"},
		{"INSERT INTO t SELECT * FROM s ON CONFLICT (id) DO UPDATE SET v = excluded.v", "touch=s,t write=t:i"},
		{"UPDATE orders SET state = 'shipped' WHERE id = $1", "touch=orders write=orders:u"},
		{"UPDATE a SET v = b.v FROM b WHERE a.id = b.id", "touch=a,b write=a:u"},
		{"DELETE FROM a USING b WHERE a.id = b.id RETURNING a.*", "touch=a,b write=a:d"},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)", "touch=s,t write=t:iud"},
		{"WITH moved AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM moved", "touch=a,b,moved write=a:d,b:i"},
		{"SELECT * FROM a FOR UPDATE", "touch=a lockrows"},
		{"SELECT * FROM a WHERE id IN (SELECT id FROM b FOR SHARE)", "touch=a,b lockrows"},
		{"COPY t FROM STDIN", "touch=t write=t:i"},
		{"COPY t TO STDOUT", "touch=t"},
		{"COPY (SELECT * FROM v) TO STDOUT", "touch=v"},
		{"TRUNCATE a, b", "touch=a,b write=a:d,b:d"},
		{"LOCK TABLE a IN SHARE MODE", "touch=a"},
		{"EXPLAIN SELECT * FROM a", ""},
		{"EXPLAIN ANALYZE UPDATE a SET v = 1", "touch=a write=a:u"},
		{"EXPLAIN (ANALYZE false) UPDATE a SET v = 1", ""},
		{"DECLARE c CURSOR FOR SELECT * FROM a", "touch=a"},
		{"FETCH 10 FROM c", ""},
		{"VACUUM a", "touch=a"},
		{"ANALYZE", "readall"},
		{"SET search_path = app, public", ""},
		{"SHOW work_mem", ""},
		{"PREPARE p AS SELECT * FROM a", ""},
		{"EXECUTE p(1)", "opaque"},
		{"DEALLOCATE ALL", ""},
		{"NOTIFY ch", ""},
		{"BEGIN", "begin"},
		{"START TRANSACTION ISOLATION LEVEL REPEATABLE READ", "begin"},
		{"COMMIT", "commit"},
		{"END", "commit"},
		{"COMMIT AND CHAIN", "commit+chain"},
		{"ROLLBACK", "rollback"},
		{"ABORT", "rollback"},
		{"SAVEPOINT s1", "savepoint"},
		{"ROLLBACK TO SAVEPOINT s1", "savepoint"},
		{"RELEASE s1", "savepoint"},
		{"PREPARE TRANSACTION 'tx-1'", "prepare(tx-1)"},
		{"COMMIT PREPARED 'tx-1'", "commit-prepared(tx-1)"},
		{"ROLLBACK PREPARED 'tx-1'", "rollback-prepared(tx-1)"},
		{"CREATE TABLE a (id int)", "opaque"},
		{"SELECT * INTO b FROM a", "opaque"},
		{"DO $$BEGIN PERFORM 1; END$$", "opaque"},
		{"CALL p(1)", "opaque"},
		{"REFRESH MATERIALIZED VIEW m", "opaque"},
		{"SELECT f(x) FROM a", "touch=a funcs=f"},
		{"SELECT s.f()", "funcs=s.f"},
		{"SELEC 1", "opaque"},
		{"SELECT 1; SELECT 2", "opaque"},
	} {
		if got := summary(Classify(tc.sql)); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, tc.want)
		}
	}
}

// TestClassifyKinds: read-only, destructive, COPY IN, EXPLAIN ANALYZE,
// SQL-level prepared statements and the transaction block.
func TestClassifyKinds(t *testing.T) {
	type kind struct {
		readOnly    bool
		destructive string
		copyIn      bool
		explain     bool
		prepared    PreparedOp
		name        string
		all         bool
		block       BlockEffect
	}
	for _, tc := range []struct {
		sql  string
		want kind
	}{
		{"SELECT 1", kind{readOnly: true}},
		{"SELECT * FROM t FOR UPDATE", kind{}},
		{"WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", kind{}},
		{"SELECT 1 UNION SELECT 2", kind{readOnly: true}},
		{"UPDATE t SET v = 1 WHERE id = 2", kind{}},
		{"UPDATE t SET v = 1", kind{destructive: "UPDATE without WHERE"}},
		{"DELETE FROM t", kind{destructive: "DELETE without WHERE"}},
		{"TRUNCATE t", kind{destructive: "TRUNCATE"}},
		{"DROP TABLE t", kind{destructive: "DROP TABLE"}},
		{"DROP MATERIALIZED VIEW m", kind{destructive: "DROP MATERIALIZED VIEW"}},
		{"DROP DATABASE d", kind{destructive: "DROP DATABASE"}},
		{"ALTER TABLE t ADD COLUMN c int", kind{destructive: "ALTER TABLE"}},
		{"ALTER TABLE t RENAME TO u", kind{destructive: "ALTER TABLE RENAME"}},
		{"ALTER SYSTEM SET work_mem = '1MB'", kind{destructive: "ALTER SYSTEM"}},
		{"COPY t FROM STDIN", kind{copyIn: true}},
		{"COPY t FROM '/tmp/x'", kind{}},
		{"COPY t TO STDOUT", kind{readOnly: true}},
		{"COPY t TO PROGRAM 'cat'", kind{}},
		{"EXPLAIN (ANALYZE false) UPDATE t SET v = 1", kind{readOnly: true}},
		{"EXPLAIN (ANALYZE off) DELETE FROM t", kind{readOnly: true}},
		{"EXPLAIN (ANALYZE) UPDATE t SET v = 1", kind{explain: true}},
		{"EXPLAIN ANALYZE SELECT 1", kind{readOnly: true, explain: true}},
		{"EXPLAIN (ANALYZE true) INSERT INTO t VALUES (1)", kind{explain: true}},
		{"PREPARE r(int) AS SELECT $1 + 1", kind{readOnly: true, prepared: PreparedPrepare, name: "r"}},
		{"PREPARE w(int) AS UPDATE t SET v = $1", kind{prepared: PreparedPrepare, name: "w"}},
		{"EXECUTE w(2)", kind{prepared: PreparedExecute, name: "w"}},
		{"EXPLAIN ANALYZE EXECUTE w(4)", kind{explain: true, prepared: PreparedExecute, name: "w"}},
		{"EXPLAIN EXECUTE w(4)", kind{readOnly: true}},
		{"DEALLOCATE r", kind{readOnly: true, prepared: PreparedDeallocate, name: "r"}},
		{"DEALLOCATE ALL", kind{readOnly: true, prepared: PreparedDeallocate, all: true}},
		{"DISCARD ALL", kind{readOnly: true, prepared: PreparedDeallocate, all: true}},
		{"DISCARD PLANS", kind{readOnly: true}},
		{"BEGIN", kind{readOnly: true, block: BlockOpens}},
		{"COMMIT", kind{readOnly: true, block: BlockEnds}},
		{"COMMIT AND CHAIN", kind{readOnly: true, block: BlockOpens}},
		{"ROLLBACK", kind{readOnly: true, block: BlockEnds}},
		{"PREPARE TRANSACTION 'x'", kind{readOnly: true, block: BlockEnds}},
		{"COMMIT PREPARED 'x'", kind{readOnly: true}},
		{"ROLLBACK TO SAVEPOINT s", kind{readOnly: true}},
		{"SELEC 1", kind{}},
	} {
		c := Classify(tc.sql)
		got := kind{c.ReadOnly, c.Destructive, c.CopyIn, c.ExplainAnalyze, c.Prepared, c.PreparedName, c.DeallocateAll, c.Block()}
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.sql, got, tc.want)
		}
	}
}

// TestClassNormalized: an Item's Class is read from its normalized text,
// and where the parser refuses that (SET TRANSACTION ISOLATION LEVEL $1),
// from the same statement of the logged text. An Unparsed item fails on
// the server without running: it does nothing, and is not read-only.
func TestClassNormalized(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		i    int
		want string
		ro   bool
	}{
		{"SELECT * FROM a WHERE id = 42 LIMIT 10", 0, "touch=a", true},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", 0, "", true},
		{"BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; UPDATE t SET v = 1 WHERE id = 2", 1, "", true},
		{"BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; UPDATE t SET v = 1 WHERE id = 2", 2, "touch=t write=t:u", false},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE", 0, "", true},
		{"SELEC 1", 0, "", false},
	} {
		items := Compute(tc.sql)
		c := items[tc.i].Class(tc.sql)
		if got := summary(c); got != tc.want || c.ReadOnly != tc.ro {
			t.Errorf("%s [%d]: got %q read-only %v, want %q %v", tc.sql, tc.i, got, c.ReadOnly, tc.want, tc.ro)
		}
	}
	// Without the logged text a refused normalization is unknown.
	if c := Compute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")[0].Class(""); !c.Opaque {
		t.Errorf("no logged text: %q, want opaque", summary(c))
	}
}

// TestClassParsedOnce: through a Cache, each distinct statement text is
// parsed for its Class once, however many texts map to it (texts of one
// shape share it) and however many goroutines ask at once.
func TestClassParsedOnce(t *testing.T) {
	c := NewCache(0)
	var texts []string
	for i := range 200 {
		texts = append(texts, fmt.Sprintf("SELECT * FROM t WHERE id = %d", i)) // one shape
	}
	for i := range 50 {
		texts = append(texts, fmt.Sprintf("SET application_name = 'a%d'", i)) // 50 texts: no shape
	}
	texts = append(texts, "BEGIN; UPDATE t SET v = 1 WHERE id = 2; COMMIT", "SELEC 1")
	// Distinct statements: the shape, the 50 SETs, the 3 of the block
	// (the unparsed text is not parsed for its Class).
	const want = 1 + 50 + 3
	before := ClassParses()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				for _, text := range texts {
					for _, it := range c.Get(text) {
						it.Class(text)
					}
				}
			}
		})
	}
	wg.Wait()
	if n := ClassParses() - before; n != want {
		t.Errorf("parsed %d statements for their Class, want %d", n, want)
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{"SELECT * FROM a", "WITH x AS (UPDATE a SET v = 1 RETURNING *) SELECT * FROM x JOIN b USING (id)",
		"COMMIT PREPARED 'x'", "EXPLAIN ANALYZE DELETE FROM t", "SELECT f(1), s.g(2) FROM t TABLESAMPLE SYSTEM (1)",
		"EXPLAIN ANALYZE EXECUTE p(1)", "BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; COMMIT",
		"INSERT INTO t (a, id) VALUES (1, DEFAULT), (2, DEFAULT) RETURNING *, id + 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		c := Classify(sql)
		// Every write is touched; a statement that controls the
		// transaction touches nothing; one that writes is not
		// read-only.
		for _, w := range c.Write {
			if !slices.Contains(c.Touch, w.Name) {
				t.Fatalf("%q: write %v not touched", sql, w)
			}
		}
		if c.Tx != TxNone && (len(c.Touch) > 0 || c.Opaque) {
			t.Fatalf("%q: control statement with effects: %s", sql, summary(c))
		}
		if len(c.Write) > 0 && c.ReadOnly {
			t.Fatalf("%q: writes %v but read-only", sql, c.Write)
		}
		// Only an INSERT returns defaults, never those it gives.
		if r := c.Returning; r != nil {
			if c.Insert == nil || c.Kind != KindInsert {
				t.Fatalf("%q: returning %+v of a %v", sql, r, c.Kind)
			}
			for _, col := range r.Given {
				if r.Defaulted(col) {
					t.Fatalf("%q: %s given and defaulted", sql, col)
				}
			}
		}
		// Through Compute, every item has a Class.
		for _, it := range Compute(sql) {
			_ = it.Class(sql)
		}
	})
}

// TestRanBeforeFailure: of a failed string, the statements up to its
// last one that is not transaction control ran.
func TestRanBeforeFailure(t *testing.T) {
	c := NewCache(0)
	for _, tc := range []struct {
		text string
		want int
	}{
		{"BEGIN; SELECT 1/0; ROLLBACK", 2},
		{"BEGIN; INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); COMMIT", 3},
		{"SELECT 1/0", 1},
		{"COMMIT", 1},
		{"BEGIN; COMMIT", 2},
	} {
		items := c.Get(tc.text)
		if got := len(RanBeforeFailure(items, tc.text)); got != tc.want {
			t.Errorf("%q: %d statements ran, want %d", tc.text, got, tc.want)
		}
	}
}
