// Package sqlstate knows the SQLSTATE of the error messages PostgreSQL
// writes, for logs that do not say it: a stderr log whose log_line_prefix
// lacks %e names an error by its message only, while the target's log of
// a replay (or the replayer itself) knows it by code. Without the code
// the same 97 duplicate keys would count as errors of another kind, and
// new.
//
// A message's class is its text without its values (quoted names,
// numbers), which is what FromMessage matches; the table holds the
// messages (lc_messages = 'C') that workloads meet, from PostgreSQL's own
// sources, and a message it does not know has no code.
//
// The package knows messages only: it reads no log and counts nothing.
package sqlstate
