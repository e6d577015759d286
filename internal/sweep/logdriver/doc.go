// Package logdriver is a sweep.Driver that makes a step's load by
// replaying a captured server log (read with logread, replayed with
// replay at speed 0), its sessions multiplied to reach the step's client
// count. It lives apart from package sweep, which must not depend on how
// a driver makes load, and is wired in by the CLI.
//
// # The log workload
//
// A Log replays a log with internal/replay at speed 0 (as fast as possible,
// keeping each session's order and the start barrier). A first read of the
// log puts its sessions in lanes: a session takes the lowest lane free when
// it starts, a lane being free once its session has ended (in read order,
// which is what the start barrier follows; a session that never
// disconnects holds its lane to the end of the log), and lanes are then
// numbered busiest first. The number of lanes is the most sessions the
// log has open at once: 2 for a pgbench -c 2 capture, and for an
// application opening a connection per request, about its concurrency.
// A step of c clients replays the sessions of the first u lanes, each m
// times (replay.Options.Multiply), with m = ceil(c / lanes) and
// u = ceil(c / m): u*m sessions at once at the log's peak, exactly c when
// c divides evenly and otherwise less than m above it. Concurrency is not
// capped at c instead: a cap would hold back sessions whose events are
// interleaved with the running ones', which the replay cannot do without
// reading the log ahead without bound. The connections actually open are
// sampled every 10 ms and reported (mean and max): at speed 0 a session
// with less work than the others ends first, and the concurrency of the
// step falls until the pass ends.
//
// Every pass reads the file anew: the replay is restarted, with new
// connections, until the step's warm-up, window and tail are over, and
// the last pass is stopped (statements in flight may finish for
// Log.Grace). A pass repeats the log's writes, as each copy of a
// multiplied session does: duplicate keys fail with unique violations,
// DDL fails after the first pass; failures are counted (failed, and by
// SQLSTATE) like any other and are not retried. Every session runs as the
// user of the sweep's connection string, in its database, which is the
// one the sweep observes. The schema must exist there: on throwaway
// clusters Init runs pgbench -i (for a pgbench capture) and/or a setup SQL
// file; without them every statement of the log fails.
//
// TPS is transactions per second: COMMITs, ROLLBACKs (and their
// synonyms, PREPARE TRANSACTION) and statements outside a transaction
// block, a multi-statement query string without transaction control being
// one transaction. The replay's SampleSink gets each execution with the
// fingerprint of its first statement only, not its session, so the first
// read counts, per fingerprint, the statements and transaction ends of its
// executions, and the window adds up those averages: exact when every
// execution of a fingerprint is alike (as in pgbench's scripts), an
// estimate otherwise. Statements are counted as analyze counts them.
// Latency percentiles are per execution (a query string or an
// extended-protocol execution, as the replay times it: a round trip from
// the client), of the executions that succeeded and completed in the
// window, every one recorded in an HDR histogram.
//
// A step's end stops the replay and lets statements in flight finish for
// Log.Grace (replay.HardStop); Ctrl-C cancels them at once. The driver
// names no command-line flag.
package logdriver
