package replay

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
