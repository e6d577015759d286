// Package wire names the bytes of PostgreSQL's wire protocol that the
// capture proxy and the capture decoder read: the type byte of each
// message (frontend and backend), the transaction status of
// ReadyForQuery and the fields of an ErrorResponse, in one table, as
// pgproto3 keeps its own in one file.
//
// It is constants only, imported by internal/proxy and internal/capture,
// which frame and decode raw messages on the relay's hot path and so do
// not decode them through pgproto3's types. internal/archdoc fails when
// a switch in either spells a protocol byte as a raw literal.
package wire
