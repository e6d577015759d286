// Package querystats aggregates executions per query fingerprint: calls,
// errors, total and extreme durations, first and last time seen, and a
// latency histogram for percentiles.
//
// A Set is the unit of aggregation. Sets merge exactly (Merge gives the
// same result as adding every execution to one Set, in any order), which is
// what lets analysis run on several goroutines and lets results of several
// replays be combined later: Rows can carry each histogram, encoded in the
// standard HdrHistogram V2 format, and FromRows rebuilds a Set from them.
//
// The package does not fingerprint, read logs or know about events: callers
// hand it a fingerprint, a query text and a duration.
package querystats
