// Package catalog loads, from a connected PostgreSQL server, what the
// findings need to know about its schema and statistics: tables with their
// size and insert counts, their columns and indexes (primary, partial,
// expression), pg_stat_statements rows with planning time when
// track_planning is on, and whether hypopg is available. Its Explainer is
// pgrehearse's one EXPLAIN runner (the findings' and package explain's):
// literal, with a statement's logged parameter values, or generic, into a
// plan.Plan. Whether a statement is a plain SELECT is package
// fingerprint's answer, not this package's.
//
// The package only reads. Every query it sends runs in a read-only
// transaction under a statement_timeout, and Explain never executes a
// statement: EXPLAIN ANALYZE is refused unless the caller allows it, and
// even then only for a plain SELECT. Hypothetical checks an index with
// hypopg's hypothetical indexes, which live in the memory of the
// connection's backend, never in the catalogs, and are reset before it
// returns. It knows nothing of logs, analyses or
// findings; those live in the layers above.
package catalog
