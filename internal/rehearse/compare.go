package rehearse

import (
	"fmt"
	"maps"

	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// Unjudgeable are the reasons the rehearsal's rounds cannot be judged
// that the comparison cannot see for itself: a rehearsal that stopped
// before its last round (judge.Options.Unjudgeable). None otherwise.
func (o *Outcome) Unjudgeable() []judge.Unjudgeable {
	if !o.Partial {
		return nil
	}
	return []judge.Unjudgeable{{
		Kind: judge.UnjudgeablePartial,
		Run: fmt.Sprintf("the rehearsal (%d of %d control and %d of %d candidate rounds finished)",
			len(o.Control), o.Rounds, len(o.Candidate), o.Rounds),
	}}
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
