// Package cli holds pgrehearse's commands: it parses flags and calls into
// the packages that do the work. Commands get their standard streams
// through IO, so tests run the whole command line in memory.
package cli
