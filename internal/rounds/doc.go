// Package rounds owns what every command that replays a workload several
// times does around each replay: the round runner between the commands
// (rehearse, headroom) and the replay (package replayrun).
//
// A round is run whole by Run, the one round cycle: it resets its target
// (package reset), applies a change to what the reset made when it has
// one (a fixes.Fix of any kind, ApplyChange: a rehearsal's fix rounds,
// a headroom search's tries; a server setting through package reset,
// which owns the target's server: reset.SetServer), expands the target's server logs
// (targetlog.Expand: a pattern that matches no file is an error), replays,
// puts a server setting back, releases what the reset made for it, and
// hands the result to the command (Cycle.Done: name it, write its file). The release runs also after Ctrl-C, each under
// its own cleanup timeout counted from when it starts, because copies
// left behind would fill the target's disk. A round the user interrupted
// is dropped: its partial result does not count; the rounds finished
// before it are kept, and Sequence never starts another once the context
// is cancelled.
//
// The sides alternate, A B then B A (A B B A A B ...), so that a drift of
// the machine over the command (a cache warming, a neighbour starting)
// falls on both sides alike instead of on whichever went last. The time
// left is estimated from the rounds measured so far (Times).
//
// The package knows nothing of what a round replays or how its result is
// judged and recorded: the replay is a function the command gives, and
// each command keeps its own records, words and files from what Run says
// a round did (Ended), with the status Ended.Status gives it: how a
// round's end maps to done, interrupted or failed is said here once. It names no command-line flag and
// prints nothing.
package rounds
