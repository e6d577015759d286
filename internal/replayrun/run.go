package replayrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/replay/targetlog"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// Config is one replay run.
type Config struct {
	// Input is what to replay: logs and captures named by path
	// (source.Paths), or events held in memory (source.Memory). Source
	// says how to open it (format, prefix, time zone, mixed sources,
	// warnings; its Parts and Select are the run's). Selection selects
	// the workload: time window, filters, shard.
	Input     source.Origin
	Source    source.Options
	Selection source.Selection

	// Replay configures the engine: target, speed, maps, timeouts,
	// synchronization, sink.
	Replay replay.Options
	// Grace is how long statements in flight may finish once ctx is
	// done, before they are cancelled; Hard, when it is closed, cancels
	// them at once (a second Ctrl-C). Zero Grace means
	// replay.DefaultGrace.
	Grace time.Duration
	Hard  <-chan struct{}

	// SkipPreflight does not check the target's logins before the
	// replay (a dry run never does).
	SkipPreflight bool
	// IgnoreConnectionLimit replays even when the input's peak of
	// sessions open at once exceeds the target's free connection slots
	// (the pre-flight then only warns); a rehearsal sets it on its
	// rounds after checking both targets before the first.
	IgnoreConnectionLimit bool
	// StartCheck says whether the pre-flight compares the target with
	// the starting point the captures recorded, and whether a difference
	// fails it (see StartCheckMode); the zero value warns.
	StartCheck StartCheckMode
	// TargetLogs are the target's own log files, read after the replay
	// for server-side durations (package replay/targetlog), or patterns
	// of them (targetlog.Expand: one that matches no file is an
	// OptionsError); prefix is their log_line_prefix when stderr, empty:
	// detected.
	TargetLogs      []string
	TargetLogPrefix string
	// Observe, when not nil, collects server-side evidence from the
	// target during the replay (package observe).
	Observe *observe.Options
	// Findings names the known traps of the workload as the target ran
	// it; FindingsDSN gives them the catalog of the target's database
	// with the workload's schema. Empty, the target is used, in the
	// database most of the logins checked before the replay use.
	Findings    bool
	FindingsDSN string

	// BatchInserts, when above 0, sends each session's consecutive
	// single-row INSERTs into one table as multi-row INSERTs of up to
	// that many rows (package batch; 1 counts them without merging),
	// and measures what they cost the target: Result.BatchInserts.
	BatchInserts int

	// MaxSkipped is the share of unreadable lines (0.1: 10%) beyond
	// which nothing is measured; MaxErrorRate the percentage points by
	// which the target's error rate may exceed the original's.
	MaxSkipped   float64
	MaxErrorRate float64

	// Part says which part of the input this run is (a shard, a round),
	// written into the result with the shard of Selection.
	Part *results.Part
	// Shards says how a shard (Selection.Shard) meets the other shards
	// of its replay: run name, start barrier, coordination database.
	Shards *Shards

	// Describe words why nothing was measured, for the result; nil:
	// the reason's own words, which name no flag.
	Describe func(*source.Nothing) string
	// Warn receives what the user should know on the way (the observer
	// unavailable, what it will lack); nil: dropped.
	Warn func(string)
	// OnPreflight is told what the pre-flight found, before the replay
	// starts; OnStart is told the replay started (for a progress line,
	// from Replayer.Progress and the set's), and OnEnd that it ended.
	OnPreflight func(*Preflight)
	OnStart     func(*replay.Replayer, *source.Set)
	OnEnd       func()
}

// Pre-flight bounds: the logins are gathered from the logs for at most
// PreflightScan, keeping at most PreflightMemory bytes of events for the
// replay (the logs are read once: what the pre-flight read is replayed
// from memory), and each check may take PreflightTimeout. A log larger
// than that is checked in part; later logins are checked when their
// sessions connect.
const (
	PreflightScan    = 3 * time.Second
	PreflightMemory  = 64 << 20
	PreflightTimeout = 5 * time.Second
)

// Run replays the logs of cfg against the target and returns what
// happened: the result, the evidence and findings, and why the run is
// not a clean measurement, as values (Outcome.Reasons). The error is for
// what stopped the run before it produced a result: bad options, logs
// that cannot be opened (*source.Nothing, *source.Mixed and the like), a
// log without times, a failed pre-flight (*PreflightError).
//
// When ctx is done (Ctrl-C), no new statement is issued; statements in
// flight finish within Grace. The result of what ran is still returned,
// marked partial.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if err := cfg.Replay.Validate(); err != nil {
		return nil, &OptionsError{Err: err}
	}
	if len(cfg.TargetLogs) > 0 && cfg.Replay.DryRun {
		return nil, &OptionsError{Err: errors.New("the target's log needs a replay that runs, not a dry run")}
	}
	if len(cfg.TargetLogs) > 0 {
		logs, err := targetlog.Expand(cfg.TargetLogs)
		if err != nil {
			return nil, &OptionsError{Err: err}
		}
		cfg.TargetLogs = logs
	}
	cache := cfg.Replay.Cache
	if cache == nil {
		cache = fingerprint.NewCache(0)
		cfg.Replay.Cache = cache
	}

	sh, err := prepareShards(&cfg)
	if err != nil {
		return nil, err
	}
	set, err := openInput(&cfg)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	if files := set.Timeless(); len(files) > 0 {
		return nil, &TimelessError{Files: files}
	}
	if err := sh.checkPlan(set); err != nil {
		return nil, err
	}
	r, err := replay.New(cfg.Replay)
	if err != nil {
		sh.fail()
		return nil, &OptionsError{Err: err}
	}

	// The pre-flight looks at the logs' beginning; the replay reads the
	// same events again from memory, then reads on.
	ahead := source.NewLookahead(set.Sources(), PreflightMemory)
	var pf *Preflight
	if !cfg.Replay.DryRun && !cfg.SkipPreflight {
		if pf, err = preflight(ctx, cfg, r, set, ahead); err != nil {
			sh.fail()
			if ctx.Err() != nil {
				// Its logins failed for being cut short.
				return nil, &InterruptedError{Err: err}
			}
			return nil, err
		}
		if cfg.OnPreflight != nil {
			cfg.OnPreflight(pf)
		}
	}
	// Joined once ready (the pre-flight passed): the rendezvous fixes
	// the start when every shard is.
	if err := sh.join(ctx, &cfg, set); err != nil {
		return nil, err
	}
	if err := sh.barrier(ctx, r); err != nil {
		sh.fail()
		return nil, err
	}
	var tlogs *targetlog.Files
	if len(cfg.TargetLogs) > 0 {
		tlogs = targetlog.Note(cfg.TargetLogs, cfg.TargetLogPrefix)
	}
	stopObserve, markObserve := startObserve(ctx, cfg)

	grace := cfg.Grace
	if grace <= 0 {
		grace = replay.DefaultGrace
	}
	hard, cancelHard := replay.HardStop(ctx, grace, cfg.Hard)
	defer cancelHard()
	if cfg.OnStart != nil {
		cfg.OnStart(r, set)
	}
	srcs, batched := batchInserts(ctx, cfg, ahead.Sources())
	ran := make(chan struct{})
	go markWindow(r.WindowEnd(), markObserve, ran)
	res, runErr := r.Run(ctx, hard, srcs)
	close(ran)
	if cfg.OnEnd != nil {
		cfg.OnEnd()
	}
	// Evidence that could not be collected only loses its sections; the
	// observer said why.
	evidence := stopObserve()
	if res == nil {
		sh.fail()
		return nil, runErr
	}
	o := &Outcome{Result: res, Evidence: evidence, Preflight: pf, Err: runErr}
	res.StartDigests = startDigests(pf)
	if evidence != nil {
		replay.NoteTargetWaits(res, targetWaits(evidence))
	}
	res.Input = set.Input()
	res.Part = part(cfg)
	if evidence != nil {
		if res.Evidence, err = json.Marshal(evidence); err != nil {
			return nil, fmt.Errorf("encode the evidence: %w", err)
		}
	}
	batched.finish(ctx, cfg, res)
	o.markUnmeasured(cfg, set)
	sh.finish(&cfg, res, runErr == nil && !res.Partial)
	if tlogs != nil && runErr == nil {
		o.TargetLogErr = tlogs.ServerSide(hard, r.Connections(), cache, cfg.Replay.Target, res)
	}
	o.evaluateFindings(ctx, cfg)
	o.reasons(cfg.MaxErrorRate)
	return o, nil
}

// markUnmeasured marks o's result incomplete when its input yielded
// nothing to measure, or was cut short: a log that yields nothing is said
// loudly, and its result marked so that report will not judge it; so is
// a log cut short.
func (o *Outcome) markUnmeasured(cfg Config, set *source.Set) {
	res := o.Result
	if o.Nothing = set.Measured(res.Statements.Total, cfg.MaxSkipped); o.Nothing == nil {
		o.Nothing = set.OnlyErrors(res.Outcomes.Ran, res.Outcomes.OriginalFailed)
	}
	if o.Nothing != nil && !res.Partial {
		describe := cfg.Describe
		if describe == nil {
			describe = func(n *source.Nothing) string { return n.Error() }
		}
		res.MarkIncomplete(results.IncompleteNothingMeasured, describe(o.Nothing))
	}
	if cut := set.Partial(); cut != nil {
		o.Cut = cut.(*source.Cut)
		res.Partial = true
		res.MarkIncomplete(results.IncompleteInputCut, cut.Error())
	}
}

// evaluateFindings evaluates the findings of o's result when cfg asks
// for them, on cfg.FindingsDSN or else on the target in the workload's
// database (o.Preflight's), without a server when the target refuses.
func (o *Outcome) evaluateFindings(ctx context.Context, cfg Config) {
	res := o.Result
	// A log of errors alone has no error rate to judge: the server did
	// not log what succeeded.
	onlyErrors := o.Nothing != nil && o.Nothing.Reason == source.NothingOnlyErrors
	if !cfg.Findings || res.Partial || res.DryRun || onlyErrors {
		return
	}
	if cfg.FindingsDSN != "" {
		o.Findings, o.FindingsErr = replayFindings(ctx, cfg, res, cfg.FindingsDSN, "")
		return
	}
	// The target, not asked for: when it does not take the findings'
	// connection, they go without it and say so.
	db := WorkloadDatabase(o.Preflight)
	o.Findings, o.FindingsErr = replayFindings(ctx, cfg, res, cfg.Replay.Target, db)
	if o.FindingsErr != nil && !errors.Is(o.FindingsErr, findings.ErrInterrupted) {
		if cfg.Warn != nil {
			cfg.Warn(fmt.Sprintf("the findings cannot use the target (%v); those that need its catalog are not evaluated", o.FindingsErr))
		}
		o.Findings, o.FindingsErr = replayFindings(ctx, cfg, res, "", "")
	}
}

// openInput opens the run's input with its source options and its
// selection. Events must come in log order: one source per file, never
// parts.
func openInput(cfg *Config) (*source.Set, error) {
	if cfg.Input == nil {
		return nil, &OptionsError{Err: errors.New("nothing to replay: no input given")}
	}
	so := cfg.Source
	so.Parts, so.Select = 1, &cfg.Selection
	return cfg.Input.Open(so)
}

// part is the result's part: cfg's, with the selection's shard.
func part(cfg Config) *results.Part {
	var p *results.Part
	if cfg.Part != nil {
		c := *cfg.Part
		p = &c
	}
	if sh := cfg.Selection.Shard; sh.Splits() {
		if p == nil {
			p = &results.Part{}
		}
		p.Shards, p.Of, p.Plan = []int{sh.K}, sh.Of, sh.Plan
	}
	return p
}

// startObserve starts the observer when asked; the returned function
// stops it and returns the evidence, nil when there is none. A target
// that cannot be observed (no rights, connections refused) gets a warning
// and the replay goes on without evidence.
func startObserve(ctx context.Context, cfg Config) (stop func() *observe.Evidence, mark func()) {
	none := func() *observe.Evidence { return nil }
	if cfg.Observe == nil || cfg.Replay.DryRun || cfg.Replay.Target == "" {
		return none, func() {}
	}
	warn := func(format string, args ...any) {
		if cfg.Warn != nil {
			cfg.Warn(fmt.Sprintf(format, args...))
		}
	}
	start, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	o, err := observe.Start(start, cfg.Replay.Target, *cfg.Observe)
	if err != nil {
		warn("the target cannot be observed, no server-side evidence: %v", err)
		return none, func() {}
	}
	for _, w := range o.StartWarnings() {
		warn("observe: %s", w)
	}
	return func() *observe.Evidence {
		ev, err := o.Stop()
		if err != nil {
			warn("%v", err)
		}
		return ev
	}, o.Mark
}

// markWindow calls mark at the end of the replay's schedule window,
// which end gives once the replay's clock started, unless the replay
// has ended (ran closed) before: the observer's snapshot of the window
// (observe.Collector.Mark, results.Window).
func markWindow(end <-chan time.Time, mark func(), ran <-chan struct{}) {
	var at time.Time
	select {
	case at = <-end:
	case <-ran:
		return
	}
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		mark()
	case <-ran:
	}
}

// WorkloadDatabase is the database most of the logins the pre-flight
// checked use (the first of them on a tie), empty without any: the
// target DSN's own.
func WorkloadDatabase(pf *Preflight) string {
	if pf == nil {
		return ""
	}
	n := map[string]int{}
	best := ""
	for _, c := range pf.Checks {
		if c.Database == "" || c.Problem != replay.ProblemNone {
			continue
		}
		n[c.Database]++
		if best == "" || n[c.Database] > n[best] {
			best = c.Database
		}
	}
	return best
}

// replayFindings names the traps of the replayed workload as the target
// ran it, with the target's catalog when dsn is given. A statement whose
// normalized text does not plan is explained with an execution read
// from cfg's input (Examples).
func replayFindings(ctx context.Context, cfg Config, res *results.Result, dsn, database string) (*findings.Report, error) {
	in := findings.Input{Workload: findings.FromResult(res), Observed: findings.ObservedFromResult(res)}
	var found map[string]results.Sample
	in.Examples = func(fp string) *results.Sample {
		if found == nil {
			fps := make([]string, 0, len(res.Queries))
			for _, q := range res.Queries {
				fps = append(fps, q.Fingerprint)
			}
			// Without examples (an input that cannot be read again),
			// such a statement says it has no sample.
			found, _ = Examples(ctx, cfg, fps)
			if found == nil {
				found = map[string]results.Sample{}
			}
		}
		if s, ok := found[fp]; ok {
			return &s
		}
		return nil
	}
	rep, _, err := judge.Findings(ctx, in, judge.Catalog{DSN: dsn, Database: database, Required: true}, nil, findings.Options{})
	return rep, err
}

// OptionsError is Run's error for options that cannot run.
type OptionsError struct{ Err error }

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// TimelessError is Run's error for logs whose lines have no time: a
// replay cannot keep their pace, nor their sessions' order against each
// other.
type TimelessError struct{ Files []string }

func (e *TimelessError) Error() string {
	return fmt.Sprintf("the lines of %s have no time (a log_line_prefix without %%m, %%t or %%n, or an export without its timestamps): "+
		"a replay cannot keep their pace nor order their sessions; capture the log with %%m in log_line_prefix (analyze still measures it)", strings.Join(e.Files, ", "))
}

// targetWaits are the wait events the observer sampled on the target,
// most first, for the lag warning.
func targetWaits(ev *observe.Evidence) []replay.WaitShare {
	var out []replay.WaitShare
	for _, w := range ev.Waits.Events {
		name := w.Type + "/" + w.Event
		if w.Type == w.Event {
			name = w.Type
		}
		out = append(out, replay.WaitShare{Event: name, Share: w.Share})
	}
	return out
}
