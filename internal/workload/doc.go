// Package workload runs a fixed mix of PostgreSQL traffic against a
// throwaway cluster, so that its server log holds every shape of entry
// pgrehearse's log reader must understand.
//
// The mix has two parts. pgbench runs its TPC-B-like script with each
// query protocol (-M simple, extended and prepared) for the bulk of the
// traffic and its timing. A small "application" written with pgconn then
// sends the awkward cases one by one: SQL spanning lines with tabs and
// comments, bind parameters holding quotes, newlines, NULL next to the
// string 'NULL', a 10 kB value and non-ASCII text, named prepared
// statements, transactions that commit and roll back, several statements
// in one simple query, statements that fail (also inside a transaction,
// followed by statements the aborted transaction refuses), short sessions,
// and sessions as another role in another database.
//
// The application part is deterministic: the same statements with the same
// parameters in the same order and the same errors every run, and Run
// fails if the server answers differently, so that tests of the log reader
// can count on what the log holds. pgbench's part is repeatable only in
// its random choices (a fixed --random-seed), not in how many transactions
// fit in its time.
//
// The package drives a server; it does not read logs or analyze anything.
package workload
