// Package midstream keeps what a recording needs to take a session up
// from the middle: the settings, prepared statements and transaction
// state of a session the capture proxy relays, read from its messages
// as they pass.
//
// The proxy hands each of a session's messages to its State (Frontend,
// Backend) when Config.ResumeSessions is set; a recording attached
// while the session is open starts it with State.Resume, the SQL and
// Parse messages that recreate its state (capture.Resume), at once when
// the session is idle (State.Idle), else at its next idle point, having
// counted what it missed since (State.Await, State.Skip). A session
// whose state outgrows its bounds, or cannot be known, is Unrecordable.
//
// Reading the state takes a small SQL lexer of its own (sqlscan.go): a
// Query's top-level statements, past quotes, dollar quotes and
// comments, and the first words of those that change the session
// (SET, RESET, DISCARD ALL, PREPARE, DEALLOCATE), with no allocation
// for the statements that do not, as nearly every one does not. The
// extended protocol's statements and portals are followed with
// wire.Names, the one tracker of them.
package midstream
