package explain

import (
	"github.com/pgrehearse/pgrehearse/internal/plan"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Side is one of the two servers compared.
type Side string

// The sides.
const (
	Control   Side = "control"
	Candidate Side = "candidate"
)

// Mode is how a plan was obtained.
type Mode string

// Modes.
const (
	// ModeCustom: EXPLAIN EXECUTE with logged parameter values: the
	// custom plan the server makes for them.
	ModeCustom Mode = "custom"
	// ModeGeneric: the generic plan, for a statement whose values are
	// unknown.
	ModeGeneric Mode = "generic"
	// ModeLiteral: the statement as logged, without parameters.
	ModeLiteral Mode = "literal"
	// ModeLogged: the plan the server wrote to its log (auto_explain)
	// when it ran the statement.
	ModeLogged Mode = "logged"
)

// SampleRole says which execution a sample is (results.SampleRole).
type SampleRole = results.SampleRole

// Sample roles.
const (
	SampleSlowest = results.SampleSlowest
	SampleMedian  = results.SampleMedian
	SampleExample = results.SampleExample
)

// Sample is one logged execution of a statement, with its values
// (results.Sample).
type Sample = results.Sample

// Statement is what to explain: one fingerprint of the workload.
type Statement struct {
	Fingerprint string
	// Database is the database it ran in; empty means the first
	// sample's, else the connection's.
	Database string
	// Query is its normalized text, constants replaced by $n.
	Query string
	// Samples are representative executions with their values, when
	// the caller kept them; without, the plans are generic.
	Samples []Sample
	// Logged is the control's own plan from its log (auto_explain),
	// used when there is no connection to the control.
	Logged *plan.Plan
	// MoreWork is the server work per call the comparison found the
	// candidate does more of: the settings that change that work
	// (data checksums and WAL-logged hint bits for WAL, shared_buffers
	// for blocks dirtied) are then named as its causes, with or without
	// a plan change. EXPLAIN cannot tell: its runs come after the
	// replay's, when the hint bits are set.
	MoreWork []Work
}

// Work is a kind of server work per call that the comparison judges
// (pg_stat_statements' counters).
type Work string

// Kinds of work.
const (
	// WorkWAL: WAL bytes per call.
	WorkWAL Work = "wal"
	// WorkDirtied: shared blocks dirtied per call.
	WorkDirtied Work = "dirtied"
)

// Verdict says whether a statement's plan changed.
type Verdict string

// Verdicts.
const (
	// PlanChanged: the candidate's plan has another shape.
	PlanChanged Verdict = "plan_changed"
	// SamePlan: both servers make the same plan.
	SamePlan Verdict = "same_plan"
	// NotCompared: a side could not be explained (see Problems).
	NotCompared Verdict = "not_compared"
)

// ProblemKind says why a statement could not be explained on a side.
type ProblemKind string

// Problem kinds.
const (
	// ProblemNoConnection: no connection to that side, and no plan
	// from its log.
	ProblemNoConnection ProblemKind = "no_connection"
	// ProblemUtility: DDL or another utility statement, which EXPLAIN
	// cannot plan.
	ProblemUtility ProblemKind = "utility"
	// ProblemSeveral: several statements in one query string.
	ProblemSeveral ProblemKind = "several_statements"
	// ProblemUnparsable: the text does not parse.
	ProblemUnparsable ProblemKind = "unparsable"
	// ProblemRelationMissing: a relation it reads does not exist there:
	// a temporary table of a session that is gone, or a schema that
	// differs.
	ProblemRelationMissing ProblemKind = "relation_missing"
	// ProblemNoParams: its parameter values are unknown and the
	// server cannot make a generic plan (a parameter's type cannot be
	// inferred).
	ProblemNoParams ProblemKind = "no_parameters"
	// ProblemNoSample: no execution of it is known (no sample kept, no
	// example in the logs) and the server refuses its normalized text
	// ("interval $3", a parameter whose type cannot be inferred): it
	// cannot be planned as it ran. Both sides carry the same one.
	ProblemNoSample ProblemKind = "no_sample"
	// ProblemTimeout: EXPLAIN hit statement_timeout or lock_timeout.
	ProblemTimeout ProblemKind = "timeout"
	// ProblemConnect: the connection to the server failed.
	ProblemConnect ProblemKind = "connect"
	// ProblemError: another error of the server.
	ProblemError ProblemKind = "error"
)

// Problem is why a statement was not explained on a side.
type Problem struct {
	Side Side        `json:"side"`
	Kind ProblemKind `json:"kind"`
	// Relation is the missing relation of ProblemRelationMissing.
	Relation string `json:"relation,omitempty"`
	// Message is the server's error, its values redacted.
	Message string `json:"message,omitempty"`
}

// AnalyzeSkip says why a plan was not analyzed although ANALYZE was
// allowed.
type AnalyzeSkip string

// Reasons not to analyze.
const (
	SkipNotAllowed  AnalyzeSkip = "not_allowed"    // the caller did not allow EXPLAIN ANALYZE
	SkipNotSelect   AnalyzeSkip = "not_select"     // not a plain SELECT: ANALYZE would execute a write or a lock
	SkipVolatile    AnalyzeSkip = "volatile"       // calls a volatile function that may have side effects
	SkipGeneric     AnalyzeSkip = "generic"        // a generic plan: no values to run it with
	SkipLogged      AnalyzeSkip = "logged"         // the log's plan was not analyzed (log_analyze off)
	SkipFailedRerun AnalyzeSkip = "analyze_failed" // EXPLAIN ANALYZE failed (timeout): the estimate is kept
	SkipExample     AnalyzeSkip = "example"        // an example from the log, whose values the user did not ask to keep: not run
)

// SidePlan is a statement's plan on one side.
type SidePlan struct {
	Mode Mode       `json:"mode"`
	Plan *plan.Plan `json:"plan"`
	// NotAnalyzed says why the plan has no actual figures, when ANALYZE
	// was allowed; VolatileFunction names the function of SkipVolatile.
	NotAnalyzed      AnalyzeSkip `json:"not_analyzed,omitempty"`
	VolatileFunction string      `json:"volatile_function,omitempty"`
}

// Explained is one way a statement was explained on both sides: with one
// sample's values, or generic.
type Explained struct {
	// Sample is the execution whose values were used; empty for a
	// generic or literal plan.
	Sample    SampleRole `json:"sample,omitempty"`
	Control   *SidePlan  `json:"control,omitempty"`
	Candidate *SidePlan  `json:"candidate,omitempty"`
	// Diff aligns the two plans; nil when a side is missing.
	Diff *plan.Diff `json:"diff,omitempty"`
	// Growths are the aligned nodes analyzed on both sides whose work
	// grew, most first (see plan.Growth.Grew).
	Growths []plan.Growth `json:"growths,omitempty"`

	// req is how the candidate was explained, to plan it again.
	req request
}

// Outcome is what explaining one statement found.
type Outcome struct {
	Fingerprint string `json:"fingerprint"`
	Database    string `json:"database,omitempty"`
	// Query is the normalized text.
	Query   string  `json:"query"`
	Verdict Verdict `json:"verdict"`
	// Generic: the plans are generic (no values were known).
	Generic   bool        `json:"generic"`
	Explained []Explained `json:"explained"`
	// Causes are the differences behind the change (or the slowdown of
	// the same plan), strongest first. Empty with a changed plan means
	// nothing found explains it.
	Causes   []Cause   `json:"causes"`
	Problems []Problem `json:"problems,omitempty"`
	// Unchecked are the reads behind the causes that failed on a side
	// (its relations' statistics, a timeout or a lock): the causes they
	// would have found are not in Causes, and "none found" is not said.
	Unchecked []Problem `json:"unchecked,omitempty"`
}

// Main returns the explanation the outcome's verdict rests on: the first
// in which the plan changed, else the first compared.
func (o *Outcome) Main() *Explained {
	for i := range o.Explained {
		if d := o.Explained[i].Diff; d != nil && !d.Same {
			return &o.Explained[i]
		}
	}
	for i := range o.Explained {
		if o.Explained[i].Diff != nil {
			return &o.Explained[i]
		}
	}
	return nil
}

// Redact removes the statements' values from every plan of the report
// (plan.Redact): what a report must do before writing it unless the user
// asked to keep parameter values. Plans shared with the caller (a
// Statement's Logged plan) are redacted too.
func (r *Report) Redact() {
	for i := range r.Outcomes {
		for _, e := range r.Outcomes[i].Explained {
			for _, sp := range []*SidePlan{e.Control, e.Candidate} {
				if sp != nil {
					sp.Plan.Redact()
				}
			}
		}
	}
}
