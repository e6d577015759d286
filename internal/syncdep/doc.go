// Package syncdep decides, for a synchronized replay, which commits of the
// original run each statement depends on, and tracks which of them have
// committed on the target. Its name says what it holds: the dependencies
// that synchronize the sessions of a replay.
//
// What one statement does to relations, read with PostgreSQL's parser
// (pg_query), is package fingerprint's Class, made once per statement
// text: the relations it reads or writes, the functions it calls, whether
// it controls the transaction (BEGIN, COMMIT, PREPARE TRANSACTION...) and
// whether its effects cannot be known from its text (a DO block, CALL,
// DDL, an SQL-level EXECUTE). This package names that vocabulary
// (Statement, Name, Control) and parses nothing itself. It has two parts,
// each usable and tested apart:
//
//   - A Catalog is what a database's schema adds to that: foreign keys (a
//     child insert reads its parent, a parent delete reads its children
//     and may write them), views (read their base tables), partitions and
//     inheritance (one relation), tables with triggers or rules and user
//     functions (whose effects are unknown). LoadCatalog reads it from a
//     server once; a Resolver expands a Statement through it into an
//     Effect.
//   - A Tracker follows the log, session by session: transaction
//     boundaries, the relations each transaction wrote (and, for the
//     statements that name a row by its primary key as a bind parameter,
//     the rows: see RowKey), the order of commits in log time. For each statement it returns a Wait (the
//     commits that ended before the statement started in the log and
//     wrote what it touches; for a statement that writes or locks rows,
//     also those on those relations that ended while it ran, whose row
//     locks it may have waited for) and, for the event that ends a
//     transaction, a Txn that the replay marks Done once it ran on the
//     target. Its Board answers, from any goroutine, which Txn a Wait
//     still waits for. A statement of unknown effect by its kind (DDL)
//     is marked a barrier: the replay makes it wait for every earlier
//     statement, which the Tracker does not follow. Advisory locks
//     whose key a statement gives are followed too (advisory.go): a
//     taking waits for the holdings asked for before it, a failed try
//     for the holding it met, and that holding's release for the try.
//     A listener's statements wait for the notifying commits sent
//     before them (notify.go).
//
// # Memory
//
// The bookkeeping never holds per-statement history. It holds: per
// relation, the transactions that wrote it and have not yet run on the
// target (those in flight between the log reader and the sessions); per
// session, the relations its open transaction wrote; per prepared
// transaction (2PC) the same until COMMIT PREPARED; an index from log time
// to commit sequence that thins its old entries to stay under a fixed
// size; and bounded caches of analyses by normalized text. So memory grows
// with the schema, the sessions and the replay's read-ahead, not with the
// length of the log.
//
// The package only decides and counts. It does not wait (the replay does,
// with its own timeout and deadlock check), does not talk to the target
// except in LoadCatalog, and knows nothing of command-line flags.
package syncdep
