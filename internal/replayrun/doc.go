// Package replayrun is the replay run as a library: everything between the
// options of one replay and its outcome, in order. It opens the logs once
// (package source), looks at their beginning for the pre-flight (the
// target takes every login; the destructive statements the log holds) and
// replays the same events from memory before reading on; it starts the
// observer (package observe), notes the target's log (package
// replay/targetlog), runs the replay (package replay), reads the
// target's server-side durations, names the findings, and returns an
// Outcome whose reasons (nothing measured, input cut, target gone,
// interrupted, connect failures, error rate, diverged, incomplete) are
// values, with the facts behind each.
//
// The replay command and shard workers call Run and render the Outcome;
// a round of a command that replays a workload several times (a
// rehearsal's, a headroom step's: package rounds runs them) calls
// RunRound with Config.Round, which is Run with what of the round's
// outcome stops the command (Outcome.RoundStop); Config.Part says which
// round or shard the result is.
//
// A load level of the workload (Load: K times its load, by speed or by
// fold) is made of the rounds Load.Rounds gives, a fold's slices replayed
// at once by Load.ReplaySlices, and a round split by session over shard
// processes by ShardReplay. engine.go re-exports the names of the engine,
// of its target's log and of the commit order that a command configures
// a replay with, so that commands reach the engine through this package.
//
// It writes nothing and prints nothing: what the user should see on the
// way goes to the Config's callbacks, and its messages name no flag (a
// caller words a reason with Config.Describe, or from the typed facts).
// It does not exit the process.
package replayrun
