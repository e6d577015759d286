package headroom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/outfile"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
	"github.com/pgrehearse/pgrehearse/internal/stepcurve"
)

// Side is a target's name in the run: results' vocabulary.
type Side = results.Side

// Sides.
const (
	Control   = results.SideControl
	Candidate = results.SideCandidate
)

// OutcomeVersion is the version of the Outcome's JSON form
// (docs/headroom-json.md).
const OutcomeVersion = 1

// By says how a step makes k times the load: results' vocabulary, which
// each step's result carries in its Part.
type By = results.LoadBy

// Ways to make the load.
const (
	// BySpeed replays the same sessions at k times their pace.
	BySpeed = results.LoadBySpeed
	// ByFold overlays k consecutive slices of a longer log on one
	// window: only whole load factors (Search.Integer).
	ByFold = results.LoadByFold
)

// Target is one side's server.
type Target struct {
	Side Side
	DSN  string
	// Reset returns the target to its starting state before each step.
	Reset reset.Resetter
	// Logs are the target's own server log files (paths or patterns),
	// for server-side durations, expanded before each step.
	Logs []string
}

// StepRun is one step as the replay function gets it.
type StepRun struct {
	// Seq is the step's place in the run, from 1.
	Seq  int
	Side Side
	// K is the load factor asked; Round the step's round at that k on
	// its side, from 1; N the side's step, from 1 (its reset's round).
	K     float64
	Round int
	N     int
	// DatabaseMap is the user's map followed by the reset's copies.
	DatabaseMap map[string]string
	Logs        []string
	Reset       reset.State
	// Try is the name of the try (Config.Tries) applied after the
	// step's reset; "" for the search without one.
	Try string
	// CatalogFrom is the server whose catalog the step's replay
	// synchronizes its sessions by (replayrun.Round.CatalogFrom), and
	// CatalogDatabaseMap its names of the logged databases: the
	// control's (the user's map) for the candidate's steps, so that a
	// trigger the candidate adds does not throttle the load its replay
	// gives it; empty for the control's and for one target.
	CatalogFrom        string
	CatalogDatabaseMap map[string]string
}

// ReplayFunc replays the workload once at load factor step.K onto
// target. When ctx is cancelled it returns what ran, marked partial. An
// error means the step gave no usable result, and the run stops; what a
// target's overload causes (errors, lost connections) belongs in the
// result, which the step's verdict then judges.
type ReplayFunc func(ctx context.Context, step StepRun, target Target) (*results.Result, error)

// Progress is reported at each phase of each step.
type Progress struct {
	Step  StepRun
	Phase rounds.Phase
	// Done is the step finished, at rounds.PhaseDone.
	Done *Step
	// Elapsed is the time since the run began; Remaining an estimate of
	// what is left (valid when RemainingKnown): the steps the searches
	// may still need, the tries' searches still to come included (each
	// as long as the try side's search without it, by the ks it tried),
	// each step as long as the log at its k plus the steps' mean
	// overhead, bounded by the budget.
	Elapsed        time.Duration
	Remaining      time.Duration
	RemainingKnown bool
}

// Config is a headroom run.
type Config struct {
	// Targets are one or two; two alternate (A B, then B A, ...).
	Targets []Target
	SLO     judge.SLO
	// Search bounds each side's search (MaxK, Resolution, rounds,
	// MaxSteps); zero fields take the defaults.
	Search Search
	By     By
	// Speed is the pace at k = 1 (the log's own: 1); a step at k
	// replays at Speed times k.
	Speed       float64
	DatabaseMap map[string]string
	Replay      ReplayFunc
	// Budget bounds the run's wall time: no step starts that would end
	// past it (by its estimate); zero: no bound.
	Budget time.Duration
	// Span is how long the log takes at k = 1 (its span over Speed),
	// for the estimates.
	Span time.Duration
	// Think is the time the log's sessions spent between their
	// statements inside transaction blocks (nil: not read).
	Think *results.ThinkTime
	// Cores is the number of CPUs the replayer may use, for telling its
	// own saturation.
	Cores int
	// ServerCPU, when set, finds a target's server on this machine
	// before each step (a reset may have restarted it) and returns a
	// reading of its CPU seconds so far; an error leaves the step's
	// server CPU unknown.
	ServerCPU func(ctx context.Context, dsn string) (func() (float64, error), error)
	// Dir, when set, receives each step's result as it ends.
	Dir      string
	Progress func(Progress)
	// CleanupTimeout bounds releases and closes after an interruption;
	// zero: 10 minutes.
	CleanupTimeout time.Duration
	// Shards is how many shards the Replay function splits each step
	// into (recorded in the Outcome); 0 or 1: none.
	Shards int
	// ShardsRun says where the shards run: "processes" (one process
	// each, their CPU adding up) or "in_process" (in one process).
	ShardsRun string
	// Tries are changes of the user's own, as fixes of any kind that
	// change the target (fixes.ParseTry's SQL, a server setting, an
	// index ...): after the searches, the candidate's (the one
	// target's) search runs again for each, the fix applied after every
	// reset (rounds.ApplyChange), in the reset's copy of each of its
	// databases, or of Databases when it names none (Outcome.Tries). A
	// server setting is put back after every step. They need a reset
	// that undoes them.
	Tries []fixes.Fix
	// Databases are the workload's databases, as the logs name them,
	// where a try that names none runs; none: the target DSN's own
	// database.
	Databases []string
}

// Status is how a step ended: the round runner's vocabulary. A step
// whose replay did not finish under its load is done (its verdict judges
// that), not failed.
type Status = rounds.Status

// Statuses.
const (
	StatusDone        = rounds.StatusDone
	StatusInterrupted = rounds.StatusInterrupted
	StatusFailed      = rounds.StatusFailed
)

// Step is one replay of the run and what it measured.
type Step struct {
	Seq    int     `json:"seq"`
	Side   Side    `json:"side"`
	K      float64 `json:"k"`
	Round  int     `json:"round"`
	Status Status  `json:"status"`
	// Baseline: a round at k = 1, which the side's other steps are
	// judged against; it has no verdict.
	Baseline    bool               `json:"baseline,omitempty"`
	Measurement *judge.Measurement `json:"measurement,omitempty"`
	Verdict     *judge.StepVerdict `json:"verdict,omitempty"`
	// File is the step's result in Config.Dir, when written.
	File          string    `json:"file,omitempty"`
	ResetSeconds  float64   `json:"reset_seconds"`
	ReplaySeconds float64   `json:"replay_seconds"`
	StartedAt     time.Time `json:"started_at"`
	Error         string    `json:"error,omitempty"`
}

// FirstBreak is the first rule broken on a side: at the lowest achieved
// k among the steps that broke (bound by the target), the rule broken by
// the most.
type FirstBreak struct {
	K      float64 `json:"k"`
	AskedK float64 `json:"asked_k"`
	judge.Break
}

// SideOutcome is one side's search and its answer.
type SideOutcome struct {
	Side       Side            `json:"side"`
	Steps      []Step          `json:"steps"`
	Baseline   *judge.Baseline `json:"baseline,omitempty"`
	Answer     *Answer         `json:"answer,omitempty"`
	FirstBreak *FirstBreak     `json:"first_break,omitempty"`
	// USL is the model fitted to the steps' throughput; nil with fewer
	// than three loads measured.
	USL *USL `json:"usl,omitempty"`
	// BoundWhy says why a step was bound by other than the target.
	BoundWhy string `json:"bound_why,omitempty"`
	// StepSeconds is how long a step lasted at the answer's upper end
	// (the first k that broke in every round, else the largest that
	// held): the log's span at 1x over that k asked, by speed and by
	// fold alike. Below MinStepSeconds the answer over-states the
	// capacity (MinStepSeconds).
	StepSeconds float64 `json:"step_seconds,omitempty"`
	// Peak and Knee are the side's throughput curve over the ks asked,
	// found by the step-curve finder that sweep's client counts use
	// (package stepcurve); nil without two loads measured.
	Peak *CurvePeak `json:"peak,omitempty"`
	Knee *CurveKnee `json:"knee,omitempty"`
}

// MinStepSeconds is the shortest step a capacity is read from without a
// warning. Near a target's capacity its queue builds over the step: a
// short step ends before it has, and breaks later than the application
// would. bench/forecast's shop on half a CPU (2026-11-29, quiet): from a
// 10 s log, steps of 3.4-5 s at the answer, headroom read 1.4 and 2.0
// times the capacity the application kept under the same SLO (its own
// steps 10 s); from a 40 s log, 23 s at the answer, 1.02 and 1.03.
const MinStepSeconds = 20

// StepSeconds is how long a step at k lasts of a log whose span at 1x is
// span seconds, by speed and by fold alike; 0 when the span is unknown.
func StepSeconds(span, k float64) float64 { return span / max(k, 1) }

// ShortStep says whether a step at k of a log of span seconds lasts less
// than MinStepSeconds (never when the span is unknown), and the span
// that would make it last MinStepSeconds.
func ShortStep(span, k float64) (short bool, needSpan float64) {
	d := StepSeconds(span, k)
	return d > 0 && d < MinStepSeconds, math.Ceil(max(k, 1) * MinStepSeconds)
}

// ThinkShare is the share of the log's transaction blocks' time spent
// between their statements from which a run by speed says that it
// shortens that think time (ThinkShortened).
const ThinkShare = 0.25

// ThinkShortened says whether out's steps shortened a think time inside
// transactions worth saying: by speed, with ThinkShare of the blocks'
// time between their statements.
func (out *Outcome) ThinkShortened() bool {
	return out.By == BySpeed && out.Think != nil && out.Think.Blocks > 0 && out.Think.Share() >= ThinkShare
}

// CurvePeak is the k (asked) of the highest median statements per second
// over its rounds, and the ks whose throughput cannot be told from it.
type CurvePeak struct {
	K              float64 `json:"k"`
	StatementsPerS float64 `json:"statements_per_s"`
	Lo             float64 `json:"lo_k"`
	Hi             float64 `json:"hi_k"`
}

// CurveKnee is where more load stops paying: the k (asked) of the highest
// statements per second over mean latency (medians over its rounds).
// Found only when a higher k's is lower beyond noise; Lo and Hi are the
// ks whose cannot be told from it. UpTo is the largest k measured.
type CurveKnee struct {
	Found          bool    `json:"found"`
	K              float64 `json:"k,omitempty"`
	StatementsPerS float64 `json:"statements_per_s,omitempty"`
	MeanMS         float64 `json:"mean_ms,omitempty"`
	Lo             float64 `json:"lo_k,omitempty"`
	Hi             float64 `json:"hi_k,omitempty"`
	UpTo           float64 `json:"up_to_k"`
}

// Outcome is what a headroom run found; its JSON form is documented in
// docs/headroom-json.md.
type Outcome struct {
	Version int     `json:"version"`
	By      By      `json:"by"`
	Speed   float64 `json:"speed"`
	// Shards is Config.Shards when above 1.
	Shards int `json:"shards,omitempty"`
	// ShardsRun is Config.ShardsRun with shards: "processes" or
	// "in_process".
	ShardsRun string    `json:"shards_run,omitempty"`
	SLO       judge.SLO `json:"slo"`
	Search    Search    `json:"search"`
	// SpanSeconds is the log's length at k = 1.
	SpanSeconds float64 `json:"span_seconds"`
	// Think is Config.Think: the think time inside the log's
	// transactions, which a step by speed shortens k times.
	Think      *results.ThinkTime  `json:"think_in_transactions,omitempty"`
	ResetModes map[Side]reset.Mode `json:"reset_modes"`
	Sides      []*SideOutcome      `json:"sides"`
	// Tries are the searches again with each of Config.Tries applied,
	// those begun.
	Tries []*TryOutcome `json:"tries,omitempty"`
	// TriesNotRun are the names of the Config.Tries whose search never
	// began: the run stopped before them (interrupted, the budget, a
	// failed step).
	TriesNotRun []string `json:"tries_not_run,omitempty"`
	// Partial: a search did not finish (interrupted, the budget, a
	// failed step); the answers are of the steps finished.
	Partial     bool      `json:"partial,omitempty"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Stopped     string    `json:"stopped,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
}

// Side returns the outcome of side, nil when it did not run.
func (o *Outcome) Side(side Side) *SideOutcome {
	for _, s := range o.Sides {
		if s.Side == side {
			return s
		}
	}
	return nil
}

// run is a headroom run under way.
type run struct {
	cfg      Config
	out      *Outcome
	begun    time.Time
	searches map[Side]*Search
	base     map[Side][]judge.Measurement
	baseline map[Side]*judge.Baseline
	n        map[Side]int
	// overheads are the steps' wall times beyond the log's span at their
	// k (resets, connections, reading), for the estimates.
	overheads rounds.Times
	// seq is the run's last step, shared with the tries' searches.
	seq *int
	// try, in a try's search, is the try applied after every reset,
	// and tried what became of it.
	try   *fixes.Fix
	tried *TryOutcome
	// tryRuns are the tries' searches, for whether they finished.
	tryRuns []*run
	// triesLater are the tries whose searches come after this search,
	// and oneTry the estimate of one, for the time left.
	triesLater int
	oneTry     func() time.Duration
	// control is the control's DSN when there is one, kept for the
	// tries' searches, whose Config names only the candidate.
	control string
}

// Run runs the search on every target. It returns the outcome also when
// it stopped early: an interruption (ctx) or the budget is no error, the
// outcome says so; a failed reset or step is, and the steps finished
// are kept and answered.
func Run(ctx context.Context, cfg Config) (out *Outcome, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Speed <= 0 {
		cfg.Speed = 1
	}
	if cfg.By == "" {
		cfg.By = BySpeed
	}
	if cfg.By == ByFold {
		// A fold overlays whole slices.
		cfg.Search.Integer = true
	}
	proto := NewSearch(cfg.Search)
	out = &Outcome{Version: OutcomeVersion, By: cfg.By, Speed: cfg.Speed, SLO: cfg.SLO, Search: *proto,
		SpanSeconds: cfg.Span.Seconds(), Think: cfg.Think, ResetModes: map[Side]reset.Mode{}, StartedAt: time.Now()}
	if cfg.Shards > 1 {
		out.Shards, out.ShardsRun = cfg.Shards, cfg.ShardsRun
	}
	r := &run{cfg: cfg, out: out, begun: time.Now(), searches: map[Side]*Search{}, base: map[Side][]judge.Measurement{},
		baseline: map[Side]*judge.Baseline{}, n: map[Side]int{}, seq: new(int), triesLater: len(cfg.Tries)}
	r.oneTry = r.tryEstimate
	for _, t := range cfg.Targets {
		s := *proto
		r.searches[t.Side] = &s
		out.ResetModes[t.Side] = t.Reset.Mode()
		if t.Side == Control {
			r.control = t.DSN
		}
		out.Sides = append(out.Sides, &SideOutcome{Side: t.Side, Steps: []Step{}})
	}
	var prepared []reset.Resetter
	defer func() {
		cctx, cancel := rounds.CleanupContext(ctx, cfg.CleanupTimeout)
		defer cancel()
		for _, rs := range prepared {
			if cerr := rs.Close(cctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up the %s reset: %w", rs.Mode(), cerr))
			}
		}
		r.answer()
		out.EndedAt = time.Now()
		for _, x := range append([]*run{r}, r.tryRuns...) {
			if x.tried != nil && x.tried.NotTried != "" {
				// Not tried: its search stopped by design.
				continue
			}
			for _, s := range x.searches {
				if _, done := s.Next(); !done {
					out.Partial = true
					if x.tried != nil {
						x.tried.Partial = true
					}
				}
			}
		}
		for _, t := range cfg.Tries[len(out.Tries):] {
			out.TriesNotRun = append(out.TriesNotRun, t.Name)
			out.Partial = true
		}
	}()
	for _, t := range cfg.Targets {
		prepared = append(prepared, t.Reset)
		if perr := t.Reset.Prepare(ctx); perr != nil {
			if ctx.Err() != nil {
				out.Interrupted, out.Stopped = true, "interrupted before the first step"
				return out, nil
			}
			out.Stopped = fmt.Sprintf("the %s target's reset could not be prepared: %v", t.Side, perr)
			return out, fmt.Errorf("prepare the %s target's reset: %w", t.Side, perr)
		}
	}
	if before, err := r.search(ctx); before > 0 {
		out.Interrupted, out.Stopped = true, fmt.Sprintf("interrupted before step %d", before)
	} else if err != nil {
		return out, err
	}
	if err := r.tries(ctx); err != nil {
		return out, err
	}
	return out, nil
}

// search runs the sides' searches in turns until every one is done;
// before is the step an interruption came before (0: none).
func (r *run) search(ctx context.Context) (before int, err error) {
	cfg, out := r.cfg, r.out
	// The sides take turns, A B then B A; a side whose search is done
	// drops out of the turns, and the run ends when every side's is.
	pass, order, progressed := 0, rounds.Turn(cfg.Targets, 0), false
	next := func() (func(context.Context) (bool, error), bool) {
		for {
			if len(order) == 0 {
				if !progressed {
					return nil, false
				}
				pass++
				order, progressed = rounds.Turn(cfg.Targets, pass), false
			}
			t := order[0]
			order = order[1:]
			s := r.searches[t.Side]
			k, done := s.Next()
			if done {
				continue
			}
			return func(ctx context.Context) (bool, error) {
				if cfg.Budget > 0 && time.Since(r.begun)+r.estimate(k) > cfg.Budget {
					out.Stopped = fmt.Sprintf("the budget (%v) ends before the next step (%s at %gx%s) would", cfg.Budget, t.Side, k, r.withTry())
					return true, nil
				}
				*r.seq++
				progressed = true
				r.n[t.Side]++
				st := StepRun{Seq: *r.seq, Side: t.Side, K: k, Round: s.rounds(k) + 1, N: r.n[t.Side]}
				if t.Side == Candidate && r.control != "" {
					st.CatalogFrom, st.CatalogDatabaseMap = r.control, r.cfg.DatabaseMap
				}
				if r.try != nil {
					st.Try = r.try.Name
				}
				return r.step(ctx, st, t)
			}, true
		}
	}
	return rounds.Sequence(ctx, next)
}

func (cfg *Config) check() error {
	switch {
	case cfg.Replay == nil:
		return errors.New("headroom: no replay function")
	case len(cfg.Targets) == 0 || len(cfg.Targets) > 2:
		return fmt.Errorf("headroom: %d targets, want one or two", len(cfg.Targets))
	case len(cfg.SLO.Rules) == 0:
		return errors.New("headroom: an SLO without rules")
	}
	for _, t := range cfg.Targets {
		if t.DSN == "" || t.Reset == nil {
			return fmt.Errorf("headroom: the %s target needs a connection string and a reset (reset.None{} for none)", t.Side)
		}
		if len(cfg.Tries) > 0 && t.Reset.Mode() == reset.ModeNone {
			return errors.New("headroom: a try needs a reset that undoes it, not none")
		}
	}
	for _, f := range cfg.Tries {
		if err := checkTry(f); err != nil {
			return err
		}
	}
	if len(cfg.Targets) == 2 && cfg.Targets[0].Side == cfg.Targets[1].Side {
		return fmt.Errorf("headroom: two targets named %s", cfg.Targets[0].Side)
	}
	return nil
}

// step resets the target, replays at the step's k, releases and records
// the step (rounds.Run). stop is true when the run must stop.
func (r *run) step(ctx context.Context, st StepRun, t Target) (stop bool, err error) {
	so := r.out.Side(t.Side)
	rec := Step{Seq: st.Seq, Side: st.Side, K: st.K, Round: st.Round, StartedAt: time.Now()}
	began := time.Now()
	serverCPU := -1.0
	at := func(p rounds.Place) StepRun {
		st.Reset, st.DatabaseMap, st.Logs = p.Reset, p.DatabaseMap, p.Logs
		return st
	}
	cycle := rounds.Cycle{Reset: t.Reset, N: st.N, CleanupTimeout: r.cfg.CleanupTimeout, DSN: t.DSN,
		DatabaseMap: r.cfg.DatabaseMap, Logs: t.Logs, Change: r.try,
		Phase:   func(p rounds.Phase, place rounds.Place) { r.progress(at(place), p, nil) },
		Measure: r.measureCPU(t, &serverCPU),
		Replay: func(ctx context.Context, place rounds.Place) (*results.Result, error) {
			return r.cfg.Replay(ctx, at(place), t)
		},
		Done:      func(_ rounds.Place, res *results.Result, _ error) error { return r.writeStep(st, res, &rec) },
		UnderLoad: true,
	}
	end := rounds.Run(ctx, cycle)
	rec.ResetSeconds = end.Place.Reset.Seconds
	relErr := end.ReleaseErr
	status, why := end.Status()
	rec.Status = status
	if why != nil {
		rec.Error = why.Error()
	}
	if !end.Replayed() {
		return r.notReplayed(st, rec, end)
	}
	res := end.Result
	rec.ReplaySeconds = end.ReplaySeconds
	switch status {
	case StatusInterrupted:
		so.Steps = append(so.Steps, rec)
		r.out.Interrupted, r.out.Stopped = true, fmt.Sprintf("interrupted during step %d (%s at %gx); its partial result does not count", st.Seq, st.Side, st.K)
		return true, relErr
	case StatusFailed:
		so.Steps = append(so.Steps, rec)
		r.out.Stopped = fmt.Sprintf("step %d (%s at %gx) failed: %v", st.Seq, st.Side, st.K, why)
		return true, errors.Join(fmt.Errorf("step %d (%s at %gx): %w", st.Seq, st.Side, st.K, why), relErr)
	}
	m := judge.Measure(res)
	if serverCPU >= 0 && rec.ReplaySeconds > 0 {
		m.ServerCPUSeconds = &serverCPU
		m.ServerCPU = serverCPU / rec.ReplaySeconds
		if r.cfg.Shards > 1 && m.WallSeconds > 0 && m.WallSeconds < rec.ReplaySeconds {
			// Shards start their processes, read the log and meet at a
			// rendezvous seconds ahead before the replay: the server's
			// CPU is the replay's, over its own time.
			m.ServerCPU = serverCPU / m.WallSeconds
		}
	}
	rec.Measurement = &m
	s := r.searches[st.Side]
	if same(st.K, 1) && len(r.base[st.Side]) < s.BaseRounds {
		rec.Baseline = true
		r.base[st.Side] = append(r.base[st.Side], m)
		if len(r.base[st.Side]) == s.BaseRounds {
			b := judge.NewBaseline(r.base[st.Side], r.cfg.SLO)
			r.baseline[st.Side] = &b
		}
		s.Record(Trial{K: 1, Achieved: 1, Held: true, Margin: -1, Bound: judge.BoundTarget})
	} else {
		v := judge.Step(*r.baseline[st.Side], m, st.K, r.cfg.SLO, r.cfg.Cores)
		rec.Verdict = &v
		s.Record(Trial{K: st.K, Achieved: v.AchievedK, Held: v.Held, Margin: v.Margin, Bound: v.Bound})
	}
	so.Steps = append(so.Steps, rec)
	if over := time.Since(began) - r.span(st.K); over > 0 {
		r.overheads.Add(over)
	}
	r.progress(st, rounds.PhaseDone, &so.Steps[len(so.Steps)-1])
	if relErr != nil {
		r.out.Stopped = fmt.Sprintf("after step %d (%s) the reset could not release what it made", st.Seq, st.Side)
		return true, relErr
	}
	return false, nil
}

// notReplayed records a step that ended before its replay: its reset
// failed or was interrupted, its try was not applied, or the target's
// logs could not be expanded. The run stops there (a try's search does,
// when the server refused the try).
func (r *run) notReplayed(st StepRun, rec Step, end rounds.Ended) (stop bool, err error) {
	if end.Stage == rounds.StageChange {
		r.notTried(st, rec, end.Err)
		return true, end.ReleaseErr
	}
	so := r.out.Side(st.Side)
	so.Steps = append(so.Steps, rec)
	if rec.Status == StatusInterrupted {
		r.out.Interrupted, r.out.Stopped = true, fmt.Sprintf("interrupted during the reset before step %d", st.Seq)
		return true, end.ReleaseErr
	}
	r.out.Stopped = fmt.Sprintf("step %d (%s at %gx): %v", st.Seq, st.Side, st.K, end.Err)
	if end.Stage == rounds.StageReset {
		r.out.Stopped = fmt.Sprintf("the reset before step %d (%s) failed", st.Seq, st.Side)
	}
	return true, errors.Join(end.Err, end.ReleaseErr)
}

// measureCPU reads the server's CPU seconds around a step's replay into
// *seconds (Config.ServerCPU), which stays -1 when unknown.
func (r *run) measureCPU(t Target, seconds *float64) func(context.Context, rounds.Place) func() {
	if r.cfg.ServerCPU == nil {
		return nil
	}
	return func(ctx context.Context, _ rounds.Place) func() {
		read, err := r.cfg.ServerCPU(ctx, t.DSN)
		if err != nil {
			return nil
		}
		cpu0, err := read()
		if err != nil {
			return nil
		}
		return func() {
			if c, err := read(); err == nil {
				*seconds = c - cpu0
			}
		}
	}
}

// writeStep writes a step's result, when it gave one, to Config.Dir.
func (r *run) writeStep(st StepRun, res *results.Result, rec *Step) error {
	if res == nil || r.cfg.Dir == "" {
		return nil
	}
	name := fmt.Sprintf("step-%02d-%s-k%g.json", st.Seq, st.Side, st.K)
	if st.Try != "" {
		name = fmt.Sprintf("step-%02d-%s-try-%s-k%g.json", st.Seq, st.Side, st.Try, st.K)
	}
	if err := outfile.Write(filepath.Join(r.cfg.Dir, name), func(w io.Writer) error { return results.Encode(w, res) }); err != nil {
		return err
	}
	rec.File = name
	return nil
}

// span is the log's length at load factor k.
func (r *run) span(k float64) time.Duration {
	return time.Duration(float64(r.cfg.Span) / k)
}

// estimate is how long a step at k is expected to take.
func (r *run) estimate(k float64) time.Duration {
	return r.span(k) + r.overheads.Mean()
}

// remaining estimates the time the searches may still need: for each
// side, the ladder above what it tried and a bisection and boundary
// rounds (four steps) at about its largest k.
func (r *run) remaining() time.Duration {
	var left time.Duration
	for _, s := range r.searches {
		if _, done := s.Next(); done {
			continue
		}
		top := s.maxTried()
		if base := s.BaseRounds - s.rounds(1); base > 0 {
			left += time.Duration(base) * r.estimate(1)
		}
		for _, l := range s.ladder {
			if l > top+1e-9 {
				left += r.estimate(l)
			}
		}
		left += 4 * r.estimate(max(top, 1.5))
	}
	if r.triesLater > 0 && r.oneTry != nil {
		left += time.Duration(r.triesLater) * r.oneTry()
	}
	if b := r.cfg.Budget; b > 0 {
		left = min(left, max(0, b-time.Since(r.begun)))
	}
	return left
}

// tryEstimate is how long one try's search is expected to take: as long
// as the try side's search without it, by the ks that search tried so
// far (its 1x rounds, the ladder up to its largest k, a bisection and
// boundary rounds, four steps, about it).
func (r *run) tryEstimate() time.Duration {
	s := r.searches[r.cfg.trySide().Side]
	if s == nil {
		return 0
	}
	top := s.maxTried()
	left := time.Duration(s.BaseRounds) * r.estimate(1)
	for _, l := range s.ladder {
		if l > 1+1e-9 && l <= top+1e-9 {
			left += r.estimate(l)
		}
	}
	return left + 4*r.estimate(max(top, 1.5))
}

func (r *run) progress(st StepRun, phase rounds.Phase, done *Step) {
	if r.cfg.Progress == nil {
		return
	}
	p := Progress{Step: st, Phase: phase, Done: done, Elapsed: time.Since(r.begun)}
	p.Remaining = r.remaining()
	p.RemainingKnown = r.cfg.Span > 0
	r.cfg.Progress(p)
}

// answer fills each side's answer, first break and model from its steps.
func (r *run) answer() {
	for _, so := range r.out.Sides {
		s := r.searches[so.Side]
		so.Baseline = r.baseline[so.Side]
		if so.Baseline == nil {
			continue
		}
		a := s.Answer()
		so.Answer = &a
		so.StepSeconds = StepSeconds(r.cfg.Span.Seconds(), a.UpperK())
		var pts []Point
		var first *FirstBreak
		for _, st := range so.Steps {
			if st.Measurement == nil {
				continue
			}
			pts = append(pts, Point{K: st.K, X: st.Measurement.StatementsPerS})
			v := st.Verdict
			if v == nil {
				continue
			}
			if v.Bound != judge.BoundTarget && so.BoundWhy == "" {
				so.BoundWhy = fmt.Sprintf("at %gx asked (%.2fx achieved): %s", st.K, v.AchievedK, v.Why)
			}
			if v.Held || v.Bound != judge.BoundTarget || len(v.Broken) == 0 || !s.allBroke(st.K) {
				// A round that broke where another held at the same k
				// is within the noise: not the first break.
				continue
			}
			if first == nil || st.K < first.AskedK || (same(st.K, first.AskedK) && v.Broken[0].Margin > first.Margin) {
				first = &FirstBreak{K: v.AchievedK, AskedK: st.K, Break: v.Broken[0]}
			}
		}
		so.FirstBreak = first
		if u, ok := FitUSL(pts); ok {
			so.USL = &u
		}
		so.Peak, so.Knee = peakAndKnee(so.Steps)
	}
}

// peakAndKnee is the peak and the knee of a side's throughput over the ks
// asked, each k's rounds its repeats; nil without two ks measured.
func peakAndKnee(steps []Step) (*CurvePeak, *CurveKnee) {
	var levels []stepcurve.Level
	for _, st := range steps {
		m := st.Measurement
		if m == nil {
			continue
		}
		i := slices.IndexFunc(levels, func(l stepcurve.Level) bool { return same(l.X, st.K) })
		if i < 0 {
			levels = append(levels, stepcurve.Level{X: st.K})
			i = len(levels) - 1
		}
		levels[i].Throughput = append(levels[i].Throughput, m.StatementsPerS)
		levels[i].Latency = append(levels[i].Latency, m.MeanMS)
	}
	if len(levels) < 2 {
		return nil, nil
	}
	var peak *CurvePeak
	if p := stepcurve.FindPeak(levels, stepcurve.Options{}); p != nil {
		peak = &CurvePeak{K: p.X, StatementsPerS: p.Throughput, Lo: p.Lo, Hi: p.Hi}
	}
	var knee *CurveKnee
	if k := stepcurve.FindKnee(levels, stepcurve.Options{}); k != nil {
		knee = &CurveKnee{Found: k.Found, UpTo: k.UpTo}
		if k.Found {
			knee.K, knee.StatementsPerS, knee.MeanMS, knee.Lo, knee.Hi = k.X, k.Throughput, k.Latency, k.Lo, k.Hi
		}
	}
	return peak, knee
}
