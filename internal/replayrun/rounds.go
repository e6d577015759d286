package replayrun

import (
	"context"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// Round is one of the replays of a command that replays a workload
// several times: a rehearsal's round, a headroom step, one slice of a
// folded step. It says what differs from the command's Config.
type Round struct {
	// Target is the round's server, DatabaseMap its map of the logged
	// databases to those the round replays into (a reset's copies).
	Target      string
	DatabaseMap map[string]string
	// TargetLogs are the target's log files for the round's server-side
	// durations; none: the Config's.
	TargetLogs []string
	// Part says which round this is, written into its result.
	Part *results.Part
	// Speed, when not 0, replaces the Config's speed (a load level).
	Speed float64
	// Window, when its Start is set, narrows the Config's time window
	// to [Start, End) (a slice of a folded step); an End of 0 keeps the
	// Config's.
	Window source.Selection
	// Fold, when set, replays the Config's input folded (a fold's
	// step: Load.Rounds).
	Fold *Fold
	// BatchInserts, when not 0, replaces the Config's (a rehearsal's
	// rounds with batched INSERTs).
	BatchInserts int
	// CatalogFrom and CatalogDatabaseMap, when set, are where the
	// synchronization reads its catalog (replay.Options.CatalogFrom: a
	// rehearsal's candidate reads the control's).
	CatalogFrom        string
	CatalogDatabaseMap map[string]string
}

// RunRound replays one round of a command that replays a workload
// several times (cfg is the command's Config.Round for it), and returns
// its outcome with what of it stops the command: stop, as RoundStop
// says (overloaded: a load level above the workload's own). A replay
// interrupted by ctx stops nothing there (stop has no reason): its
// partial result is the round runner's to drop. err is Run's.
func RunRound(ctx context.Context, cfg Config, overloaded bool) (o, stop *Outcome, err error) {
	o, err = Run(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if o.Has(ReasonInterrupted) && ctx.Err() != nil {
		return o, &Outcome{Result: o.Result}, nil
	}
	return o, o.RoundStop(overloaded), nil
}

// Round is cfg for one round r: onto r's target with r's map, logs and
// part, at r's speed and in r's window when set. Each round keeps its
// own executions (a new sampler when cfg samples) and its own observer
// options.
func (cfg Config) Round(r Round) Config {
	cfg.Replay.Target = r.Target
	cfg.Replay.DatabaseMap = r.DatabaseMap
	if len(r.TargetLogs) > 0 {
		cfg.TargetLogs = r.TargetLogs
	}
	cfg.Part = r.Part
	if r.Speed != 0 {
		cfg.Replay.Speed = r.Speed
	}
	if r.BatchInserts != 0 {
		cfg.BatchInserts = r.BatchInserts
	}
	if r.CatalogFrom != "" {
		cfg.Replay.CatalogFrom, cfg.Replay.CatalogDatabaseMap = r.CatalogFrom, r.CatalogDatabaseMap
	}
	if r.Window.Start != 0 {
		end := cfg.Selection.End
		cfg.Selection.Start = max(cfg.Selection.Start, r.Window.Start)
		cfg.Selection.End = r.Window.End
		if r.Window.End == 0 || (end != 0 && end < r.Window.End) {
			cfg.Selection.End = end
		}
	}
	if f := r.Fold; f != nil {
		cfg.Input = source.Fold{Of: cfg.Input, K: f.K, First: f.First, Width: f.Width}
	}
	if cfg.Replay.Samples != nil {
		cfg.Replay.Samples = results.NewSampler(0)
	}
	if cfg.Observe != nil {
		o := *cfg.Observe
		cfg.Observe = &o
	}
	return cfg
}

// RoundStop is what of a round's outcome stops the command that runs
// the rounds: o with the reasons that would fail the replay command,
// less those a comparison of the rounds judges (the error rate, a
// divergence from the original, the target's data differing from the
// capture's start) and, when overloaded (a load level
// above the workload's own), those the load itself causes (a replay
// that could not finish, connections refused, a degraded or lost
// target): there they are the level's failure, not the command's.
func (o *Outcome) RoundStop(overloaded bool) *Outcome {
	stop := *o
	stop.Reasons = slices.DeleteFunc(slices.Clone(o.Reasons), func(why Reason) bool {
		switch why {
		case ReasonErrorRate, ReasonDiverged, ReasonTargetData:
			return true
		case ReasonIncomplete, ReasonConnectFailures, ReasonDegraded, ReasonTargetGone:
			return overloaded
		}
		return false
	})
	return &stop
}
