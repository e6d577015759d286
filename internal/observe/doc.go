// Package observe collects server-side evidence from a PostgreSQL server
// while a workload runs against it: pg_stat_statements deltas per query
// fingerprint, a wait-event profile per fingerprint and over time, and
// transactions per second and connections over time from pg_stat_database
// and pg_stat_activity.
//
// The wait profile comes from pg_wait_sampling when it is loaded
// (shared_preload_libraries), created in the observer's database and
// gives query ids: the server samples every backend every
// pg_wait_sampling.profile_period (10 ms) itself, and the observer reads
// pg_wait_sampling_profile at the start, every snapshot interval and at
// the end, and sums the deltas per pid, wait event and query id. It never
// calls pg_wait_sampling_reset_profile(), which would take the profile
// from everyone else. Its own backend is left out by pid, idle sessions
// (Client/ClientRead with no query) and processes other than client
// backends and parallel workers too. Otherwise wait events are sampled
// from pg_stat_activity, and Waits.SourceReason says why.
//
// A Collector holds one extra connection to the server, with
// application_name "pgrehearse-observe", and leaves itself out of what it
// measures: its backend is excluded from the samples, its statements
// (which carry the comment /* pgrehearse-observe */) from the
// pg_stat_statements deltas, and its own transactions from the TPS. All its
// work runs on one goroutine, one query at a time, so its cost on the
// server is one backend running short read-only queries: a
// pg_stat_activity read every sample interval (100 ms; every second when
// pg_wait_sampling gives the waits), a pg_stat_database
// read every second and a pg_stat_statements read (without query texts,
// which are fetched only for query ids not seen before) and a
// pg_wait_sampling_profile read every snapshot interval (10 s).
// Evidence.Sampling says how much time that took.
//
// Deltas of pg_stat_statements are summed snapshot to snapshot, so that
// they stay right when the statistics are reset or entries are evicted
// during the run: pg_stat_statements_info's stats_reset and dealloc
// detect both, and an entry whose counters went down (or, from
// PostgreSQL 17, whose stats_since changed) restarted from zero. What ran
// between the last snapshot and such a reset or eviction is lost, and the
// evidence says so in its warnings.
//
// Server query ids are mapped to pgrehearse's fingerprints by
// fingerprinting pg_stat_statements.query (package fingerprint), so the
// evidence joins a replay's per-query results; a wait sample is tied to a
// query through pg_wait_sampling's or pg_stat_activity's query id, or
// pg_stat_activity's text when the server computes no query id.
//
// Two parts of a Collector serve callers that measure windows of their
// own (a sweep's steps) on a connection they own: a WaitSampler polls
// pg_stat_activity with the Collector's query, and a StatementsReader
// reads pg_stat_statements' counters as a Collector does, leaving the
// deltas to the caller.
//
// The package only reads: it never creates an extension nor changes a
// setting, and it knows nothing of logs or replays. It does not decide
// about files and renders nothing: Evidence is written as JSON by the
// caller, and internal/report turns it into a summary and page sections.
package observe
