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
// It is also the one statement classifier: an Item's Class says what the
// statement does (its effect on the transaction, whether it can write,
// what it destroys, COPY FROM STDIN, EXPLAIN ANALYZE, SQL-level PREPARE,
// EXECUTE and DEALLOCATE, the relations it reads and writes). The Class is
// made on first use and kept with the Item, so each distinct statement
// text is parsed for it once however many consumers ask (the replay's
// sessions, its synchronization, its pre-flight, the sweep).
// AssignedColumns, apart from the Class, gives the columns a statement's
// SET lists assign, which only an explanation of its plans needs.
// Statements (and Statement, Classify, PlainSelect) give the Class of any
// other text, parsed once per distinct text and remembered within a
// bounded memory: what catalog, explain, findings and the replay's
// pre-flight ask (a plain SELECT that EXPLAIN ANALYZE may run, the
// statement's kind, an INSERT's target and first row, a job-queue poll,
// the role or database a CREATE makes, the functions called), so that no
// other package parses SQL.
//
// Parsing runs the PostgreSQL parser through cgo and costs microseconds;
// logs repeat the same texts, so Cache remembers results by exact text. The
// package knows nothing about logs, events or statistics: it maps strings to
// fingerprints and classes and must stay that way, so that the replay side
// can use it on its own. It must not decide what a consumer does with a
// class (skip, wait, count): that is the consumer's.
package fingerprint
