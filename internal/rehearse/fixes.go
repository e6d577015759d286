package rehearse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// FixRun is a fix tried in fix rounds, as the index records it.
type FixRun struct {
	fixes.Fix
	// NotApplied is the server's error when the fix's SQL failed on the
	// reset copy: the fix was not tried.
	NotApplied string `json:"not_applied,omitempty"`
	// Files are its rounds' results, relative to the index's directory.
	Files []string `json:"files,omitempty"`
	// Results are its finished rounds' results.
	Results []*results.Result `json:"-"`
	// BesideSide is the side of the rounds run beside the fix rounds, in
	// turn with them (the control for a fix, the candidate for batched
	// INSERTs), and Beside their seqs in the index (Records): what the
	// fix is judged against, rounds that saw the machine as the fix
	// rounds did. BesideResults are their results.
	BesideSide    Side              `json:"beside_side,omitempty"`
	Beside        []int             `json:"beside_rounds,omitempty"`
	BesideResults []*results.Result `json:"-"`
}

// fixCycle is the order of the fix rounds' period: in each of perFix
// cycles a round of the side beside the fixes (the control) and one
// round of each fix, the beside round first in the odd cycles and last
// in the even, the fixes in reverse there (B F1 F2, F2 F1 B, B F1 F2
// ...), so that each fix runs as near the beside rounds as the others on
// the whole, as the rehearsal's own A B B A order balances drift. The
// beside rounds are shared by all the fixes of the period: they cost
// perFix rounds whatever the number of fixes (2 by default).
func fixCycle(cycle int, active []int) []int {
	steps := make([]int, 0, len(active)+1)
	if cycle%2 == 1 {
		steps = append(append(steps, besideStep), active...)
		return steps
	}
	for i := len(active) - 1; i >= 0; i-- {
		steps = append(steps, active[i])
	}
	return append(steps, besideStep)
}

// besideStep is the beside round among fixCycle's steps, which are
// otherwise the indexes of the fixes.
const besideStep = -1

// RunFixes runs perFix fix rounds (0: fixes.DefaultRounds) of each fix on
// the candidate after Run, which must have left the resets prepared
// (Config.KeepResets), in turn with perFix rounds of side beside (the
// control, whose rounds the fixes are judged against; the candidate for
// batched INSERTs, judged against the candidate without them), in the
// order of fixCycle: a burst of other work on the machine then falls on
// the beside rounds too, not on the fix rounds alone. Each round starts
// from the reset state; a fix round applies the fix's SQL to the copies
// of its databases and replays the whole traffic, so that what the fix
// costs elsewhere is measured too. A fix whose SQL the server refuses is
// recorded as not applied and has no more rounds; a reset or a replay
// that fails stops the fix rounds with an error. The rounds' results go
// to out.Fixes (each fix with the beside rounds of its period), their
// records to out.Records (with Fix or Beside set), and never into the
// comparison's inputs. An interruption keeps the rounds finished.
func RunFixes(ctx context.Context, cfg Config, out *Outcome, planned []fixes.Fix, perFix int, beside Side) (err error) {
	if len(planned) == 0 {
		return nil
	}
	if out.open == nil {
		return errors.New("rehearse: the resets were closed: fix rounds need Config.KeepResets")
	}
	if cfg.Candidate.Reset.Mode() == reset.ModeNone {
		// Nothing would undo the fix: it would stay on the candidate.
		return errors.New("rehearse: fix rounds need a reset that undoes the fix (not --reset none)")
	}
	if beside != Control && beside != Candidate {
		return fmt.Errorf("rehearse: fix rounds beside %q: want the control or the candidate", beside)
	}
	if perFix <= 0 {
		perFix = fixes.DefaultRounds
	}
	r := &run{cfg: cfg, out: out, begun: time.Now()}
	r.cleanupCtx = func() (context.Context, context.CancelFunc) {
		return rounds.CleanupContext(ctx, cfg.CleanupTimeout)
	}
	// All the fixes are listed at once, in planned's order; those tried
	// are active until the server refuses one.
	base := len(out.Fixes)
	var active []int
	for i, f := range planned {
		out.Fixes = append(out.Fixes, FixRun{Fix: f})
		if f.Untried == "" {
			out.Fixes[base+i].BesideSide = beside
			active = append(active, base+i)
		}
	}
	if len(active) == 0 {
		return r.writeIndex()
	}
	// N goes on from the rounds' of each side, so that a template
	// reset's copies never take the name of a kept round's.
	n := map[Side]int{}
	for _, rec := range out.Records {
		n[rec.Side] = max(n[rec.Side], rec.N)
	}
	targets := map[Side]Target{Control: cfg.Control, Candidate: cfg.Candidate}
	seq := len(out.Records)
	cycle := 0
	var steps []int
	// of is the number of rounds in all: those run, those of this
	// cycle left, and the cycles after it.
	of := func() int {
		if len(active) == 0 {
			return seq + len(steps)
		}
		return seq + len(steps) + (perFix-cycle)*(len(active)+1)
	}
	r.onBeside = func(round Round, res *results.Result) {
		for _, i := range active {
			fr := &out.Fixes[i]
			fr.Beside = append(fr.Beside, round.Seq)
			fr.BesideResults = append(fr.BesideResults, res)
		}
	}
	defer func() {
		// The index says how the last round ended, interrupted too.
		out.EndedAt = time.Now()
		err = errors.Join(err, r.writeIndex())
	}()
	turn := func() (func(context.Context) (bool, error), bool) {
		for len(steps) == 0 || steps[0] == besideStep && len(active) == 0 {
			if len(steps) > 0 {
				// No fix left to run beside.
				steps = steps[1:]
				continue
			}
			if cycle == perFix || len(active) == 0 {
				return nil, false
			}
			cycle++
			steps = fixCycle(cycle, active)
		}
		step := steps[0]
		steps = steps[1:]
		return func(ctx context.Context) (bool, error) {
			seq++
			if step == besideStep {
				n[beside]++
				round := Round{Seq: seq, Of: of(), Side: beside, N: n[beside], Beside: true}
				return r.besideRound(ctx, round, targets[beside])
			}
			fr := &out.Fixes[step]
			n[Candidate]++
			round := Round{Seq: seq, Of: of(), Side: Candidate, N: n[Candidate], Fix: fr.Name, BatchInserts: fr.BatchRows}
			applied, err := r.fixRound(ctx, round, cfg.Candidate, fr)
			if err != nil {
				return true, fmt.Errorf("fix %s: %w", fr.Name, err)
			}
			if !applied {
				active = slices.DeleteFunc(active, func(i int) bool { return i == step })
			}
			// The index lists the fix's rounds as they finish.
			if err := r.writeIndex(); err != nil {
				return true, err
			}
			return false, nil
		}, true
	}
	if before, err := rounds.Sequence(ctx, turn); before > 0 {
		return ctx.Err()
	} else if err != nil {
		return err
	}
	return nil
}

// besideRound is a round run beside the fix rounds: the rehearsal's
// round, whose interruption or failure is the fix rounds' error, not the
// rehearsal's (out.Interrupted and out.Stopped say what stopped the
// comparison's rounds, and the fixes never change its verdict).
func (r *run) besideRound(ctx context.Context, round Round, target Target) (stop bool, err error) {
	interrupted, stopped := r.out.Interrupted, r.out.Stopped
	stop, err = r.round(ctx, round, target)
	why := r.out.Stopped
	r.out.Interrupted, r.out.Stopped = interrupted, stopped
	if stop && err == nil {
		err = errors.New(cmp.Or(why, "the round beside the fix rounds stopped"))
	}
	return stop, err
}

// fixRound is one fix round (rounds.Run): reset, the fix applied,
// replay, the fix undone, release. applied is false when the server
// refused the fix (fr.NotApplied).
func (r *run) fixRound(ctx context.Context, round Round, target Target, fr *FixRun) (applied bool, err error) {
	rec := RoundRecord{Seq: round.Seq, Side: round.Side, N: round.N, Fix: fr.Name, StartedAt: time.Now()}
	fix := fr.Fix
	end := rounds.Run(ctx, rounds.Cycle{
		Reset: target.Reset, N: round.N, CleanupTimeout: r.cfg.CleanupTimeout, DSN: target.DSN,
		DatabaseMap: r.cfg.DatabaseMap, Logs: target.Logs, Change: &fix,
		Phase: func(p rounds.Phase, at rounds.Place) { r.progress(round.at(at), p) },
		Replay: func(ctx context.Context, at rounds.Place) (*results.Result, error) {
			return r.cfg.Replay(ctx, r.cfg.catalogOf(round.at(at)), target)
		},
	})
	rec.Reset = end.Place.Reset
	rec.ReleaseSeconds = end.ReleaseSeconds
	r.out.ReleaseSeconds += rec.ReleaseSeconds
	if end.Stage != rounds.StageReset {
		r.out.ResetSeconds += end.Place.Reset.Seconds
	}
	relErr := end.ReleaseErr
	rec.EndedAt = time.Now()
	status, why := end.Status()
	if !end.Replayed() {
		if status == StatusFailed && end.Stage == rounds.StageChange {
			// The server refused the fix: its rounds end here, the
			// other fixes go on.
			fr.NotApplied = end.Err.Error()
			rec.Status, rec.Error = status, "the fix was not applied: "+fr.NotApplied
			r.add(rec)
			return false, relErr
		}
		return false, r.failedFix(rec, status, errors.Join(end.Err, relErr))
	}
	res := end.Result
	rec.ReplaySeconds = end.ReplaySeconds
	r.out.ReplaySeconds += rec.ReplaySeconds
	if status != StatusDone {
		if why == nil {
			// Interrupted, its result partial.
			why = fmt.Errorf("interrupted during round %d; its partial result does not count", round.Seq)
		}
		return false, r.failedFix(rec, status, errors.Join(why, relErr))
	}
	unmapDatabases(res, end.Place.Reset.Databases)
	name := fmt.Sprintf("round-%02d-candidate-fix-%s.json", round.Seq, fr.Name)
	res.Source = fmt.Sprintf("candidate with fix %s, round %d", fr.Name, len(fr.Results)+1)
	if r.cfg.Dir != "" {
		path := filepath.Join(r.cfg.Dir, name)
		if err := writeResult(path, res); err != nil {
			return false, r.failedFix(rec, StatusFailed, errors.Join(err, relErr))
		}
		rec.File, res.Source = name, path
		fr.Files = append(fr.Files, name)
	}
	rec.Status = StatusDone
	if relErr != nil {
		rec.Error = relErr.Error()
	}
	r.add(rec)
	fr.Results = append(fr.Results, res)
	r.roundTimes.Add(rec.EndedAt.Sub(rec.StartedAt))
	r.progress(round.at(end.Place), rounds.PhaseDone)
	return true, relErr
}

// failedFix records a fix round that did not end done (status), with
// err, the fix round's error: the fix's rounds stop there.
func (r *run) failedFix(rec RoundRecord, status Status, err error) error {
	rec.Status, rec.Error = status, err.Error()
	r.add(rec)
	return err
}

// JudgeFixes judges each fix of out.Fixes with the comparison's options
// (judge.Fix): its rounds against the control's run beside them
// (FixRun.Beside, rounds that saw the machine as the fix rounds did; the
// rehearsal's own control rounds for a fix run before rounds were run
// beside, whose index names none), against the regressions the
// rehearsal found (before), and against the candidate's rounds (what it
// changed, for the regressions and the writes of its relation).
func JudgeFixes(out *Outcome, before *judge.Comparison, opts judge.Options) ([]fixes.Outcome, error) {
	var all []fixes.Outcome
	for _, fr := range out.Fixes {
		if fr.Kind == fixes.BatchInserts {
			// Judged per inserted row (judge.BatchInserts): its
			// statements are not the candidate's.
			continue
		}
		if fr.NotApplied != "" || len(fr.Results) == 0 {
			all = append(all, fixes.Outcome{Fix: fr.Fix, Status: fixes.NotTried, NotApplied: fr.NotApplied, Queries: []fixes.Query{}, Costs: []fixes.Cost{}, Writes: []fixes.Write{}})
			continue
		}
		control, rounds := fr.BesideResults, fr.Beside
		if fr.BesideSide != Control || len(control) == 0 {
			control, rounds = out.Control, controlRounds(out)
		}
		o, err := judge.Fix(fr.Fix, before, judge.FixRounds{Control: control, Candidate: out.Candidate, With: fr.Results}, opts)
		if err != nil {
			return all, err
		}
		o.Rounds = len(fr.Results)
		o.ControlRounds = slices.Clone(rounds)
		all = append(all, o)
	}
	return all, nil
}

// controlRounds are the seqs of the rehearsal's own control rounds
// finished: the comparison's.
func controlRounds(out *Outcome) []int {
	var seqs []int
	for _, rec := range out.Records {
		if rec.Side == Control && rec.Status == StatusDone && rec.Fix == "" && !rec.Beside {
			seqs = append(seqs, rec.Seq)
		}
	}
	return seqs
}
