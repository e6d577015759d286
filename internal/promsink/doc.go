// Package promsink keeps a replay's live measurements as Prometheus
// metrics and serves them over HTTP: statements by outcome, errors by
// SQLSTATE, latency and schedule-lag histograms, open sessions and the
// reader's position in log time. A Sink is a replay.SampleSink; the replay
// engine knows only that interface, and the CLI wires a Sink in when asked.
//
// The sink does no I/O on the replay's hot path: the engine's calls only
// update counters, and the HTTP server reads them when scraped. By default
// it listens on loopback only, since metrics name queries (fingerprints
// are not in the labels, but errors and timings of a production workload
// are). It never stops a replay: a server that fails after it started is
// ignored.
package promsink
