// Package headroom finds how many times a workload's load a target still
// serves within its service level: the largest load factor k at which the
// target's latency and errors stay within an SLO relative to the same
// target at k = 1, measured in the same run.
//
// # The search
//
// A side (a target) is first measured at k = 1 several times (its
// baseline); then at geometric steps (1.5, 2, 3, 4, 6, 8, 12, 16, ...,
// Ladder) until a step breaks the SLO or MaxK is reached; then by
// bisection between the last k that held and the first that broke; then
// the two ends of that bracket are repeated (boundary rounds) until every
// round at the lower end held and every round at the upper end broke.
// A repeated round that disagrees moves the end outward, to the next k
// whose rounds all agree, so that noise widens the interval instead of
// moving it. The answer is that interval, with an estimate inside it where
// the steps' margins to the SLO cross zero (Search, Answer). The bracket,
// its interval and the estimate are package stepcurve's break finder,
// which sweep's cliff uses too; each side's throughput curve over k gets
// its peak and knee from the same package, as a sweep's client counts do.
//
// k is what was achieved, not what was asked: each step's statements per
// second over its baseline's. A step can fall short of what was asked for
// two reasons that are not the target's: the replayer's own CPU is
// saturated (a faster replay needs shards), or the sessions' own round
// trips bound them (a session is a closed loop; at k times its pace its
// think time may vanish). Either ends the side's search, and the answer
// says which (judge.Bound); neither is called a break of the target.
//
// The SLO, the measurement of a step and its verdict are package judge's
// (judge.SLO, judge.Measure, judge.NewBaseline, judge.Step): the search
// judges each step as it runs, against its side's rounds at k = 1, the
// way judge.Levels judges a side's load levels all at once.
//
// A model stands beside the measurement: the Universal Scalability Law
// fitted to the steps' throughput (FitUSL), with its predicted peak.
//
// The user's own changes (Config.Tries, headroom --try) are searched
// after: the candidate's (the one target's) search runs again for each,
// the try (a fixes.Fix of any kind that changes the target: SQL, an
// index, a server setting) applied after every reset in the reset's copy
// of the workload's databases, a server setting put back after every
// step, and Outcome.Tries sets the k held with it beside the k without
// it; a try the server refuses is not tried, and the run goes on.
//
// The package runs steps through a function the caller gives (Config.Replay,
// as package rehearse does with rounds): it knows nothing of logs, flags or
// terminals. Each step is a round of package rounds (rounds.Run: reset,
// try, replay, release), and the two targets alternate as a rehearsal's
// do (rounds.Turn). It prints nothing:
// progress goes to a callback, and the Outcome is rendered by package
// report.
package headroom
