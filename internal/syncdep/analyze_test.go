package syncdep

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// summary prints a Statement compactly: control, touched relations,
// written ones with their ops, functions, flags.
func summary(st Statement) string {
	var parts []string
	if st.Control != TxNone {
		c := []string{"", "begin", "commit", "rollback", "prepare", "commit-prepared", "rollback-prepared", "savepoint"}[st.Control]
		if st.Chain {
			c += "+chain"
		}
		if st.Gid != "" {
			c += "(" + st.Gid + ")"
		}
		parts = append(parts, c)
	}
	name := func(n Name) string {
		if n.Schema != "" {
			return n.Schema + "." + n.Name
		}
		return n.Name
	}
	var t, w, f []string
	for _, n := range st.Touch {
		t = append(t, name(n))
	}
	for _, n := range st.Write {
		ops := ""
		for i, c := range "iud" {
			if n.Op&(1<<i) != 0 {
				ops += string(c)
			}
		}
		w = append(w, name(n.Name)+":"+ops)
	}
	for _, n := range st.Funcs {
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
	if st.Opaque {
		parts = append(parts, "opaque")
	}
	if st.ReadAll {
		parts = append(parts, "readall")
	}
	if st.LockRows {
		parts = append(parts, "lockrows")
	}
	return strings.Join(parts, " ")
}

func TestAnalyze(t *testing.T) {
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
		if got := summary(Analyze(tc.sql)); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, tc.want)
		}
	}
}

// TestAnalyzeNormalized: the replay analyzes the normalized text of each
// statement (constants as $n); where the parser refuses it, the logged
// text is read instead (see Tracker.effectOf). This lists which
// normalized forms the parser refuses, so that the fallback is known to
// be needed and to work.
func TestAnalyzeNormalized(t *testing.T) {
	for _, tc := range []struct {
		sql     string
		refused bool
		want    string
	}{
		{"SELECT * FROM a WHERE id = 42 LIMIT 10", false, "touch=a"},
		{"SET application_name = 'x'", false, ""},
		{"SET TIME ZONE 'UTC'", false, ""},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", true, ""},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE", true, ""},
		{"SELECT interval '1 day'", false, ""},
	} {
		items := fingerprint.Compute(tc.sql)
		if len(items) != 1 {
			t.Fatalf("%s: %d items", tc.sql, len(items))
		}
		norm := Analyze(items[0].Query)
		if norm.Opaque != tc.refused {
			t.Errorf("%s: normalized %q refused %v, want %v", tc.sql, items[0].Query, norm.Opaque, tc.refused)
		}
		tr := NewTracker(Object)
		tr.SetCatalog("db", &Catalog{})
		e := tr.effectOf(tr.dbs["db"], &Exec{Items: items, Text: tc.sql}, 0)
		got := Analyze(tc.sql)
		if got.Opaque || summary(got) != tc.want || e.readAll {
			t.Errorf("%s: logged text gives %q (effect readAll %v), want %q", tc.sql, summary(got), e.readAll, tc.want)
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"SELECT * FROM a", "WITH x AS (UPDATE a SET v = 1 RETURNING *) SELECT * FROM x JOIN b USING (id)",
		"COMMIT PREPARED 'x'", "EXPLAIN ANALYZE DELETE FROM t", "SELECT f(1), s.g(2) FROM t TABLESAMPLE SYSTEM (1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		st := Analyze(sql)
		// Every write is touched; a statement that controls the
		// transaction touches nothing.
		for _, w := range st.Write {
			if !slices.Contains(st.Touch, w.Name) {
				t.Fatalf("%q: write %v not touched", sql, w)
			}
		}
		if st.Control != TxNone && (len(st.Touch) > 0 || st.Opaque) {
			t.Fatalf("%q: control statement with effects: %s", sql, fmt.Sprint(st))
		}
		r := NewResolver(&Catalog{})
		e := r.Effect(st)
		for _, w := range e.Write {
			if !slices.Contains(e.Touch, w) {
				t.Fatalf("%q: effect write %s not touched", sql, w)
			}
		}
	})
}
