// Package event defines the events that the log reader produces and every
// later stage (analysis, replay, findings) consumes: the contract between
// reading PostgreSQL logs and doing something with the traffic in them.
//
// Source, Named and Recycler are how events are handed over: every
// producer implements them and every consumer reads through them; they
// are defined here, once.
//
// An Event is plain data. This package does no I/O and depends on nothing
// else in pgrehearse, so that readers and consumers can be tested apart.
package event
