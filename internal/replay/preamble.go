package replay

import (
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// runPreamble recreates, on a new connection of a session a capture
// recorded from the middle, the state the session had built before the
// recording took it up: its settings and SQL-level prepared statements,
// in the order it made them. It is not a statement of the workload:
// untimed, not compared, counted apart (results.Preamble). A statement
// the target refuses (a role it lacks) is counted and the rest run on:
// the failures it causes later are those of "session state from before
// the recording".
func (s *session) runPreamble() {
	if !s.resumed {
		return
	}
	r := s.r
	if !s.preambleNoted {
		s.preambleNoted = true
		r.c.preambleSessions.Add(1)
	}
	for _, sql := range s.preamble {
		if s.conn == nil || s.conn.IsClosed() {
			return
		}
		r.c.preambleRan.Add(1)
		if err := s.execSimple(sql); err != nil {
			r.c.preambleFailed.Add(1)
		}
	}
}

// sessionStateError reports whether code (a SQLSTATE) is an error that
// state a session built before a recording explains when the replay
// lacks it: a relation (a temporary table), a cursor, a prepared
// statement or an object (a role set by a function) that is not there,
// a lock not held.
func sessionStateError(code string) bool {
	switch code {
	case "42P01", // undefined_table: a temporary table
		"34000", // invalid_cursor_name: a cursor WITH HOLD
		"26000", // invalid_sql_statement_name: a prepared statement
		"42704", // undefined_object
		"42883", // undefined_function: a function in pg_temp
		"55000": // object_not_in_prerequisite_state: currval before nextval
		return true
	}
	return false
}

// sessionStateDependent reports whether a statement's answer could depend
// on state its session built before the recording started, which the
// capture does not hold: it failed on the target with an error such state
// explains (sessionStateError of code, the failure's cause); it names no
// table, or one the target's catalog does not have (unknown: a temporary
// table made before); it reads a cursor (FETCH, MOVE, CLOSE) or a prepared statement
// (an SQL-level EXECUTE or DEALLOCATE), or a setting (SHOW); or it calls
// what reads such state (currval, lastval, an advisory lock, a setting).
// Never a statement that only reads or writes ordinary tables.
func sessionStateDependent(c *fingerprint.Class, query string, tables []string, unknown bool, code string) bool {
	if sessionStateError(code) || len(tables) == 0 || unknown {
		return true
	}
	if c.Prepared == fingerprint.PreparedExecute || c.Prepared == fingerprint.PreparedDeallocate {
		return true
	}
	switch first, _, _ := strings.Cut(strings.TrimLeft(query, " \t\r\n("), " "); strings.ToLower(first) {
	case "fetch", "move", "close", "show":
		return true
	}
	for _, f := range c.FuncNames() {
		switch {
		case f == "currval", f == "lastval", f == "current_setting", f == "pg_listening_channels",
			strings.HasPrefix(f, "pg_advisory"), strings.HasPrefix(f, "pg_try_advisory"):
			return true
		}
	}
	return false
}
