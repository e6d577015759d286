package proxy

import (
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"unicode/utf8"
)

// TestClassify: what each session-state statement does to the state a
// recording taken up from the middle recreates, and what is not session
// state.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		sql   string
		ok    bool
		class tagClass
		op    stateOp
		key   string
	}{
		{"SET search_path = app, public", true, tagSet, opSet, "guc:search_path"},
		{"  set SESSION Work_Mem TO '8MB'", true, tagSet, opSet, "guc:work_mem"},
		{`SET "myapp"."tenant" = 'x'`, true, tagSet, opSet, "guc:myapp.tenant"},
		{"SET myapp.tenant = 'x'", true, tagSet, opSet, "guc:myapp.tenant"},
		{"/* pool */ SET TIME ZONE 'UTC'", true, tagSet, opSet, "guc:timezone"},
		{"-- comment\nSET NAMES 'UTF8'", true, tagSet, opSet, "guc:client_encoding"},
		{"SET SCHEMA 'app'", true, tagSet, opSet, "guc:search_path"},
		{"SET ROLE reader", true, tagSet, opSet, "role"},
		{"SET SESSION AUTHORIZATION alice", true, tagSet, opSet, "session_authorization"},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", true, tagSet, opSet, "characteristics"},
		{"SET LOCAL work_mem = '1MB'", true, tagSet, opNone, ""},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", true, tagSet, opNone, ""},
		{"SET CONSTRAINTS ALL DEFERRED", false, 0, 0, ""},
		{"RESET work_mem", true, tagReset, opReset, "guc:work_mem"},
		{"RESET ALL", true, tagReset, opResetAll, ""},
		{"RESET ROLE", true, tagReset, opReset, "role"},
		{"RESET SESSION AUTHORIZATION", true, tagReset, opReset, "session_authorization"},
		{"RESET TIME ZONE", true, tagReset, opReset, "guc:timezone"},
		{"DISCARD ALL", true, tagDiscardAll, opDiscardAll, ""},
		{"DISCARD PLANS", false, 0, 0, ""},
		{"DEALLOCATE s1", true, tagDeallocate, opDeallocate, "stmt:s1"},
		{`DEALLOCATE PREPARE "S1"`, true, tagDeallocate, opDeallocate, "stmt:S1"},
		{"DEALLOCATE ALL", true, tagDeallocate, opDeallocateAll, ""},
		{"PREPARE q (int) AS SELECT $1", true, tagPrepare, opPrepare, "stmt:q"},
		{"PREPARE TRANSACTION 'x'", false, 0, 0, ""},
		{"UPDATE t SET x = 1", false, 0, 0, ""},
		{"SELECT set_config('a.b', 'c', false)", false, 0, 0, ""},
		{"", false, 0, 0, ""},
		{"SET", false, 0, 0, ""},
	} {
		got, ok := classify(c.sql)
		if ok != c.ok || got.class != c.class || got.op != c.op || got.key != c.key {
			t.Errorf("classify(%q) = %+v, %v; want class %d op %d key %q, %v", c.sql, got, ok, c.class, c.op, c.key, c.ok)
		}
	}
}

// TestClassifyNoAllocation: reading a Query that is no session
// statement, as nearly every one is, allocates nothing on the relay's
// path.
func TestClassifyNoAllocation(t *testing.T) {
	st := newSessState(DefaultStateItems, DefaultStateBytes)
	msg := wire(t, &pgproto3.Query{String: "SELECT id, name FROM users WHERE id = 42"})
	ready := wire(t, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	if n := testing.AllocsPerRun(100, func() {
		st.frontend(msg)
		st.backend(ready[0], ready[5:])
	}); n != 0 {
		t.Errorf("%.1f allocations per query", n)
	}
}

// TestStateCmds: a Query's text is split at its top-level semicolons
// only: not inside quotes, dollar quotes, identifiers or comments.
func TestStateCmds(t *testing.T) {
	for _, c := range []struct {
		q    string
		keys []string
	}{
		{"SET a.b = 1", []string{"guc:a.b"}},
		{"SET a.b = 1; SELECT 1; RESET c.d;", []string{"guc:a.b", "guc:c.d"}},
		{"SELECT ';SET x.y = 1'; SET a.b = 2", []string{"guc:a.b"}},
		{`SELECT 1 AS ";SET x.y = 1"; SET a.b = 2`, []string{"guc:a.b"}},
		{"SELECT $f$ ; SET x.y = 1 $f$; SET a.b = 2", []string{"guc:a.b"}},
		{"SELECT $1; SET a.b = 2", []string{"guc:a.b"}},
		{"SELECT 1 /* ; SET x.y = 1 /* nested */ ; */; SET a.b = 2", []string{"guc:a.b"}},
		{"SELECT 1 -- ; SET x.y = 1\n; SET a.b = 2", []string{"guc:a.b"}},
		{`SELECT E'\'; SET x.y = 1'; SET a.b = 2`, []string{"guc:a.b"}},
		{"DO $$ BEGIN SET x.y = 1; END $$; DISCARD ALL", []string{""}},
		{"SELECT 'unterminated; SET a.b = 1", nil},
	} {
		var keys []string
		for _, cmd := range stateCmds(nil, c.q) {
			keys = append(keys, cmd.key)
		}
		if len(keys) != len(c.keys) {
			t.Errorf("stateCmds(%q) keys %q, want %q", c.q, keys, c.keys)
			continue
		}
		for i := range keys {
			if keys[i] != c.keys[i] {
				t.Errorf("stateCmds(%q) keys %q, want %q", c.q, keys, c.keys)
			}
		}
	}
}

// FuzzStateCmds: whatever a client sends as a Query, reading its
// session-state statements neither panics nor goes round in circles, and
// every statement it finds is a piece of the text with a known class.
func FuzzStateCmds(f *testing.F) {
	for _, s := range []string{"SET a = 1; RESET ALL", "SELECT $x$;$x$; DEALLOCATE ALL", "SET \"a", "/* /* */", "E'\\';", "PREPARE p AS SELECT 1; DISCARD ALL", "SET SESSION", "$$", "--"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		cmds := stateCmds(nil, q)
		if len(cmds) > len(q)/3+1 {
			t.Fatalf("%d statements from %d bytes", len(cmds), len(q))
		}
		for _, c := range cmds {
			if c.class == tagNone || c.class >= numTagClasses {
				t.Fatalf("statement of class %d from %q", c.class, q)
			}
			if len(c.sql) > len(q) {
				t.Fatalf("statement text %q longer than the query %q", c.sql, q)
			}
			if utf8.ValidString(q) && !utf8.ValidString(c.key) {
				t.Fatalf("key %q of valid text %q is not", c.key, q)
			}
		}
	})
}
