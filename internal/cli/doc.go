// Package cli holds pgrehearse's commands: it parses flags, calls into the
// packages that do the work, hands their data to internal/report to be
// rendered, and maps errors to exit codes. No domain package names a
// flag (but internal/demo, whose lines narrate the demo command): where a
// domain package's error must tell the user what to give,
// it returns typed data (an error type, a reason) and this package or
// internal/report phrases it in flags (see hints.go). The commands are
// registered in one list (root.go).
// Commands get their standard streams through IO, so tests run the whole
// command line in memory. Logs are opened through package source, a replay
// runs through package replayrun (the engine's names included: the CLI
// imports neither replay nor syncdep), and every file a command writes is
// checked before the work and written atomically (package outfile).
package cli
