package rehearse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// Side is one of the two targets: results' vocabulary, which each
// round's result carries in its Part.
type Side = results.Side

// Sides.
const (
	// Control is the target as production is today.
	Control = results.SideControl
	// Candidate is the target with the change.
	Candidate = results.SideCandidate
)

// DefaultRounds is the number of rounds per side when Config.Rounds is 0:
// the fewest with which the run-to-run spread of each side is measured
// at all, and an A B B A A B order balances drift.
const DefaultRounds = 3

// DefaultCleanupTimeout bounds the releases and the closing of the resets
// after the rehearsal was interrupted or failed: the round runner's.
const DefaultCleanupTimeout = rounds.DefaultCleanupTimeout

// IndexFile is the name of the index of the rounds in Config.Dir.
const IndexFile = "rehearsal.json"

// OutcomeVersion is the version of the index's JSON form.
const OutcomeVersion = 1

// Target is one side's server.
type Target struct {
	// DSN is the target's connection string, handed to the replay.
	DSN string
	// Reset returns the target to its starting state before each round.
	Reset reset.Resetter
	// Logs are the target's own server log files, for server-side
	// timings, as paths or filepath.Glob patterns. They are expanded
	// before each round, after the reset: a server restarted by its
	// reset may have begun a new file.
	Logs []string
}

// Round is one replay of the rehearsal, as the replay function gets it.
type Round struct {
	// Seq is the round's place in the rehearsal, from 1; Of is the
	// number of rounds in all.
	Seq, Of int
	Side    Side
	// N is the side's round, from 1.
	N int
	// DatabaseMap is the database map the replay must use: the user's
	// map (Config.DatabaseMap) followed by the reset's copies, so that
	// each logged database goes to its fresh copy.
	DatabaseMap map[string]string
	// Logs are the target's log files (Target.Logs expanded), for
	// server-side timings.
	Logs []string
	// Reset is what the reset before the round did.
	Reset reset.State
	// BatchInserts, when not 0, is the batch size of a fix round of
	// fixes.BatchInserts: the replay sends the single-row INSERTs in
	// batches of that many rows.
	BatchInserts int
	// Fix names the fix applied before a fix round (RunFixes).
	Fix string
	// Beside: a round run in turn with the fix rounds (RunFixes), which
	// the fixes are judged against; not one of the comparison's.
	Beside bool
	// CatalogFrom is the server whose catalog the replay's sessions are
	// synchronized by, CatalogDatabaseMap its names of the logged
	// databases: the candidate's rounds read the control's (the user's
	// map), so that its sessions wait for the same dependencies as the
	// control's and a change of the candidate's (a trigger) does not
	// change the load its replay gives it; empty for the control's.
	CatalogFrom        string
	CatalogDatabaseMap map[string]string
}

// Name names the round in progress lines: "control 2", "candidate 4
// with fix index-x", "control 3 beside the fix rounds".
func (r Round) Name() string {
	s := fmt.Sprintf("%s %d", r.Side, r.N)
	switch {
	case r.Fix != "":
		s += " with fix " + r.Fix
	case r.Beside:
		s += " beside the fix rounds"
	}
	return s
}

// ReplayFunc replays the workload once onto target for round. When ctx
// is cancelled it must stop and return the result of what ran, marked
// partial, as replay.Replayer.Run does. An error means the round gave no
// usable result.
type ReplayFunc func(ctx context.Context, round Round, target Target) (*results.Result, error)

// Progress is reported at each phase of each round.
type Progress struct {
	Round Round
	Phase rounds.Phase
	// Finished is the number of rounds finished.
	Finished int
	// Elapsed is the time since the rehearsal began.
	Elapsed time.Duration
	// Remaining is the estimated time to the end, from the rounds
	// finished (or Config.RoundEstimate before the first); valid only
	// when RemainingKnown.
	Remaining      time.Duration
	RemainingKnown bool
}

// Config is a rehearsal.
type Config struct {
	Control, Candidate Target
	// Rounds per side; 0 means DefaultRounds.
	Rounds int
	// DatabaseMap is the user's map from logged databases to the
	// targets'; each round's reset copies are mapped after it.
	DatabaseMap map[string]string
	Replay      ReplayFunc
	// Dir receives each round's result and the index; empty means
	// nothing is written. It must not hold another rehearsal's rounds
	// unless Overwrite is set.
	Dir       string
	Overwrite bool
	// Progress, if not nil, is called at each phase of each round, on
	// the goroutine of Run.
	Progress func(Progress)
	// RoundEstimate is how long one round is expected to take (the
	// log's span over the speed), for the estimate before a round has
	// finished; zero means unknown until then.
	RoundEstimate time.Duration
	// CleanupTimeout bounds the releases and closes after an
	// interruption or an error; zero means DefaultCleanupTimeout.
	CleanupTimeout time.Duration
	// KeepLast leaves what the reset made for each side's last round
	// (a template reset's copies) in place when that round finished,
	// so that plans and catalogs are read on the state its replay left
	// (tables the workload creates exist only there): Outcome.Kept
	// lists them, and the caller releases them (Outcome.ReleaseKept),
	// whatever Run returned.
	KeepLast bool
	// KeepResets leaves both resets prepared when every round finished
	// (no error, no interruption), so that fix rounds (RunFixes) start
	// from the same starting state as the rounds: the caller then closes
	// them (Outcome.CloseResets), whatever happened. A reset prepared
	// again later would record the state the rounds left (a data
	// directory reset copies the directory as it is).
	KeepResets bool
	// Decide, when not nil, is asked after the rounds asked (look 1)
	// and after each pair of rounds added (look 2, 3 ...) whether the
	// finished rounds leave a query undecided on a rule, or a
	// regression's mean too wide (judge.MoreRuns): while it asks for
	// more, a pair of rounds is added, one a side in the alternating
	// order (rounds.Turn), within MaxRounds and MaxTime. Outcome.Looks
	// counts its looks, Outcome.Widened the pairs added for width
	// alone, and Outcome.BudgetEnded says which budget ended the rounds
	// while it still asked for more.
	Decide func(out *Outcome, look int) Need
	// MaxRounds is the most rounds a side may reach by rounds added;
	// at most Rounds (0 included): none added.
	MaxRounds int
	// MaxTime: no pair of rounds is added once the rehearsal has run
	// this long, or would with the pair (its time estimated from the
	// rounds finished); 0: no limit but MaxRounds.
	MaxTime time.Duration
}

// Need is why Config.Decide asks for more rounds.
type Need string

// Needs.
const (
	// NeedNone: the rounds so far tell what they can.
	NeedNone Need = ""
	// NeedDecision: a query is undecided on a rule.
	NeedDecision Need = "undecided"
	// NeedWidth: no query is undecided, but a regression's mean has an
	// interval too wide to forecast its size.
	NeedWidth Need = "width"
)

// Budget is what ended the rounds added while a query was undecided.
type Budget string

// Budgets.
const (
	// BudgetRounds: each side reached Config.MaxRounds.
	BudgetRounds Budget = "rounds"
	// BudgetTime: another pair would have run past Config.MaxTime.
	BudgetTime Budget = "time"
)

// Status is how a round ended: the round runner's vocabulary.
type Status = rounds.Status

// Statuses.
const (
	// StatusDone: the round ran whole; its result counts.
	StatusDone = rounds.StatusDone
	// StatusInterrupted: stopped by the user; its result is partial and
	// does not count.
	StatusInterrupted = rounds.StatusInterrupted
	// StatusFailed: the reset or the replay failed, or the replay
	// stopped early by itself; the rehearsal stopped there.
	StatusFailed = rounds.StatusFailed
)

// RoundRecord is what the index says of a round.
type RoundRecord struct {
	Seq    int         `json:"seq"`
	Side   Side        `json:"side"`
	N      int         `json:"n"`
	Status Status      `json:"status"`
	Reset  reset.State `json:"reset"`
	// ReplaySeconds is the wall time of the replay alone;
	// ReleaseSeconds that of undoing the reset's work after it
	// (dropping the round's copies).
	ReplaySeconds  float64   `json:"replay_seconds"`
	ReleaseSeconds float64   `json:"release_seconds"`
	StartedAt      time.Time `json:"started_at"`
	EndedAt        time.Time `json:"ended_at"`
	// File is the round's result, relative to the index's directory;
	// empty when the round produced none.
	File  string `json:"file,omitempty"`
	Error string `json:"error,omitempty"`
	// Fix names the fix applied to the candidate's copy before the
	// round (a fix round, RunFixes); such a round is not one of the
	// comparison's.
	Fix string `json:"fix,omitempty"`
	// Beside: a round of the side as it is, run in turn with the fix
	// rounds (RunFixes), which the fixes are judged against
	// (FixRun.Beside); not one of the comparison's either.
	Beside bool `json:"beside_fixes,omitempty"`
}

// Outcome is what a rehearsal did; its JSON form is the index.
type Outcome struct {
	Version int `json:"version"`
	// Rounds is the number asked per side; Order the sides in the
	// order they were to run.
	Rounds int    `json:"rounds"`
	Order  []Side `json:"order"`
	// ResetModes are each side's way of resetting.
	ResetModes map[Side]reset.Mode `json:"reset_modes"`
	Records    []RoundRecord       `json:"records"`
	// Control and Candidate are the results of the rounds finished
	// (StatusDone), in order: the comparison's inputs.
	Control   []*results.Result `json:"-"`
	Candidate []*results.Result `json:"-"`
	// Partial: fewer rounds finished than asked, on either side.
	Partial bool `json:"partial,omitempty"`
	// Interrupted: stopped by the user (the context).
	Interrupted bool `json:"interrupted,omitempty"`
	// Drifted: some round started from what an earlier one left (a
	// reset that does not reset).
	Drifted bool `json:"drifted,omitempty"`
	// Stopped says why the rehearsal stopped before its end.
	Stopped string `json:"stopped,omitempty"`
	// Sync is how the rounds' replays synchronized their sessions
	// (docs/sync.md): load by default, the load the application gave;
	// object or commit, for answers as the original's, when asked.
	Sync results.SyncMode `json:"sync,omitempty"`
	// Throttle is how far each side's rounds stretched the log's span
	// and waited for other sessions' commits, and whether the
	// candidate's were throttled by the replay itself.
	Throttle *Throttle `json:"throttle,omitempty"`
	// ResetSeconds, ReleaseSeconds and ReplaySeconds total the rounds'
	// resets, releases and replays; Prepare/CloseSeconds are the
	// resets' one-off work.
	ResetSeconds   float64   `json:"reset_seconds"`
	ReleaseSeconds float64   `json:"release_seconds"`
	ReplaySeconds  float64   `json:"replay_seconds"`
	PrepareSeconds float64   `json:"prepare_seconds"`
	CloseSeconds   float64   `json:"close_seconds"`
	StartedAt      time.Time `json:"started_at"`
	EndedAt        time.Time `json:"ended_at,omitzero"`
	// Kept are the last rounds of each side whose reset was not
	// released (Config.KeepLast), with the database map their replay
	// used: where the state they left is.
	Kept map[Side]Round `json:"-"`
	// Looks counts the times Config.Decide was asked, and MaxLooks is
	// the most it could be (1 + the rounds a side MaxRounds allows
	// beyond Rounds); Added are the rounds added to each side, Widened
	// those of them added while Decide asked for width alone
	// (NeedWidth). BudgetEnded says which budget ended the rounds while
	// Decide still asked for more, and Unmet what it asked for then;
	// both empty when it was satisfied (or not asked).
	Looks       int    `json:"looks,omitempty"`
	MaxLooks    int    `json:"max_looks,omitempty"`
	Added       int    `json:"added_rounds,omitempty"`
	Widened     int    `json:"added_for_width,omitempty"`
	BudgetEnded Budget `json:"budget_ended,omitempty"`
	Unmet       Need   `json:"unmet,omitempty"`
	// Fixes are the fixes tried on the candidate after the rounds
	// (RunFixes), each with its rounds' results and the rounds run
	// beside them.
	Fixes []FixRun `json:"fixes,omitempty"`
	// open are the resets left prepared (Config.KeepResets).
	open []reset.Resetter
}

// ReleaseKept releases what the resets of cfg made for the rounds Kept,
// once the caller is done with the state they left.
func (o *Outcome) ReleaseKept(ctx context.Context, cfg Config) error {
	var errs []error
	for _, side := range []Side{Control, Candidate} {
		round, ok := o.Kept[side]
		if !ok {
			continue
		}
		rs := cfg.Control.Reset
		if side == Candidate {
			rs = cfg.Candidate.Reset
		}
		t := time.Now()
		if err := rounds.Release(ctx, rs, round.Reset, cfg.CleanupTimeout); err != nil {
			errs = append(errs, fmt.Errorf("release the %s target's last round: %w", side, err))
		}
		o.ReleaseSeconds += time.Since(t).Seconds()
		delete(o.Kept, side)
	}
	return errors.Join(errs...)
}

// CloseResets closes the resets Run left prepared (Config.KeepResets);
// nothing when it left none.
func (o *Outcome) CloseResets(ctx context.Context) error {
	err := o.closeResets(ctx, o.open)
	o.open = nil
	return err
}

func (o *Outcome) closeResets(ctx context.Context, prepared []reset.Resetter) error {
	var errs []error
	t := time.Now()
	for _, rs := range prepared {
		if cerr := rs.Close(ctx); cerr != nil {
			errs = append(errs, fmt.Errorf("clean up the %s reset: %w", rs.Mode(), cerr))
		}
	}
	o.CloseSeconds += time.Since(t).Seconds()
	return errors.Join(errs...)
}

// ResetOverhead is the time the resets took in all: preparing, before
// and after each round, and closing.
func (o *Outcome) ResetOverhead() time.Duration {
	return time.Duration((o.PrepareSeconds + o.ResetSeconds + o.ReleaseSeconds + o.CloseSeconds) * float64(time.Second))
}

// Results returns the finished rounds' results of side.
func (o *Outcome) Results(side Side) []*results.Result {
	if side == Control {
		return o.Control
	}
	return o.Candidate
}

// Order is the order of the sides for rounds per side: A B, then B A, in
// turns (A B B A A B ...), so that each side runs first as often as the
// other, give or take one pair.
func Order(n int) []Side {
	return rounds.Alternate(Control, Candidate, n)
}

// driftWarning goes into the result of a round that started from what
// the rounds before it left.
const driftWarning = "the target was not reset before this round: it started from the state the earlier rounds left, not the first round's"

// Run runs the rehearsal. It returns the outcome, also when it stopped
// early: an interruption (ctx) is no error, the outcome says so; a failed
// reset or replay is, and the rounds finished before it are kept. Run
// releases what each round's reset made and closes both resets before it
// returns, whatever happened.
func Run(ctx context.Context, cfg Config) (out *Outcome, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	perSide := cfg.Rounds
	if perSide == 0 {
		perSide = DefaultRounds
	}
	if cfg.Dir != "" {
		if err := CheckDir(cfg.Dir, cfg.Overwrite); err != nil {
			return nil, err
		}
	}
	targets := map[Side]*Target{Control: &cfg.Control, Candidate: &cfg.Candidate}
	out = &Outcome{
		Version:    OutcomeVersion,
		Rounds:     perSide,
		Order:      Order(perSide),
		ResetModes: map[Side]reset.Mode{Control: cfg.Control.Reset.Mode(), Candidate: cfg.Candidate.Reset.Mode()},
		Records:    []RoundRecord{},
		StartedAt:  time.Now(),
	}
	if cfg.Decide != nil {
		out.MaxLooks = 1 + max(0, cfg.MaxRounds-perSide)
	}
	r := &run{cfg: cfg, out: out, begun: time.Now()}
	// Releases and closes run also after Ctrl-C: copies left behind
	// would fill the target's disk.
	cleanupCtx := func() (context.Context, context.CancelFunc) {
		return rounds.CleanupContext(ctx, cfg.CleanupTimeout)
	}
	r.cleanupCtx = cleanupCtx

	var prepared []reset.Resetter
	defer func() {
		out.EndedAt = time.Now()
		out.Partial = len(out.Control) < perSide || len(out.Candidate) < perSide
		if cfg.KeepResets && err == nil && !out.Interrupted && !out.Partial {
			// The fix rounds start from the same state; the caller
			// closes them.
			out.open = prepared
		} else {
			cctx, cancel := cleanupCtx()
			defer cancel()
			err = errors.Join(err, out.closeResets(cctx, prepared))
		}
		out.measureLoad()
		if werr := r.writeIndex(); werr != nil {
			err = errors.Join(err, werr)
		}
	}()

	t := time.Now()
	for _, side := range []Side{Control, Candidate} {
		rs := targets[side].Reset
		// Close undoes a Prepare that stopped half way too.
		prepared = append(prepared, rs)
		if perr := rs.Prepare(ctx); perr != nil {
			out.PrepareSeconds = time.Since(t).Seconds()
			if ctx.Err() != nil {
				out.Interrupted, out.Stopped = true, "interrupted before the first round"
				return out, nil
			}
			out.Stopped = fmt.Sprintf("the %s target's reset could not be prepared: %v", side, perr)
			return out, fmt.Errorf("prepare the %s target's reset: %w", side, perr)
		}
	}
	out.PrepareSeconds = time.Since(t).Seconds()
	if err := r.writeIndex(); err != nil {
		return out, err
	}

	n := map[Side]int{}
	i := 0
	before, err := rounds.Sequence(ctx, func() (func(context.Context) (bool, error), bool) {
		if i == len(out.Order) && !r.more() {
			return nil, false
		}
		side := out.Order[i]
		i++
		return func(ctx context.Context) (bool, error) {
			n[side]++
			round := Round{Seq: i, Of: len(out.Order), Side: side, N: n[side]}
			return r.round(ctx, round, *targets[side])
		}, true
	})
	if before > 0 {
		out.Interrupted, out.Stopped = true, fmt.Sprintf("interrupted before round %d", before)
	}
	return out, err
}

// more asks Config.Decide whether the finished rounds leave a query
// undecided, and adds a pair of rounds to the order when it says so and
// the budget allows; false when no round is to be added.
func (r *run) more() bool {
	out, cfg := r.out, r.cfg
	if cfg.Decide == nil || len(out.Control) != len(out.Candidate) || len(out.Control) < out.Rounds {
		return false
	}
	out.Looks++
	why := cfg.Decide(out, out.Looks)
	if why == NeedNone {
		return false
	}
	pair := len(out.Order) / 2
	if pair >= cfg.MaxRounds {
		out.BudgetEnded, out.Unmet = BudgetRounds, why
		return false
	}
	if cfg.MaxTime > 0 {
		need, known := r.roundTimes.Left(2, cfg.RoundEstimate)
		if !known || time.Since(r.begun)+need > cfg.MaxTime {
			out.BudgetEnded, out.Unmet = BudgetTime, why
			return false
		}
	}
	out.Order = append(out.Order, rounds.Turn([]Side{Control, Candidate}, pair)...)
	out.Added++
	if why == NeedWidth {
		out.Widened++
	}
	return true
}

func (cfg *Config) check() error {
	if cfg.Replay == nil {
		return errors.New("rehearse: no replay function")
	}
	if cfg.Rounds < 0 {
		return fmt.Errorf("rehearse: %d rounds: want at least 1 per side", cfg.Rounds)
	}
	for side, t := range map[Side]Target{Control: cfg.Control, Candidate: cfg.Candidate} {
		if t.DSN == "" {
			return fmt.Errorf("rehearse: the %s target has no connection string", side)
		}
		if t.Reset == nil {
			return fmt.Errorf("rehearse: the %s target has no reset (reset.None{} for none)", side)
		}
	}
	return nil
}

// run is a rehearsal under way.
type run struct {
	cfg        Config
	out        *Outcome
	begun      time.Time
	cleanupCtx func() (context.Context, context.CancelFunc)
	// roundTimes are the wall times of the rounds finished, resets
	// included, for the estimate.
	roundTimes rounds.Times
	// onBeside takes the result of a round run beside the fix rounds
	// (Round.Beside), before the index is written.
	onBeside func(Round, *results.Result)
}

// round resets the target, replays, releases and records one round
// (rounds.Run). stop is true when the rehearsal must stop (interrupted);
// err when it failed.
func (r *run) round(ctx context.Context, round Round, target Target) (stop bool, err error) {
	rec := RoundRecord{Seq: round.Seq, Side: round.Side, N: round.N, Beside: round.Beside, StartedAt: time.Now()}
	began := time.Now()
	end := rounds.Run(ctx, rounds.Cycle{
		Reset: target.Reset, N: round.N, CleanupTimeout: r.cfg.CleanupTimeout, DSN: target.DSN,
		DatabaseMap: r.cfg.DatabaseMap, Logs: target.Logs,
		Phase: func(p rounds.Phase, at rounds.Place) { r.progress(round.at(at), p) },
		Replay: func(ctx context.Context, at rounds.Place) (*results.Result, error) {
			return r.cfg.Replay(ctx, r.cfg.catalogOf(round.at(at)), target)
		},
		Keep: func(ctx context.Context, res *results.Result, rerr error) bool {
			return r.cfg.KeepLast && !round.Beside && round.N >= r.out.Rounds && rerr == nil && res != nil && !res.Partial && ctx.Err() == nil
		},
		Done: func(at rounds.Place, res *results.Result, _ error) error {
			rec.EndedAt = time.Now()
			if res == nil {
				return nil
			}
			return r.named(round, res, at.Reset, &rec)
		},
	})
	round = round.at(end.Place)
	rec.Reset = end.Place.Reset
	if end.Stage != rounds.StageReset {
		r.out.ResetSeconds += end.Place.Reset.Seconds
	}
	relErr := end.ReleaseErr
	status, why := end.Status()
	if !end.Replayed() {
		return r.notReplayed(round, rec, end, status, why)
	}
	res, rerr := end.Result, end.Err
	rec.ReplaySeconds = end.ReplaySeconds
	r.out.ReplaySeconds += rec.ReplaySeconds
	if end.Kept {
		// Its state stays for the plans; the caller releases it. A
		// round added after the rounds asked (Config.Decide) is the
		// side's last now: the one kept before it makes way.
		relErr = r.keep(ctx, round, target)
	} else {
		rec.ReleaseSeconds = end.ReleaseSeconds
		r.out.ReleaseSeconds += rec.ReleaseSeconds
	}
	rec.Status = status
	switch {
	case why != nil:
		rec.Error = why.Error()
	case status == StatusDone && relErr != nil:
		// The round counts, but the next could not start clean.
		rec.Error = relErr.Error()
	}
	r.add(rec)
	switch rec.Status {
	case StatusInterrupted:
		r.out.Interrupted, r.out.Stopped = true, fmt.Sprintf("interrupted during round %d (%s); its partial result does not count", round.Seq, round.Side)
		return true, relErr
	case StatusFailed:
		r.out.Stopped = fmt.Sprintf("round %d (%s) failed: %s", round.Seq, round.Side, rec.Error)
		if rerr == nil {
			rerr = errors.New(r.out.Stopped)
		}
		return true, errors.Join(fmt.Errorf("round %d (%s): %w", round.Seq, round.Side, rerr), relErr)
	}
	switch {
	case round.Beside:
		r.onBeside(round, res)
	case round.Side == Control:
		r.out.Control = append(r.out.Control, res)
	default:
		r.out.Candidate = append(r.out.Candidate, res)
	}
	r.out.measureLoad()
	r.roundTimes.Add(time.Since(began))
	r.progress(round, rounds.PhaseDone)
	if relErr != nil {
		r.out.Stopped = fmt.Sprintf("after round %d (%s) the reset could not release what it made", round.Seq, round.Side)
		return true, relErr
	}
	if err := r.writeIndex(); err != nil {
		return true, err
	}
	return false, nil
}

// at is round replayed where a reset made place for it.
func (round Round) at(at rounds.Place) Round {
	round.Reset, round.DatabaseMap, round.Logs = at.Reset, at.DatabaseMap, at.Logs
	return round
}

// catalogOf sets where round's replay reads the catalog its sessions
// are synchronized by: the control's, for a candidate's round.
func (cfg *Config) catalogOf(round Round) Round {
	if round.Side == Candidate && cfg.Control.DSN != "" {
		round.CatalogFrom, round.CatalogDatabaseMap = cfg.Control.DSN, cfg.DatabaseMap
	}
	return round
}

// keep keeps round's reset work in place (Outcome.Kept), releasing the
// round of its side kept before it.
func (r *run) keep(ctx context.Context, round Round, target Target) error {
	if r.out.Kept == nil {
		r.out.Kept = map[Side]Round{}
	}
	var err error
	if old, ok := r.out.Kept[round.Side]; ok {
		t := time.Now()
		err = rounds.Release(ctx, target.Reset, old.Reset, r.cfg.CleanupTimeout)
		r.out.ReleaseSeconds += time.Since(t).Seconds()
	}
	r.out.Kept[round.Side] = round
	return err
}

// named names a comparison's round's result (and a round's run beside the
// fix rounds) in its source and its file, written to Config.Dir, with the
// target's databases where the replay saw the reset's copies.
func (r *run) named(round Round, res *results.Result, st reset.State, rec *RoundRecord) error {
	unmapDatabases(res, st.Databases)
	if st.Drifted {
		r.out.Drifted = true
		res.Warnings = append(res.Warnings, driftWarning)
	}
	name := fmt.Sprintf("round-%02d-%s.json", round.Seq, round.Side)
	res.Source = fmt.Sprintf("%s round %d", round.Side, round.N)
	if round.Beside {
		name = fmt.Sprintf("round-%02d-%s-beside-fixes.json", round.Seq, round.Side)
		res.Source += ", beside the fix rounds"
	}
	if r.cfg.Dir == "" {
		return nil
	}
	path := filepath.Join(r.cfg.Dir, name)
	if err := writeResult(path, res); err != nil {
		return err
	}
	rec.File, res.Source = name, path
	return nil
}

// roundStatus is the status of a round whose replay returned res and
// rerr, and why it failed or was interrupted when it says.
// notReplayed records a round that ended before its replay (its reset
// failed or was interrupted, or the target's logs could not be
// expanded): the rehearsal stops there.
func (r *run) notReplayed(round Round, rec RoundRecord, end rounds.Ended, status Status, why error) (stop bool, err error) {
	rec.Status, rec.EndedAt = status, time.Now()
	if why != nil {
		rec.Error = why.Error()
	}
	r.add(rec)
	if status == StatusInterrupted {
		r.out.Interrupted, r.out.Stopped = true, fmt.Sprintf("interrupted during the reset before round %d", round.Seq)
		return true, end.ReleaseErr
	}
	r.out.Stopped = fmt.Sprintf("round %d (%s): %v", round.Seq, round.Side, end.Err)
	if end.Stage == rounds.StageReset {
		r.out.Stopped = fmt.Sprintf("the reset before round %d (%s) failed", round.Seq, round.Side)
	}
	return true, errors.Join(end.Err, end.ReleaseErr)
}

func (r *run) add(rec RoundRecord) {
	r.out.Records = append(r.out.Records, rec)
}

// progress reports a phase of round, with the estimate of what remains.
func (r *run) progress(round Round, phase rounds.Phase) {
	if r.cfg.Progress == nil {
		return
	}
	p := Progress{Round: round, Phase: phase, Finished: r.roundTimes.Len(), Elapsed: time.Since(r.begun)}
	left := round.Of - round.Seq + 1 // this round included
	if phase == rounds.PhaseDone {
		left--
	}
	p.Remaining, p.RemainingKnown = r.roundTimes.Left(left, r.cfg.RoundEstimate)
	r.cfg.Progress(p)
}

// unmapDatabases names the target's databases in res where the replay
// saw the round's copies, so that rounds read alike.
func unmapDatabases(res *results.Result, copies map[string]string) {
	if len(copies) == 0 {
		return
	}
	orig := make(map[string]string, len(copies))
	for db, c := range copies {
		if db != "" {
			orig[c] = db
		}
	}
	for i, cf := range res.Sessions.ConnectFailures {
		if db, ok := orig[cf.Database]; ok {
			res.Sessions.ConnectFailures[i].Database = db
		}
	}
}

// CheckDir makes dir if needed and checks that it is writable and does
// not hold another rehearsal (unless overwrite), as Run does before any
// work: a caller with work of its own before Run checks first.
func CheckDir(dir string, overwrite bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("rehearse: %w", err)
	}
	if !overwrite {
		old, _ := filepath.Glob(filepath.Join(dir, "round-*.json"))
		if _, err := os.Stat(filepath.Join(dir, IndexFile)); err == nil || len(old) > 0 {
			return fmt.Errorf("rehearse: %s holds the rounds of another rehearsal: choose another directory or remove them", dir)
		}
	}
	f, err := os.CreateTemp(dir, ".pgrehearse-check-*")
	if err != nil {
		return fmt.Errorf("rehearse: cannot write in %s: %w", dir, err)
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}

func (r *run) writeIndex() error {
	if r.cfg.Dir == "" {
		return nil
	}
	return writeAtomic(filepath.Join(r.cfg.Dir, IndexFile), r.out)
}

func writeResult(path string, res *results.Result) error {
	return writeAtomic(path, res)
}

// ReadOutcome reads the index a rehearsal wrote in dir, and the results
// of its finished rounds into Control and Candidate, so that the
// comparison can be made again from the files.
func ReadOutcome(dir string) (*Outcome, error) {
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		return nil, err
	}
	var out Outcome
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, IndexFile), err)
	}
	if out.Version != OutcomeVersion {
		return nil, fmt.Errorf("%s: version %d, this pgrehearse reads %d", filepath.Join(dir, IndexFile), out.Version, OutcomeVersion)
	}
	for _, rec := range out.Records {
		if rec.Status != StatusDone || rec.Fix != "" || rec.Beside {
			continue
		}
		if rec.File == "" {
			return nil, fmt.Errorf("%s: round %d is done but names no file", filepath.Join(dir, IndexFile), rec.Seq)
		}
		res, err := results.ReadFile(filepath.Join(dir, rec.File))
		if err != nil {
			return nil, err
		}
		if rec.Side == Control {
			out.Control = append(out.Control, res)
		} else {
			out.Candidate = append(out.Candidate, res)
		}
	}
	return &out, nil
}

// RoundOf is the replay of round onto target, for replayrun.Config.Round:
// the target, the round's database map (its reset's copies), the side's
// target logs, and the round and side written into its result.
func RoundOf(round Round, target Target) replayrun.Round {
	return replayrun.Round{Target: target.DSN, DatabaseMap: round.DatabaseMap, TargetLogs: round.Logs,
		Part: &results.Part{Round: round.N, Side: round.Side}, BatchInserts: round.BatchInserts,
		CatalogFrom: round.CatalogFrom, CatalogDatabaseMap: round.CatalogDatabaseMap}
}
