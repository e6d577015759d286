package rehearse

import (
	"fmt"
	"maps"

	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// Unjudgeable are the reasons the rehearsal's rounds cannot be judged
// that the comparison cannot see for itself: a rehearsal that stopped
// before its last round, and a candidate whose sessions waited for each
// other's commits where the application's did not (Throttle.WaitsDominate:
// its latencies are lower bounds, so a broken rule stands and nothing
// passes) (judge.Options.Unjudgeable). None otherwise. A candidate that
// only stretched (its sessions behind the log's pace, each waiting for
// its own previous statement: a slower target) is judged, within its
// schedule's window (results.Window).
func (o *Outcome) Unjudgeable() []judge.Unjudgeable {
	var why []judge.Unjudgeable
	if o.Partial {
		why = append(why, judge.Unjudgeable{
			Kind: judge.UnjudgeablePartial,
			Run: fmt.Sprintf("the rehearsal (%d of %d control and %d of %d candidate rounds finished)",
				len(o.Control), o.Rounds, len(o.Candidate), o.Rounds),
		})
	}
	if t := o.Throttle; t != nil && t.WaitsDominate {
		why = append(why, judge.Unjudgeable{Kind: judge.UnjudgeableThrottled, Run: "the candidate's rounds", Detail: fmt.Sprintf("sync waits %.1f s a round against the control's %.1f s, medians", t.Candidate.SyncWaitMedian, t.Control.SyncWaitMedian)})
	}
	return why
}

// KeptDatabases maps the workload's databases (as the logs and as the
// targets name them) to the copies of side's last round, which hold
// what its replay left; nil when no round of side was kept.
func (o *Outcome) KeptDatabases(side Side) map[string]string {
	round, ok := o.Kept[side]
	if !ok {
		return nil
	}
	dbs := maps.Clone(round.Reset.Databases)
	if dbs == nil {
		dbs = map[string]string{}
	}
	for logged, to := range round.DatabaseMap {
		if _, ok := dbs[logged]; !ok {
			dbs[logged] = to
		}
	}
	return dbs
}

// Compare compares the candidate's finished rounds with the control's,
// as one comparison across all rounds (judge.Compare): each side's
// rounds give its run-to-run spread. A rehearsal that stopped before its
// last round (interrupted, or a round failed) is not a verdict: its
// comparison is refused (judge.ErrIncomplete) saying so, unless
// opts.AllowIncomplete, and then its verdict is never a pass. The
// rounds' own warnings (a state that drifted) are the comparison's.
func Compare(out *Outcome, opts judge.Options) (*judge.Comparison, error) {
	opts.Unjudgeable = append(opts.Unjudgeable, out.Unjudgeable()...)
	return judge.Compare(out.Control, out.Candidate, opts)
}
