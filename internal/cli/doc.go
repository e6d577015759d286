// Package cli holds pgrehearse's commands: it parses flags, calls into the
// packages that do the work, hands their data to internal/report to be
// rendered, and maps errors to exit codes. It is the only package that
// names a flag: where a domain package's error or a report's advice must
// tell the user what to give, the domain returns typed data (an error
// type, a reason) and this package phrases it in flags (see hints.go).
// Commands get their standard streams through IO, so tests run the whole
// command line in memory. Logs are opened through package source, a replay
// runs through package replayrun, and every file a command writes is
// checked before the work and written atomically (package outfile).
package cli
