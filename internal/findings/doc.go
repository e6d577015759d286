// Package findings names the known performance traps a workload falls
// into, each with the evidence and a concrete recommendation: many
// single-row INSERTs (batch-inserts), sequential scans behind filters on
// big tables (missing-index), planning time that dominates
// (planning-heavy), one query id called fast enough to contend on
// pg_stat_statements' per-entry spinlock (hot-queryid), random primary
// keys on large insert-heavy tables (random-keys), job-queue polls that
// lock without SKIP LOCKED (queue-without-skip-locked), big tables the
// workload touches without planner statistics, as pg_upgrade leaves them
// (no-statistics), and errors by SQLSTATE (errors).
//
// A finding is data: a stable id, a severity, numbers and the queries or
// tables involved, a recommendation and, where it estimates, the model and
// its inputs stated plainly. Every threshold is a field of Thresholds,
// which a Report carries so that a reader can see what was assumed;
// Options change the few that the CLI and tests need to (tests make
// "large" small), the others are fixed.
//
// Inputs come from the layers below and are all optional except the
// Workload: an analysis or replay result (Workload), what the log's
// events showed beyond the analysis (Observed: logged parameter values,
// sessions per statement, a sample execution to EXPLAIN), and a connected
// server (catalog.Catalog and catalog.Explainer). A finding that lacks an
// input it needs is listed as not evaluated, with the reason, rather than
// silently absent. The package never writes to a server and never runs a
// statement (EXPLAIN only, ANALYZE only when allowed and only for plain
// SELECTs; missing-index checks its suggestion with a hypothetical index
// when hypopg is installed in the database, which exists only in the
// explaining session's memory and is removed at once); it does not read
// logs, render findings (internal/report does) or name how a caller
// provides an input: a Skip says which input was lacking (Lack).
package findings
