package rehearse

import (
	"context"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// JudgeOptions are how a rehearsal's rounds are judged (Judge): the
// comparison's floors and rules, what beyond the comparison (the plans,
// the findings) and what is tried after it (fixes, batched INSERTs). A
// command fills them from its flags; what a rehearsal decides for
// itself (which database the findings' catalog reads, which fixes can be
// tried) is Judge's.
type JudgeOptions struct {
	// MinCalls, MinEffectMS and Rules are the comparison's
	// (judge.Options).
	MinCalls    int64
	MinEffectMS float64
	Rules       judge.PairRules
	// ExpectWork says every round was observed (server work per call):
	// a round without it is said to leave server work uncompared.
	ExpectWork bool
	// JudgeLevel is the level the means are judged on
	// (judge.Options.JudgeLevel).
	JudgeLevel judge.MeanLevel
	// Width is the widest interval of a regression's mean, its high
	// over its low, before MoreRuns asks for more rounds; 0 or 1: none
	// asked for width.
	Width float64
	// Database is the workload's database on the targets, as the first
	// round's pre-flight found it: where the plans are explained, the
	// findings read the candidate's catalog and the fixes are applied.
	Database string
	// Plans, when set, explains the regressed queries and the top by
	// time added on both targets (the Config's); nil leaves them out.
	Plans *PlansOptions
	// Findings names the workload's traps as the candidate's first
	// round ran it, with the catalog of FindingsDSN, else of the
	// candidate target in Database (its last round's copy when kept).
	Findings    bool
	FindingsDSN string
	// Examples, when set, gives the plans and the findings a real
	// execution of the statements whose normalized text cannot be
	// explained (judge.Options.Examples).
	Examples func(fingerprints []string) func(fingerprint string) *results.Sample
	// Fixes tries the fix of each cause the plans named (fixes.Choose),
	// and FixFindings the index each missing-index finding suggests
	// too, MaxFixes of them at most (0: all), each in FixRounds rounds.
	Fixes       bool
	FixFindings bool
	MaxFixes    int
	FixRounds   int
	// Tries are the user's own fixes (fixes.ParseTry), tried whatever
	// the plans found, in the workload's database.
	Tries []fixes.Fix
	// BatchInserts, from 2, replays onto the candidate in FixRounds
	// rounds of its own with INSERTs batched by up to that many rows
	// (fixes.Batch), judged per row (judge.BatchInserts).
	BatchInserts int
	// OnVerdict is called as each part of the verdict is known
	// (judge.Options.OnStage); OnStage as each part of the judgement
	// is. An error either returns stops the judging with that error.
	OnVerdict func(judge.Stage, *judge.Verdict) error
	OnStage   func(Stage, *Judgement) error
}

// PlansOptions are how the plans are explained on both targets.
type PlansOptions struct {
	// Top is how many queries by time added are explained besides the
	// regressed and diverged ones (judge.PlansOptions.Top).
	Top int
	// Analyze allows EXPLAIN ANALYZE of plain SELECTs with known values.
	Analyze bool
}

// Stage is a part of a rehearsal's judgement, reported to
// JudgeOptions.OnStage as soon as it is known.
type Stage int

const (
	// StageJudged: Judgement.Verdict is set (the comparison, the plans
	// and the findings); reported also when the plans then failed,
	// whenever the comparison was made.
	StageJudged Stage = iota + 1
	// StageFixesUnresettable: Judgement.Triable fixes are not tried:
	// the candidate is not reset (Config.KeepResets unset), so a fix
	// would stay on it.
	StageFixesUnresettable
	// StageFixing: Judgement.Triable fixes are about to be tried, in
	// JudgeOptions.FixRounds rounds each.
	StageFixing
	// StageFixed: Judgement.Fixes, FixesErr and FixesJudgeErr are set.
	StageFixed
	// StageBatching: the batched INSERTs' rounds are about to run.
	StageBatching
	// StageBatched: Verdict.Batched, or BatchErr, is set.
	StageBatched
)

// Judgement is a rehearsal judged: its rounds, the verdict on them and
// what was tried after it.
type Judgement struct {
	Outcome *Outcome
	// Control and Candidate are the runs judged, each side's finished
	// rounds in order.
	Control, Candidate []judge.Run
	// Verdict is nil when a side finished no round (nothing to
	// compare), or when the comparison could not be made (Judge's
	// error).
	Verdict *judge.Verdict
	// Triable is the number of fixes chosen that can be tried (their
	// SQL known).
	Triable int
	// Fixes are the verdicts of the fixes tried, nil when none was.
	Fixes []fixes.Outcome
	// FixesErr is why the fix rounds stopped, FixesJudgeErr why their
	// verdicts could not all be made: the rehearsal's verdict stands.
	FixesErr, FixesJudgeErr error
	// BatchErr is why the batched INSERTs were not measured: their
	// rounds stopped, or their judging failed (said as which).
	BatchErr error
}

// NoComparison says that a side finished no round: there is nothing to
// compare.
func (j *Judgement) NoComparison() bool {
	return len(j.Outcome.Control) == 0 || len(j.Outcome.Candidate) == 0
}

// Options are the judge's options for the rehearsal's comparison: one
// comparison across all the rounds finished (judge.Judge), its Look-th
// look of out.MaxLooks. A rehearsal that stopped before its last round,
// or whose candidate was throttled by the replay's own waits
// (Outcome.Unjudgeable), is compared all the same, never as a pass.
func (o JudgeOptions) Options(out *Outcome) judge.Options {
	why := out.Unjudgeable()
	return judge.Options{MinCalls: o.MinCalls, MinEffectMS: o.MinEffectMS, Rules: o.Rules, AllowIncomplete: len(why) > 0,
		ExpectWork: o.ExpectWork, Unjudgeable: why, Look: max(out.Looks, 1), Looks: out.MaxLooks, JudgeLevel: o.JudgeLevel}
}

// MoreRuns says what more rounds could tell at out's look-th look
// (judge.MoreRuns, regressions' means wider than o.Width): what
// Config.Decide asks.
func (o JudgeOptions) MoreRuns(out *Outcome, look int) judge.More {
	opts := judge.Options{MinCalls: o.MinCalls, MinEffectMS: o.MinEffectMS, Rules: o.Rules,
		ExpectWork: o.ExpectWork, Look: look, Looks: out.MaxLooks, JudgeLevel: o.JudgeLevel}
	return judge.MoreRuns(judge.NewRuns(out.Control), judge.NewRuns(out.Candidate), opts, o.Width)
}

// NeedOf is why more is a reason to add rounds.
func NeedOf(more judge.More) Need {
	switch {
	case more.Undecided:
		return NeedDecision
	case len(more.Wide) > 0:
		return NeedWidth
	}
	return NeedNone
}

// Judge judges the rounds of out, which cfg ran: the comparison of the
// candidate's rounds with the control's, the plans and the findings
// (judge.Judge), then, when every round finished, the fixes of the
// causes the plans named and the user's own tried in fix rounds
// (RunFixes, JudgeFixes), and the batched INSERTs' rounds. A comparison
// that cannot be made returns its error (judge.ErrIncomplete, Ctrl-C
// while explaining) with the judgement so far; fix and batch rounds
// that fail are said in the judgement and leave the verdict as it is. A
// side without a finished round is no error: Judgement.NoComparison.
func Judge(ctx context.Context, cfg Config, out *Outcome, opts JudgeOptions) (*Judgement, error) {
	j := &Judgement{Outcome: out}
	if j.NoComparison() {
		return j, nil
	}
	jo := opts.Options(out)
	if opts.Plans != nil && !out.Interrupted && (cfg.Control.DSN != "" || cfg.Candidate.DSN != "") {
		jo.Plans = &judge.PlansOptions{ControlDSN: cfg.Control.DSN, CandidateDSN: cfg.Candidate.DSN, Top: opts.Plans.Top, Analyze: opts.Plans.Analyze,
			Database: opts.Database, ControlDatabases: out.KeptDatabases(Control), CandidateDatabases: out.KeptDatabases(Candidate)}
	}
	jo.Examples = opts.Examples
	if opts.Findings {
		jo.Findings = &judge.FindingsOptions{Catalog: findingsCatalog(cfg, out, opts)}
	}
	jo.OnStage = opts.OnVerdict
	j.Control, j.Candidate = judge.NewRuns(out.Control), judge.NewRuns(out.Candidate)
	v, err := judge.Judge(ctx, j.Control, j.Candidate, jo)
	if v != nil && v.Comparison != nil {
		j.Verdict = v
		if serr := opts.stage(StageJudged, j); serr != nil {
			return j, serr
		}
	}
	if err != nil {
		return j, err
	}
	if out.Partial || out.Interrupted {
		return j, nil
	}
	if v.Plans != nil && opts.Fixes || len(opts.Tries) > 0 {
		if err := j.tryFixes(ctx, cfg, opts, jo); err != nil {
			return j, err
		}
	}
	if opts.BatchInserts > 1 {
		if err := j.tryBatch(ctx, cfg, opts); err != nil {
			return j, err
		}
	}
	return j, nil
}

// findingsCatalog is where the findings read the candidate's catalog:
// opts.FindingsDSN, else the candidate target in the workload's
// database, its last round's copy when kept (the tables the log creates
// exist only there), with the plans already made.
func findingsCatalog(cfg Config, out *Outcome, opts JudgeOptions) judge.Catalog {
	cat := judge.Catalog{DSN: opts.FindingsDSN}
	if cat.DSN == "" {
		cat.DSN, cat.Database = cfg.Candidate.DSN, opts.Database
		if to, ok := out.KeptDatabases(Candidate)[cat.Database]; ok {
			cat.Database = to
		}
	}
	return cat
}

func (o JudgeOptions) stage(s Stage, j *Judgement) error {
	if o.OnStage == nil {
		return nil
	}
	return o.OnStage(s, j)
}

// tryFixes runs the fix rounds of the causes the plans named (and of the
// findings', with FixFindings) and of the user's tries, and judges them
// against the verdict's comparison as jo compares.
func (j *Judgement) tryFixes(ctx context.Context, cfg Config, opts JudgeOptions, jo judge.Options) error {
	v := j.Verdict
	var planned []fixes.Fix
	if opts.Fixes {
		// The plans' fixes, then the findings' (the index a scan
		// behind a filter lacks) in the workload's database, MaxFixes
		// of them adding the most time tried.
		c := fixes.Choice{Database: opts.Database, Max: opts.MaxFixes}
		if v.Plans != nil {
			c.Plans = v.Plans.Report
		}
		// A reset that restarts the server (datadir) undoes a setting
		// that needs a restart too: it is tried.
		_, c.Restart = cfg.Candidate.Reset.(reset.Restarter)
		if opts.FixFindings {
			c.Findings = v.Findings
		}
		planned = fixes.Choose(v.Comparison, c)
	}
	// The user's own, after the plans': in the workload's database,
	// judged on every regression.
	for _, t := range opts.Tries {
		t.Databases = []string{opts.Database}
		planned = append(planned, fixes.Aim(t, v.Comparison))
	}
	if len(planned) == 0 {
		return nil
	}
	for _, p := range planned {
		if p.Untried == "" {
			j.Triable++
		}
	}
	if j.Triable > 0 && !cfg.KeepResets {
		return opts.stage(StageFixesUnresettable, j)
	}
	if j.Triable > 0 {
		if err := opts.stage(StageFixing, j); err != nil {
			return err
		}
	}
	j.FixesErr = RunFixes(ctx, cfg, j.Outcome, planned, opts.FixRounds, Control)
	j.Fixes, j.FixesJudgeErr = JudgeFixes(j.Outcome, v.Comparison, jo)
	return opts.stage(StageFixed, j)
}

// tryBatch replays the workload onto the candidate in fix rounds of their
// own with the single-row INSERTs batched, in turn with as many
// candidate rounds without, and adds what that saved per row to the
// verdict (judge.BatchInserts).
func (j *Judgement) tryBatch(ctx context.Context, cfg Config, opts JudgeOptions) error {
	if err := opts.stage(StageBatching, j); err != nil {
		return err
	}
	if err := RunFixes(ctx, cfg, j.Outcome, []fixes.Fix{fixes.Batch(opts.BatchInserts)}, opts.FixRounds, Candidate); err != nil {
		j.BatchErr = &BatchError{Rounds: true, Err: err}
		return opts.stage(StageBatched, j)
	}
	fr := j.Outcome.Fixes[len(j.Outcome.Fixes)-1]
	m, err := judge.BatchInserts(fr.BesideResults, fr.Results, 0)
	if err != nil {
		j.BatchErr = &BatchError{Err: err}
		return opts.stage(StageBatched, j)
	}
	j.Verdict.AddBatchMeasure(m)
	return opts.stage(StageBatched, j)
}

// BatchError is why batched INSERTs were not measured: their rounds
// stopped (Rounds), or their judging failed.
type BatchError struct {
	Rounds bool
	Err    error
}

func (e *BatchError) Error() string {
	if e.Rounds {
		return fmt.Sprintf("the batched rounds stopped: %v", e.Err)
	}
	return fmt.Sprintf("judging the batched INSERTs: %v", e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }
