// Package sweep finds the performance cliff of a workload on a server: it
// runs the workload at increasing client counts, measures every step, and
// says where throughput peaks and where it falls off. With several
// configurations (such as pg_stat_statements.track_planning on and off) it
// runs them in the same sweep so that they can be compared step by step.
//
// # Steps
//
// A step is one client count on one configuration. The load generator runs
// for a warm-up and then for the measured duration without reconnecting, so
// that per-connection caches (prepared statements, the relcache and the
// catcache) are warm when measuring starts, plus a one-second tail that
// keeps every connection open until the measured window has closed. Only the
// window is measured:
//
//   - TPS and mean latency come from pgbench's --progress reports (one per
//     second, aggregated over its threads) whose interval lies inside the
//     window. pgbench's own summary covers warm-up and tail as well and is
//     kept only as a cross-check.
//   - Latency percentiles (p50, p95, p99) come from pgbench's per-transaction
//     log (-l), one line per transaction with its latency in microseconds and
//     its completion time, filtered to the window and counted in an HDR
//     histogram. The aggregated log (--aggregate-interval) and --progress
//     only give means, minimums and maximums, and -r only per-statement
//     means, so the per-transaction log is the only pgbench output that
//     yields percentiles. To bound its size a step logs a sample of
//     transactions (--sampling-rate) chosen from the previous step's TPS so
//     that a step logs about 300,000 transactions; percentiles of a uniform
//     sample of that size are exact to well under a percent.
//   - Server CPU is the utime+stime of the postmaster and its children read
//     from /proc/<pid>/stat at both ends of the window. The postmaster's pid
//     comes from postmaster.pid in the data directory. Children that exit
//     during the window are not lost: once reaped, their times are in the
//     postmaster's cutime+cstime, which are counted too. A remote server's
//     CPU is unknown and reported as such (null in JSON).
//   - Wait events are sampled every 100 ms from one extra connection
//     (observe.WaitSampler), which excludes itself: every client backend
//     of the workload's database counts once per sample with its
//     wait_event_type and wait_event; an active backend that waits for
//     nothing is counted as "CPU"/"running", an idle one shows as
//     Client/ClientRead (waiting for its client).
//   - When pg_stat_statements is installed in the database, its calls (and
//     plans) per query id are read at both ends of the window
//     (observe.StatementsReader); the hottest query ids by calls per
//     second are reported.
//
// # Order
//
// Configurations alternate within each client count, in an A B, B A, A B ...
// pattern (for two configurations: A1 B1 B2 A2 A3 B3). Running them in the
// same sweep and interleaved means that drift on a shared machine (another
// job starting, thermal throttling, a checkpoint) falls on both
// configurations about equally, and the reversal at every step cancels a
// steady drift to first order, which running all of A and then all of B
// would turn into a difference between A and B.
//
// A comparison runs CompareRepeat steps at every client count unless told
// otherwise, so that the noise its ratios, knees and cliffs are judged
// against is measured; with one step each it claims none of them (Judge).
//
// # Servers
//
// Without a target, every configuration gets its own throwaway cluster
// (internal/pgcluster) with pg_stat_statements preloaded and the
// configuration's settings in postgresql.conf, initialized with pgbench -i
// at the requested scale. With a target, the configurations are applied in
// turn with ALTER SYSTEM SET and pg_reload_conf(); settings that need a
// restart are refused before anything runs, and every setting is put back
// (ALTER SYSTEM RESET, or the value postgresql.auto.conf held before) at the
// end, also after an error or Ctrl-C.
//
// # Workloads
//
// A Driver generates the load of one step. The pgbench driver runs a
// built-in script or a script file in any query mode. A captured server
// log is swept by the driver of package sweep/logdriver, which the CLI
// wires in. This package must not depend on how a driver produces its
// load, only on the Load it reports: it imports neither logread nor
// replay.
//
// The package does not print: Run reports progress through a callback and
// returns a Result, which encodes to the JSON documented in
// docs/sweep-json.md and which internal/report renders for a terminal and
// a page.
package sweep
