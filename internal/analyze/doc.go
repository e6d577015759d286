// Package analyze summarizes a workload from its events: how many lines
// and statements the logs held, which errors occurred, and per query
// fingerprint the calls, errors and latencies: the results.Result that
// `pgrehearse analyze` reports, and the baseline a replay is compared with.
//
// Analyze reads events from Sources on one goroutine and hands them in
// batches to Options.Jobs workers, each aggregating into its own
// querystats.Set; the sets are merged at the end. Every figure is a sum, a
// minimum, a maximum or a set union, so the result does not depend on the
// number of workers or on how events were dealt out.
//
// The package consumes events (event.Source) and knows nothing of log
// formats: it does not import logread, and it selects nothing: the time
// window and pgrehearse's own sessions are package source's decorators.
// Line accounting and what the selection left out arrive with the events,
// through the sources' results.SourceCounter. It returns data and renders
// nothing: the summary a person reads is internal/report's.
package analyze
