package midstream

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// encoded encodes protocol messages for the state's tests.
func encoded(t testing.TB, m interface{ Encode([]byte) ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// step is one message of a session, from the client (fe) or the
// server (be), given to the state as the pumps do.
type step struct {
	fe, be interface{ Encode([]byte) ([]byte, error) }
}

func play(t testing.TB, st *State, steps []step) {
	t.Helper()
	for _, s := range steps {
		if s.fe != nil {
			st.Frontend(encoded(t, s.fe))
		} else {
			m := encoded(t, s.be)
			st.Backend(m[0], m[5:])
		}
	}
}

func query(q string) step       { return step{fe: &pgproto3.Query{String: q}} }
func complete(tag string) step  { return step{be: &pgproto3.CommandComplete{CommandTag: []byte(tag)}} }
func ready(s byte) step         { return step{be: &pgproto3.ReadyForQuery{TxStatus: s}} }
func parse(name, q string) step { return step{fe: &pgproto3.Parse{Name: name, Query: q}} }
func bindStmt(portal, stmt string) step {
	return step{fe: &pgproto3.Bind{DestinationPortal: portal, PreparedStatement: stmt}}
}
func execute(portal string) step { return step{fe: &pgproto3.Execute{Portal: portal}} }
func closeStmt(name string) step { return step{fe: &pgproto3.Close{ObjectType: 'S', Name: name}} }
func errorResponse() step        { return step{be: &pgproto3.ErrorResponse{Severity: "ERROR", Code: "42601"}} }
func feSync() step               { return step{fe: &pgproto3.Sync{}} }
func flush() step                { return step{fe: &pgproto3.Flush{}} }
func parseComplete() step        { return step{be: &pgproto3.ParseComplete{}} }
func closeComplete() step        { return step{be: &pgproto3.CloseComplete{}} }
func bindComplete() step         { return step{be: &pgproto3.BindComplete{}} }
func describeStmt(name string) step {
	return step{fe: &pgproto3.Describe{ObjectType: 'S', Name: name}}
}

// described is the server's answer to a Describe of a statement.
func described(rows bool) []step {
	s := []step{{be: &pgproto3.ParameterDescription{ParameterOIDs: []uint32{23}}}}
	if rows {
		return append(s, step{be: &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("x")}}}})
	}
	return append(s, step{be: &pgproto3.NoData{}})
}

// prepared is how asyncpg prepares a statement: Parse, Describe, Flush,
// no Sync before the Bind and Execute of its first use.
func prepared(name string) []step {
	return []step{parse(name, "SELECT $1::int"), describeStmt(name), flush()}
}
func simple(q string, tags ...string) []step {
	s := []step{query(q)}
	for _, tag := range tags {
		s = append(s, complete(tag))
	}
	return append(s, ready('I'))
}

// keys lists the state's items: their SQL, or "parse <name>".
func keys(st *State) []string {
	var out []string
	for _, it := range st.items {
		if it.parse != nil {
			out = append(out, "parse "+parseName(it.parse))
		} else {
			out = append(out, it.sql)
		}
	}
	return out
}

func parseName(msg []byte) string { return wire.View(msg[5:]) }

// TestSessStateTracking: the state a session leaves for a recording
// that takes it up is what its server kept: settings committed, not
// rolled back; prepared statements the server acknowledged, less those
// closed or deallocated; nothing after DISCARD ALL; requests pipelined
// before their answers matched with their own answers.
func TestSessStateTracking(t *testing.T) {
	login := []step{ready('I')}
	for _, c := range []struct {
		name  string
		steps []step
		want  []string
		idle  bool
	}{
		{"settings in order, replaced at the end", slices.Concat(login,
			simple("SET search_path = app", "SET"), simple("SET work_mem = '8MB'", "SET"), simple("SET search_path = public", "SET")),
			[]string{"SET work_mem = '8MB'", "SET search_path = public"}, true},
		{"reset and reset all", slices.Concat(login,
			simple("SET a.b = 1; SET ROLE r; SET c.d = 2", "SET", "SET", "SET"), simple("RESET a.b", "RESET"), simple("RESET ALL", "RESET")),
			[]string{"SET ROLE r"}, true},
		{"set local and a rolled back transaction are not kept", slices.Concat(login,
			simple("BEGIN; SET LOCAL a.b = 1; SET c.d = 2; ROLLBACK", "BEGIN", "SET", "SET", "ROLLBACK")),
			nil, true},
		{"a committed transaction is", slices.Concat(login,
			[]step{query("BEGIN"), complete("BEGIN"), ready('T'), query("SET c.d = 2"), complete("SET"), ready('T'), query("COMMIT"), complete("COMMIT"), ready('I')}),
			[]string{"SET c.d = 2"}, true},
		{"an error in an implicit transaction undoes it", slices.Concat(login,
			[]step{query("SET c.d = 2; SELECT 1/0"), complete("SET"), errorResponse(), ready('I')}),
			nil, true},
		{"an error stops the statements after it", slices.Concat(login,
			[]step{query("SELECT 1/0; SET c.d = 2"), errorResponse(), ready('I'), query("SET e.f = 3"), complete("SET"), ready('I')}),
			[]string{"SET e.f = 3"}, true},
		{"pipelined queries keep their own answers", slices.Concat(login,
			[]step{query("SET a.b = 1"), query("SET c.d = 2"), complete("SET"), ready('I'), complete("SET"), ready('I')}),
			[]string{"SET a.b = 1", "SET c.d = 2"}, true},
		{"prepared statements acknowledged, closed, deallocated", slices.Concat(login,
			[]step{parse("s1", "SELECT 1"), parse("", "SELECT 2"), parse("s2", "SELECT 3"), feSync(), parseComplete(), parseComplete(), parseComplete(), ready('I'),
				closeStmt("s1"), feSync(), closeComplete(), ready('I')},
			simple("PREPARE q AS SELECT 4", "PREPARE"), simple("PREPARE r AS SELECT 5; DEALLOCATE q", "PREPARE", "DEALLOCATE")),
			[]string{"parse s2", "PREPARE r AS SELECT 5"}, true},
		{"a Parse that failed is not kept, nor what the server skipped", slices.Concat(login,
			[]step{parse("bad", "SELEC"), parse("skipped", "SELECT 1"), feSync(), errorResponse(), ready('I'),
				parse("good", "SELECT 1"), feSync(), parseComplete(), ready('I')}),
			[]string{"parse good"}, true},
		{"a setting through the extended protocol", slices.Concat(login,
			[]step{parse("", "SET a.b = 1"), bindStmt("", ""), execute(""), feSync(), parseComplete(), bindComplete(), complete("SET"), ready('I')}),
			[]string{"SET a.b = 1"}, true},
		{"discard all forgets everything", slices.Concat(login,
			simple("SET a.b = 1", "SET"), []step{parse("s1", "SELECT 1"), feSync(), parseComplete(), ready('I')}, simple("DISCARD ALL", "DISCARD ALL")),
			nil, true},
		{"inside a transaction block", slices.Concat(login, []step{query("BEGIN"), complete("BEGIN"), ready('T')}), nil, false},
		{"with a request in flight", slices.Concat(login, []step{query("SELECT pg_sleep(1)")}), nil, false},
		{"with extended messages before their Sync", slices.Concat(login, []step{parse("s", "SELECT 1")}), nil, false},
		{"with extended messages and a Flush before their Sync", slices.Concat(login, []step{parse("s", "SELECT 1"), flush()}), nil, false},
		{"a Flush after the Sync leaves it idle", slices.Concat(login,
			[]step{parse("s", "SELECT 1"), feSync(), parseComplete(), ready('I'), flush()}), []string{"parse s"}, true},
		// Issue 77 item 3: asyncpg's prepare.
		{"a statement prepared with Parse, Describe and Flush, answered", slices.Concat(login,
			simple("SET work_mem = '8MB'", "SET"), prepared("s"), []step{parseComplete()}, described(true)),
			[]string{"SET work_mem = '8MB'", "parse s"}, true},
		{"so prepared, inside a transaction that committed since", slices.Concat(login,
			[]step{query("BEGIN"), complete("BEGIN"), ready('T')}, prepared("s"), []step{parseComplete()}, described(false),
			[]step{query("COMMIT"), complete("COMMIT"), ready('I')}),
			[]string{"parse s"}, true},
		{"so prepared, its Describe not answered yet", slices.Concat(login, prepared("s"), []step{parseComplete()}), []string{"parse s"}, false},
		{"so prepared, failed", slices.Concat(login, prepared("s"), []step{errorResponse()}), nil, false},
		{"the unnamed statement prepared so", slices.Concat(login, prepared(""), []step{parseComplete()}, described(true)), nil, false},
		{"a portal bound before the Sync", slices.Concat(login,
			prepared("s"), []step{parseComplete()}, described(true), []step{bindStmt("", "s"), flush(), bindComplete()}), []string{"parse s"}, false},
		{"so prepared behind a request not answered yet", slices.Concat(login,
			[]step{parse("a", "SELECT 1"), feSync()}, prepared("s"), []step{parseComplete(), ready('I')}), []string{"parse a"}, false},
		{"so prepared behind a request answered since", slices.Concat(login,
			[]step{parse("a", "SELECT 1"), feSync()}, prepared("s"), []step{parseComplete(), ready('I'), parseComplete()}, described(true)),
			[]string{"parse a", "parse s"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := New(DefaultItems, DefaultBytes)
			play(t, st, c.steps)
			if got := keys(st); !slices.Equal(got, c.want) || st.unrecordable != "" {
				t.Errorf("state %q (unrecordable %q), want %q", got, st.unrecordable, c.want)
			}
			if st.Idle() != c.idle {
				t.Errorf("idle %v, want %v", st.Idle(), c.idle)
			}
		})
	}
}

// TestSessStateBounds: a session whose state outgrows its bounds, or
// whose settings a savepoint's rollback may have undone, is marked as
// one a recording cannot take up, with why, and keeps nothing.
func TestSessStateBounds(t *testing.T) {
	st := New(3, DefaultBytes)
	for i := range 4 {
		play(t, st, []step{parse(fmt.Sprint("s", i), "SELECT 1"), feSync(), parseComplete(), ready('I')})
	}
	if st.unrecordable != "it holds more than 3 prepared statements and settings" || len(st.items) != 0 || st.bytes != 0 {
		t.Errorf("past 3 items: unrecordable %q, %d items, %d bytes", st.unrecordable, len(st.items), st.bytes)
	}
	st = New(DefaultItems, 300)
	play(t, st, []step{ready('I'), parse("big", string(make([]byte, 400))), feSync(), parseComplete(), ready('I')})
	if st.unrecordable != "its prepared statements and settings take more than 300 bytes" {
		t.Errorf("past 300 bytes: unrecordable %q", st.unrecordable)
	}
	st = New(DefaultItems, DefaultBytes)
	play(t, st, []step{ready('I'), query("BEGIN; SET a.b = 1; SAVEPOINT s"), complete("BEGIN"), complete("SET"), complete("SAVEPOINT"), ready('T'),
		query("ROLLBACK TO SAVEPOINT s"), complete("ROLLBACK"), ready('T')})
	if st.unrecordable == "" {
		t.Error("settings changed before a savepoint rolled back to: the state is taken as known")
	}
}

// TestSessStateMemory measures what the proxy keeps per session for
// recordings to take it up from the middle: a session as pgx leaves it
// (its statement cache's named statements, a few settings) and an idle
// session that set nothing, in heap bytes per session, measured over
// many sessions; it fails when the state's own accounting, which the
// bounds apply to, falls short of the heap it takes by more than half.
func TestSessStateMemory(t *testing.T) {
	for _, c := range []struct {
		name       string
		statements int
	}{{"no state", 0}, {"4 settings and 20 statements", 20}, {"4 settings and 200 statements", 200}} {
		const n = 200
		var steps []step
		steps = append(steps, ready('I'))
		for _, s := range []string{"SET search_path = app, public", "SET application_name = 'web'", "SET TIME ZONE 'UTC'", "SET ROLE app_reader"} {
			if c.statements > 0 {
				steps = append(steps, simple(s, "SET")...)
			}
		}
		for i := range c.statements {
			q := fmt.Sprintf("SELECT id, name, email, created_at FROM app.users WHERE id = $1 AND tenant = $2 /* %d */", i)
			steps = append(steps, parse(fmt.Sprintf("stmtcache_%032x", i), q), step{fe: &pgproto3.Describe{ObjectType: 'S'}}, feSync(), parseComplete(), ready('I'))
		}
		msgs := make([][]byte, len(steps))
		for i, s := range steps {
			if s.fe != nil {
				msgs[i] = encoded(t, s.fe)
			} else {
				msgs[i] = encoded(t, s.be)
			}
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		states := make([]*State, n)
		for j := range states {
			st := New(DefaultItems, DefaultBytes)
			for i, m := range msgs {
				if steps[i].fe != nil {
					st.Frontend(m)
				} else {
					st.Backend(m[0], m[5:])
				}
			}
			states[j] = st
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := max(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, 0)
		accounted := states[0].Bytes()
		t.Logf("%s: %.0f heap bytes per session (the state's struct alone %d), %d accounted against the bound of %d",
			c.name, heap, unsafe.Sizeof(State{}), accounted, DefaultBytes)
		if accounted > DefaultBytes || len(states[0].items) != c.statements+min(c.statements, 4) {
			t.Errorf("%s: %d bytes accounted, %d items kept", c.name, accounted, len(states[0].items))
		}
		if c.statements > 0 && heap > 2*float64(accounted)+2048 {
			t.Errorf("%s: %.0f heap bytes per session against %d accounted: the bound undercounts", c.name, heap, accounted)
		}
		runtime.KeepAlive(states)
	}
}

// BenchmarkStateFrontend is what the state costs the relay per message
// of a session that changes none (ResumeSessions): an ExecParams as
// pgconn sends it (Parse of the unnamed statement, Bind, Describe,
// Execute, Sync) and the answers the state reads (ParseComplete,
// CommandComplete, ReadyForQuery), 8 messages an iteration, each under
// the state's lock as the pumps take it.
func BenchmarkStateFrontend(b *testing.B) {
	var fe, be [][]byte
	for _, m := range []interface{ Encode([]byte) ([]byte, error) }{
		&pgproto3.Parse{Query: "SELECT id, name FROM app.users WHERE id = $1", ParameterOIDs: []uint32{20}},
		&pgproto3.Bind{Parameters: [][]byte{[]byte("42")}}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{},
	} {
		fe = append(fe, encoded(b, m))
	}
	for _, m := range []interface{ Encode([]byte) ([]byte, error) }{
		&pgproto3.ParseComplete{}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, &pgproto3.ReadyForQuery{TxStatus: 'I'},
	} {
		be = append(be, encoded(b, m))
	}
	st := New(DefaultItems, DefaultBytes)
	st.Backend('Z', []byte{'I'})
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range fe {
			st.Lock()
			st.Frontend(m)
			st.Unlock()
		}
		for _, m := range be {
			st.Lock()
			st.Backend(m[0], m[5:])
			st.Unlock()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(len(fe)+len(be))), "ns/msg")
}
