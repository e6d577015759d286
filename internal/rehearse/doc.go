// Package rehearse runs a workload's replay onto two targets in
// alternating rounds and judges them, so that the comparison of a
// candidate with its control is of like with like: replay against
// replay, several times per side, every round from the same starting
// state.
//
// One round per side is not enough: runs differ from each other by more
// than calls within a run do (cache state, checkpoints, autovacuum, the
// neighbours of a shared machine), and only several rounds per side
// measure that noise. The rounds alternate, control then candidate, then
// candidate then control (A B B A A B ...: rounds.Alternate, rounds.Turn),
// so that a drift of the machine over the rehearsal (a cache warming, a
// neighbour starting) falls on both sides alike instead of on whichever
// went last. Each round is one round cycle of package rounds (rounds.Run):
// the target is reset (package reset), because a replay writes; after
// it, what the reset made for the round is released.
//
// The replay of one round is a function the caller gives (ReplayFunc):
// this package knows nothing of logs, replay options or server-side
// timings. Each round's result is written to its own file, atomically, as
// soon as the round ends, with an index of the rounds (rehearsal.json), so
// that an interrupted rehearsal keeps what it finished and an audit can
// read every round. Ctrl-C (the context) stops the round under way; the
// rounds finished are kept and the outcome is marked partial.
//
// Run looks at the rounds as they finish (Config.Decide, which the caller
// builds from JudgeOptions.MoreRuns: judge.MoreRuns) and adds pairs of
// rounds while a query is undecided on a rule or a regression's mean is
// too wide, within Config.MaxRounds and Config.MaxTime. Judge then judges
// the rounds finished: the comparison, the plans and the findings
// (judge.Judge), then the fixes of the causes the plans named and the
// user's own, each replayed in fix rounds on the candidate's reset copy
// (RunFixes) and judged (JudgeFixes, judge.Fix), and the batched INSERTs'
// rounds. CheckTargets asks both targets beforehand what the options
// need of them; Throttling says what the replays did to the load. It
// names no command-line flag and prints nothing; progress goes to a
// callback, each judged part to JudgeOptions.OnStage.
package rehearse
