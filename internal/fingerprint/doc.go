// Package fingerprint turns SQL text, as the server logged it, into the
// statements the server ran: one Item per statement, each with pg_query's
// fingerprint and normalized text (constants replaced by $n).
//
// A simple-protocol query string may hold several statements ("BEGIN;
// SELECT 1; COMMIT"); the server counts each one, so the string yields one
// Item per statement. Text that does not parse (a syntax error: failed
// statements are logged too) still gets a stable fingerprint, made from its
// tokens with constants masked, and is marked Unparsed: the server parses a
// whole simple-protocol string before running any of it, so such a string
// ran nothing and counts as one failed statement.
//
// Parsing runs the PostgreSQL parser through cgo and costs microseconds;
// logs repeat the same texts, so Cache remembers results by exact text. The
// package knows nothing about logs, events or statistics: it maps strings to
// fingerprints and must stay that way, so that the replay side can use it on
// its own.
package fingerprint
