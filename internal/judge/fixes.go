package judge

import (
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// FixRounds are the rounds a fix was tried in and those it is judged
// against.
type FixRounds struct {
	// Control are the control's rounds the fix is judged against:
	// those run beside its rounds, which saw the machine as they did.
	Control []*results.Result
	// Candidate are the candidate's rounds without the fix, With the
	// fix's own.
	Candidate, With []*results.Result
}

// Fix judges fix, tried in rounds of its own, by the comparison's own
// rules: its rounds against the control's (with), against the
// candidate's without it (delta: what it changed), each compared as
// opts say, and against the regressions the rehearsal's comparison
// found (before), as fixVerdict reads them. A fix's verdicts have no
// "not judged" yet: a lagging fix round leaves its latency judged as
// before, rather than have a regression no longer called read as a fix
// verified (issue 44, not done).
func Fix(fix fixes.Fix, before *compare.Report, rounds FixRounds, opts Options) (fixes.Outcome, error) {
	co := opts.Comparison()
	co.JudgeLaggedLatency = true
	with, err := compare.Runs(rounds.Control, rounds.With, co)
	if err != nil {
		return fixes.Outcome{}, fmt.Errorf("fix %s against the control: %w", fix.Name, err)
	}
	delta, err := compare.Runs(rounds.Candidate, rounds.With, co)
	if err != nil {
		return fixes.Outcome{}, fmt.Errorf("fix %s against the candidate: %w", fix.Name, err)
	}
	return fixVerdict(fix, before, with, delta), nil
}
