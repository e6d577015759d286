// Package plan is the model of a PostgreSQL query plan and what can be
// said about two of them without a database.
//
// It reads plans from the forms PostgreSQL writes them in: EXPLAIN
// (FORMAT JSON) output, EXPLAIN's text format, and auto_explain's log
// entries in its text and JSON formats (with or without log_analyze,
// log_buffers, log_timing, log_verbose and log_settings), into one tree of
// Nodes. A plan read from the text and from the JSON of the same EXPLAIN
// is the same tree.
//
// A plan's shape is what the planner chose, with the estimates and the
// measurements left out: node types, aggregate and join strategies, join
// types and order, relations, index names, scan directions and
// parallelism, as pg_stat_plans' plan id and Oracle's PLAN_HASH_VALUE
// identify a plan. Two plans of the same shape are "the same plan"; Hash
// is a short stable identity of a shape.
//
// Compare aligns two plans of one statement: when their shapes differ it
// names the first nodes that differ (a node replaced, added or removed),
// and when they are the same it pairs every node and, where both were
// analyzed, says where the time and the buffer reads grew (per-node
// exclusive time, loops, shared reads, temporary blocks, sorts and hashes
// that went to disk).
//
// Expressions in a plan (filters, index conditions, sort keys) quote the
// constants of the statement, which may be personal data: Redact replaces
// them. The package never decides where a plan goes; callers that write
// plans where the user did not ask for values redact them first.
//
// The package is pure: no database, no files, no logging. It does not run
// EXPLAIN (catalog's Explainer does, for package explain's comparison and
// the findings, which both read this package's Plan), does not attribute a change to a cause,
// and formats nothing for people beyond EXPLAIN's own node labels.
package plan
