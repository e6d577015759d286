// Package targetlog gets a replay's server-side durations from the
// target's own server log: it notes how large the log files are before the
// replay, and afterwards sends one marker statement to the target, waits
// until the log shows it (the logging collector writes asynchronously, and
// a backend logs a statement before it answers, so the marker comes after
// every statement of the replay), reads what was written since the replay
// began, and matches the log's statements to the replay's connections
// (package replay/connlog: what the replay sent on each), putting their
// server-side durations in the result.
//
// It sits beside package replay because replay consumes events and must
// not know log formats; this package opens the files with logread. It
// does not import replay: the two meet in connlog. Any driver of a replay
// (package replayrun, a sweep's log driver) uses it instead of repeating
// the protocol.
//
// It reads the target's log and sends the target one SELECT; it changes
// nothing. It names no command-line flag: an Error says which file failed,
// and the caller says which option named it.
package targetlog
