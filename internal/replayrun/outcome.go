package replayrun

import (
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// Reason is why a replay's result is not a clean measurement of the
// target: a value a caller tests (the replay command maps each to an exit
// code), with the facts in Outcome's fields.
type Reason string

// Reasons, in the order Outcome.Reasons lists them: the first is what
// most stands in the way of the result.
const (
	// ReasonFindingsFailed: the findings could not be evaluated (their
	// server unreachable); the result itself is whole. FindingsErr says
	// why.
	ReasonFindingsFailed Reason = "findings_failed"
	// ReasonStopped: a read error ended the replay early; Err says which.
	ReasonStopped Reason = "stopped"
	// ReasonTargetLog: the target's log gave no server-side durations;
	// TargetLogErr says why. The result keeps the client's round trips.
	ReasonTargetLog Reason = "target_log"
	// ReasonInputCut: a log could not be read whole (Cut); the result
	// covers what was read before.
	ReasonInputCut Reason = "input_cut"
	// ReasonTargetGone: the target stayed away and the replay stopped
	// early; the result says so in Incomplete.
	ReasonTargetGone Reason = "target_gone"
	// ReasonErrorStart: the replay's first statements all failed on the
	// target, none in the original (replay.Options.ErrorWindow), and it
	// stopped early; the result says so in Incomplete.
	ReasonErrorStart Reason = "error_start"
	// ReasonInterrupted: the replay was told to stop (Ctrl-C); the
	// result is partial.
	ReasonInterrupted Reason = "interrupted"
	// ReasonNothingMeasured: the logs yielded nothing to measure
	// (Nothing says why).
	ReasonNothingMeasured Reason = "nothing_measured"
	// ReasonDegraded: recovering from a fault changed the replay's
	// timings (the result's DegradedReasons say how); sessions that
	// could not connect at all are ReasonConnectFailures instead.
	ReasonDegraded Reason = "degraded"
	// ReasonConnectFailures: sessions could not connect to the target
	// (the result's Sessions.ConnectFailures say as whom).
	ReasonConnectFailures Reason = "connect_failures"
	// ReasonErrorRate: the target failed more statements than the
	// original did, beyond MaxErrorRate percentage points, not counting
	// the failures only on the target that are explained
	// (results.Outcomes.GateErrorRate).
	ReasonErrorRate Reason = "error_rate"
	// ReasonDiverged: statements that succeeded in the original failed
	// on the target with errors of ordering (results.OrderingSQLStates):
	// the replay ran dependent sessions in another order, so part of its
	// work differs from the original's. A report says more (divergence).
	ReasonDiverged Reason = "diverged"
	// ReasonIncomplete: the result is marked incomplete (statements lost
	// beyond the allowance; the result's IncompleteReasons say which).
	ReasonIncomplete Reason = "incomplete"
	// ReasonTargetData: answers of statements that read tables no
	// concurrent transaction of the original touched differ, with
	// nothing to explain them, the same rows read differently more than
	// once: the target's data differs from the start (results.Outcomes.
	// AnswerDiffersTargetData, by table; those read differently once
	// are suspect and do not give it). Last: a
	// result that cannot be judged says so first.
	ReasonTargetData Reason = "target_data_differs"
)

// Outcome is what a replay run produced: the result (with the evidence in
// it), the evidence and findings as values, and why the result is not a
// clean measurement (Reasons, empty when it is), with the facts behind
// each reason.
type Outcome struct {
	Result    *results.Result
	Evidence  *observe.Evidence
	Findings  *findings.Report
	Preflight *Preflight

	Reasons []Reason

	// Err ended the replay early (ReasonStopped).
	Err error
	// TargetLogErr is why the target's log gave no server-side
	// durations (ReasonTargetLog).
	TargetLogErr error
	// FindingsErr is why the findings could not be evaluated.
	FindingsErr error
	// Cut says which logs broke off (ReasonInputCut).
	Cut *source.Cut
	// Nothing says why nothing was measured (ReasonNothingMeasured).
	Nothing *source.Nothing
}

// Has reports whether r is among the outcome's reasons.
func (o *Outcome) Has(r Reason) bool { return slices.Contains(o.Reasons, r) }

// First is the first reason, "" for a clean run.
func (o *Outcome) First() Reason {
	if len(o.Reasons) == 0 {
		return ""
	}
	return o.Reasons[0]
}

// reasons lists the outcome's reasons, in the order of the constants.
func (o *Outcome) reasons(maxErrorRate float64) {
	res := o.Result
	add := func(ok bool, r Reason) {
		if ok {
			o.Reasons = append(o.Reasons, r)
		}
	}
	add(o.FindingsErr != nil, ReasonFindingsFailed)
	add(o.Err != nil, ReasonStopped)
	add(o.TargetLogErr != nil, ReasonTargetLog)
	add(o.Cut != nil, ReasonInputCut)
	// Stopped early by a fault (the target gone), not by the user.
	add(res.Partial && res.IncompleteBecause(results.IncompleteTargetGone), ReasonTargetGone)
	add(res.Partial && res.IncompleteBecause(results.IncompleteErrorStart), ReasonErrorStart)
	add(res.Partial && o.Cut == nil && !res.IncompleteBecause(results.IncompleteTargetGone) && !res.IncompleteBecause(results.IncompleteErrorStart), ReasonInterrupted)
	add(o.Nothing != nil, ReasonNothingMeasured)
	add(len(res.Degraded) > 0 && res.Sessions.ConnectFailed == 0, ReasonDegraded)
	if res.Replay != nil {
		add(res.Sessions.ConnectFailed > 0, ReasonConnectFailures)
		out := res.Outcomes
		// Explained failures (baked ids, session state from before
		// the recording) are not the target's: not counted.
		add(out.GateErrorRate()-out.OriginalErrorRate > maxErrorRate, ReasonErrorRate)
		add(diverged(res), ReasonDiverged)
	}
	add(len(res.Incomplete) > 0, ReasonIncomplete)
	add(res.Replay != nil && res.Outcomes.AnswerDiffersTargetData > 0, ReasonTargetData)
}

// diverged reports whether statements that succeeded in the original
// failed on the target with errors of ordering: caused by one (a 25P02
// after an error of another kind, or after a server-assigned id of the
// original, is not), as the result counts them; in a result from before
// it did, any error of ordering the target had.
func diverged(res *results.Result) bool {
	if res.Outcomes.FailedOnlyOnTarget == 0 {
		return false
	}
	if by := res.Outcomes.OnlyOnTargetBySQLState; by != nil {
		for _, code := range results.OrderingSQLStates {
			if by[code] > 0 {
				return true
			}
		}
		return false
	}
	for _, e := range res.Errors {
		if slices.Contains(results.OrderingSQLStates, e.SQLState) {
			return true
		}
	}
	return false
}
