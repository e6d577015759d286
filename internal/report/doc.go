// Package report is pgrehearse's reporting layer: it turns what the domain
// packages computed into what a person reads. It writes the terminal
// summaries (an analysis, a replay, a comparison, findings, server-side
// evidence, a sweep) and builds every section of the HTML pages, laid out
// with package htmlreport's primitives (Page, Section, Table, Card,
// charts).
//
// It sits above the domain packages: analyze, replay, compare, findings,
// observe and sweep return data and typed verdicts and import no
// rendering package; this package imports them, and only the CLI,
// package report/rehearsal and the tools under bench import this one. How a figure looks (a unit, a rounding, a colour, a column)
// is decided here and nowhere below.
//
// It names no command-line flag. Where a text tells the reader how to get
// what a result lacks (histograms, server-side durations, a connection for
// the findings), the caller passes the words in Hints, and a hint left
// empty leaves its advice out.
//
// It writes to an io.Writer or returns an htmlreport.Page; it decides
// nothing about files or standard streams, computes no figure that a
// domain package should own, and never changes the data it is given.
package report
