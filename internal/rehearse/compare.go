package rehearse

import (
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// CompareOptions are opts for the comparison of the candidate's finished
// rounds with the control's, as one comparison across all rounds
// (compare.Runs): each side's rounds give its run-to-run spread. A
// rehearsal that stopped before its last round (interrupted, or a round
// failed) is not a verdict: its comparison is refused with a
// *compare.IncompleteError saying so, unless opts.AllowIncomplete, and
// then its verdict is never a pass.
func (o *Outcome) CompareOptions(opts compare.Options) compare.Options {
	if o.Partial {
		opts.Unjudgeable = append(opts.Unjudgeable, compare.Unjudgeable{
			Kind: compare.UnjudgeablePartial,
			Run: fmt.Sprintf("the rehearsal (%d of %d control and %d of %d candidate rounds finished)",
				len(o.Control), o.Rounds, len(o.Candidate), o.Rounds),
		})
	}
	return opts
}

// Compare compares the candidate's finished rounds with the control's
// with o.CompareOptions(opts). The rounds' own warnings (a state that
// drifted) are the comparison's.
func Compare(out *Outcome, opts compare.Options) (*compare.Report, error) {
	return compare.Runs(out.Control, out.Candidate, out.CompareOptions(opts))
}
