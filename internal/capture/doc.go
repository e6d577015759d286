// Package capture is the capture format: what the capture proxy records of
// each session it relays (startup parameters, every frontend message after
// authentication verbatim, and a summary of the server's answers), written
// as a stream of records and read back as one more source of sessions.
//
// A capture holds parameter values, which are personal data: its files are
// created readable by their owner only (0600). It never holds a password,
// a SASL exchange, a cancel key or a row the server sent.
//
// docs/capture-format.md describes the files byte by byte.
package capture
