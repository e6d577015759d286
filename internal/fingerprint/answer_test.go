package fingerprint

import "testing"

// TestAnswerTraits: which statements sort at their top level, call a
// volatile function or read what a server assigns.
func TestAnswerTraits(t *testing.T) {
	for _, tc := range []struct {
		sql                   string
		sorted                bool
		volatile, serverState string
	}{
		{"SELECT a FROM t ORDER BY a", true, "", ""},
		{"SELECT a FROM t", false, "", ""},
		{"SELECT * FROM (SELECT a FROM t ORDER BY a) s", false, "", ""},
		{"WITH w AS (SELECT 1 AS a) SELECT a FROM w ORDER BY 1", true, "", ""},
		{"SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", true, "", ""},
		{"SELECT a FROM t WHERE a IN (SELECT b FROM u ORDER BY b LIMIT 3)", false, "", ""},
		{"SELECT now(), a FROM t", false, "now()", ""},
		{"INSERT INTO t VALUES (nextval('s')) RETURNING a", false, "nextval()", ""},
		{"SELECT pg_catalog.random()", false, "random()", ""},
		{"SELECT CURRENT_TIMESTAMP", false, "CURRENT_TIMESTAMP", ""},
		{"SELECT current_user", false, "", ""},
		{"SELECT gen_random_uuid()", false, "gen_random_uuid()", ""},
		{"SELECT c.oid, c.relname FROM pg_catalog.pg_class c WHERE c.relname = 't' ORDER BY 2", true, "", "oid"},
		{"SELECT relname FROM pg_class", false, "", "pg_class"},
		{"SELECT 't'::regclass", false, "", "regclass"},
		{"SELECT xmin, a FROM t", false, "", "xmin"},
		{"SELECT pg_backend_pid()", false, "", "pg_backend_pid()"},
		{"SELECT pg_sleep(1)", false, "", ""},
		{"SELECT txid_status(742) AS committed", false, "", "txid_status()"},
		{"SELECT pg_xact_status('742'::xid8)", false, "", "pg_xact_status()"},
		{"SELECT table_name FROM information_schema.tables", false, "", "tables"},
		{"UPDATE t SET a = 1", false, "", ""},
	} {
		c := Classify(tc.sql)
		if c.SkipsLocked {
			t.Errorf("%s: skips locked rows", tc.sql)
		}
		if c.Sorted != tc.sorted || c.Volatile != tc.volatile || c.ServerState != tc.serverState {
			t.Errorf("%s: sorted %v, volatile %q, server state %q; want %v, %q, %q",
				tc.sql, c.Sorted, c.Volatile, c.ServerState, tc.sorted, tc.volatile, tc.serverState)
		}
	}
}

// TestSkipsLocked: a statement that skips locked rows anywhere (a job
// queue's poll, at its top level or in a subquery) is told from one that
// waits for them or fails on them.
func TestSkipsLocked(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED":                                  true,
		"UPDATE jobs SET state = 'taken' WHERE id IN (SELECT id FROM jobs LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id":       true,
		"WITH j AS (SELECT id FROM jobs LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) DELETE FROM jobs USING j WHERE jobs.id = j.id": true,
		"SELECT id FROM jobs ORDER BY id LIMIT 3 FOR UPDATE":                                                                  false,
		"SELECT id FROM jobs ORDER BY id LIMIT 3 FOR UPDATE NOWAIT":                                                           false,
		"SELECT id FROM jobs": false,
	} {
		if got := Classify(sql).SkipsLocked; got != want {
			t.Errorf("%s: skips locked rows %v, want %v", sql, got, want)
		}
	}
}
