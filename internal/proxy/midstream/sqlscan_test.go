package midstream

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
	st := New(DefaultItems, DefaultBytes)
	msg := encoded(t, &pgproto3.Query{String: "SELECT id, name FROM users WHERE id = 42"})
	ready := encoded(t, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	if n := testing.AllocsPerRun(100, func() {
		st.Frontend(msg)
		st.Backend(ready[0], ready[5:])
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

// FuzzSessState: whatever messages a client and a server exchange, the
// session state reads them without panicking, and its accounting holds:
// an index entry for each item, its bytes their sum, within its bounds
// or dropped with a reason.
func FuzzSessState(f *testing.F) {
	var seed []byte
	for _, m := range []interface{ Encode([]byte) ([]byte, error) }{
		&pgproto3.ReadyForQuery{TxStatus: 'I'}, &pgproto3.Query{String: "SET a.b = 1; PREPARE p AS SELECT 1"},
		&pgproto3.CommandComplete{CommandTag: []byte("SET")}, &pgproto3.CommandComplete{CommandTag: []byte("PREPARE")},
		&pgproto3.Parse{Name: "s", Query: "SET c.d = 2"}, &pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Execute{},
		&pgproto3.Sync{}, &pgproto3.ParseComplete{}, &pgproto3.Close{ObjectType: 'S', Name: "s"}, &pgproto3.CloseComplete{},
		&pgproto3.ErrorResponse{Code: "42601"}, &pgproto3.ReadyForQuery{TxStatus: 'T'},
		// asyncpg's prepare and its answers (issue 77 item 3).
		&pgproto3.Parse{Name: "a", Query: "SELECT $1"}, &pgproto3.Describe{ObjectType: 'S', Name: "a"}, &pgproto3.Flush{},
		&pgproto3.ParseComplete{}, &pgproto3.ParameterDescription{ParameterOIDs: []uint32{23}}, &pgproto3.RowDescription{}, &pgproto3.NoData{},
	} {
		b, err := m.Encode(nil)
		if err != nil {
			f.Fatal(err)
		}
		seed = append(seed, b...)
	}
	f.Add(seed, uint64(0b11110001101100011011))
	f.Fuzz(func(t *testing.T, data []byte, fromServer uint64) {
		st := New(8, 1024)
		for i := 0; len(data) >= 5; i++ {
			n := int(data[1])<<24 | int(data[2])<<16 | int(data[3])<<8 | int(data[4])
			if n < 4 || n+1 > len(data) {
				break
			}
			msg := data[:n+1]
			data = data[n+1:]
			if fromServer>>(i%64)&1 == 1 {
				st.Backend(msg[0], msg[5:])
			} else {
				st.Frontend(msg)
			}
			total := 0
			for j, it := range st.items {
				total += it.size()
				if st.index[it.key] != j {
					t.Fatalf("item %q at %d, indexed at %d", it.key, j, st.index[it.key])
				}
			}
			if len(st.index) != len(st.items) || total != st.bytes {
				t.Fatalf("%d items, %d indexed, %d bytes accounted for %d", len(st.items), len(st.index), st.bytes, total)
			}
			if st.unrecordable == "" && (len(st.items) > 8 || st.bytes > 1024) {
				t.Fatalf("past the bounds without a reason: %d items, %d bytes", len(st.items), st.bytes)
			}
		}
	})
}
