// Package compare turns two workload results (the JSON of `pgrehearse
// analyze` or `pgrehearse replay`) into a comparison: per query fingerprint
// the figures of both runs, their ratios, whether the difference is beyond
// noise, ranked lists of regressions, new errors by SQLSTATE, queries seen in
// one run only, and a verdict against rules (ParseRules).
//
// # Like with like
//
// A duration means nothing without where it was measured. Durations in a
// server log are server-side; a replay that measured round trips from its
// client adds network and client time, so comparing the two manufactures
// regressions. Every result therefore has a latency source (the top-level
// field latency_source: server_log, client or pg_stat_statements; a result
// without it is server_log for kind "analysis" and client for kind
// "replay"). Compare refuses two different sources unless
// Options.AllowMixedLatency is set, and then marks every ratio as mixed.
// A replay that read the target's log keeps its client round trips
// (client_queries) beside its server-side queries; the report shows them
// against the server time of the same run (RoundTrips), as the client-side
// overhead of the setup, and never compares or judges them.
//
// # Beyond noise
//
// A query is judged only when both runs have at least Options.MinCalls
// timed calls; with fewer it is "too few calls", whatever its ratio. When
// both rows carry their latency histogram, the two
// distributions are compared with a Mann-Whitney U test (a shift of the
// typical call) and a Kolmogorov-Smirnov test (a change anywhere, the tail
// included), both computed on the histogram buckets, whose values tie
// within the histogram's precision; the difference is significant when the
// smaller p-value, doubled for the two tests, is below Options.Alpha.
// Without histograms only quantiles are known, and the rule is deliberately
// conservative (see summaryTest): most calls of one run must lie beyond the
// other run's tail. A significant difference is a regression when the mean,
// p50 or p95 grew by at least Options.MinEffect, so that a statistically
// real but tiny shift on a busy query is not called a regression.
//
// Rules (ParseRules) apply to significant differences only: a query with
// too few calls or within noise never breaks a rule.
//
// The package does no I/O and renders nothing: callers hand it results, and
// internal/report writes the Report it returns for a terminal or a page.
package compare
