// Package wire names the bytes of PostgreSQL's wire protocol that the
// capture proxy and the capture decoder read: the type byte of each
// message (frontend and backend), the transaction status of
// ReadyForQuery and the fields of an ErrorResponse, in one table, as
// pgproto3 keeps its own in one file.
//
// It is imported by internal/proxy and internal/capture, which frame
// and decode raw messages on the relay's hot path and so do not decode
// them through pgproto3's types. Besides the table it holds what both
// read of the extended protocol's named objects: the names at the head
// of a Parse, Bind, Execute or Close, read in place (heads.go), and the
// one tracker of a session's prepared statements and portals (Names).
// internal/archdoc fails when a switch of a package that speaks the
// protocol spells a protocol byte as a raw literal, or when the proxy or
// the capture decoder keeps a map of statements or portals of its own.
package wire
