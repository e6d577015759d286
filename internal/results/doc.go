// Package results is the one model of what a run measured: the analysis of
// a log (pgrehearse analyze) and a replay against a target (pgrehearse
// replay) both produce a Result, and every consumer (compare, findings,
// the reports) reads one. It sits between the producers and the
// consumers: it imports neither.
//
// A Result holds the kind of run and where its latencies were measured
// (typed, never compared as free strings), the accounting of every line
// and statement, per query fingerprint the calls, errors by SQLSTATE,
// rows when known and the latency histogram, the activity over time and,
// for a replay, its schedule lag and sync-wait distributions, outcomes and
// connection figures.
//
// A Result knows what it is a part of: its Input (the files read, with
// their sizes and content hashes) and its Part (shards of the input's
// sessions, a rehearsal round). The vocabulary consumers test (sync mode,
// skip reasons, event kinds, incomplete reasons, latency source) is typed
// and defined here once (vocab.go).
//
// # Merging
//
// Merge combines two results of the same kind and latency source exactly:
// counts add, histograms merge bucket for bucket, timelines align on wall
// time, and the merge of the parts of a workload split by session equals
// the result of the whole. That is what lets analysis run in parallel and
// a replay run on several machines, each writing its own Result. Shards
// of one input each read all of it: their line accounting is counted
// once, and parts of different inputs, or that overlap, are refused.
//
// # JSON
//
// The JSON form is versioned (Version, documented in
// docs/results-json.md). Decode reads the current version and the files
// written before versions existed (version 1: analyze and replay JSON of
// earlier releases), and says plainly when a file is newer than this
// program or too old for what is asked of it (merging needs histograms
// that version 1 files may lack).
//
// The package does no I/O besides the io.Reader and io.Writer it is
// handed, and it names no command-line flags.
package results
