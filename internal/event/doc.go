// Package event defines the events that the log reader produces and every
// later stage (analysis, replay, findings) consumes: the contract between
// reading PostgreSQL logs and doing something with the traffic in them.
//
// An Event is plain data. This package does no I/O and depends on nothing
// else in pgrehearse, so that readers and consumers can be tested apart.
package event
