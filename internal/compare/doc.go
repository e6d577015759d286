// Package compare turns workload results (the JSON of `pgrehearse
// analyze` or `pgrehearse replay`) into a comparison: per query fingerprint
// the figures of both sides, each change with its interval, whether it is
// beyond noise and beyond the floors, ranked lists of regressions, errors
// that grew, queries seen on one side only, divergence, and a verdict
// against rules (Rule: a threshold on the two sides, in the grammar
// judge.ParsePairRules reads).
//
// # Runs, not calls
//
// Runs compares several results a side (rounds of a rehearsal, control
// and candidate); Compare is Runs with one result a side. Calls of one
// run share its cache state, its checkpoints and its neighbours, and runs
// differ from each other by more than calls within a run do, so the
// comparison tests over runs, as benchstat does (package stats): each run
// gives a query's mean, p50, p95 and p99; the effect on each is the
// candidate's median over the baseline's, with the exact rank interval
// over the runs; "~" (ChangeNone) when the interval holds 1. The
// baseline's own runs give each query's noise floor (how far apart two of
// its runs were), and a change counts only beyond that floor, beyond
// Options.MinEffect and by Options.MinEffectMS.
//
// With one run a side (or too few for the interval at Options.Alpha:
// three a side at the default 0.10) run-to-run noise is not measured. The
// interval is then the ratio widened by its sampling error among the
// run's calls and by a default noise floor (DefaultNoiseFloors, measured
// on replays of one workload onto identical targets; docs/noise.md), and
// the report says so: nothing within those floors is ever called a
// change, so nothing within them fails a rule.
//
// Labels never contradict figures: a regression's metric is slower beyond
// its floors, so its factor is above 1 and its added time positive; a
// query whose tail (p95) grew while its mean did not is a tail regression
// (StatusTailRegressed), ranked by what its tail added.
//
// # Like with like
//
// A duration means nothing without where it was measured. Durations in a
// server log are server-side; a replay that measured round trips from its
// client adds network and client time, so comparing the two manufactures
// regressions. Every result therefore has a latency source, and Runs
// refuses two different sources unless Options.AllowMixedLatency is set,
// and then marks every ratio as mixed. A replay that read the target's
// log keeps its client round trips (client_queries) beside its
// server-side queries; the report shows them against the server time of
// the same run (RoundTrips), never compares or judges them.
//
// Before judging, Runs refuses (IncompleteError, typed reasons) results
// that cannot carry a verdict: interrupted or incomplete ones, an empty
// side, a candidate that measured much less than the baseline, the same
// result given twice, and figures that cannot be true (negative, not a
// number, a histogram whose count differs from the calls), with the
// field named. Errors are matched by SQLSTATE; errors a side logged
// without one (a log prefix without %e) are matched by count to the other
// side's, so that a missing %e never makes errors new or a replay
// divergent.
//
// The package does no I/O and renders nothing: it returns numbers and
// typed verdicts, reasons and warnings; internal/report formats every
// figure and writes every sentence.
package compare
