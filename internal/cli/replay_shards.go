package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/coord"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/shard"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// shardFlags split a replay by session across several processes
// (docs/sharding.md): which shard this one is, the plan, the run, the
// start barrier and the coordination database.
type shardFlags struct {
	shard    string
	shards   int
	plan     string
	coordDSN string
	runID    string
	startAt  string
	// syncGiven: --sync was given, not left at its default.
	syncGiven bool
	// getenv reads JOB_COMPLETION_INDEX; os.Getenv unless a test sets it.
	getenv func(string) string
}

const shardsHelp = `
A replay can be split by session across several processes or machines
(docs/sharding.md, deploy/kubernetes): --shard K/N replays only the sessions
of shard K (counted from 0) of N; --shards N takes K from ` + shard.IndexEnv + `,
which Kubernetes sets in the pods of an Indexed Job. Sessions are placed by a
stable hash of their id, or by a plan (--plan, made by "pgrehearse plan" from
the same logs). Every shard reads the whole log and skips the others'
sessions. At speed > 0 the shards need one start: --start-at TIME, or a
rendezvous in a coordination database (--coord-dsn, a PostgreSQL database
that is not the target, with --run-id naming the run, the same for every
shard), which also measures each shard's clock offset and, with --sync, makes
a statement wait for the commits it depends on in other shards. Without
--coord-dsn each shard waits only for its own sessions' commits, and its
result says so; it cannot keep the answers order either: left at its
default, --sync runs as object there and says so, and --sync answers is
refused. "pgrehearse merge" then merges the shards' results.
`

func addShardFlags(fl *pflag.FlagSet, f *shardFlags) {
	fl.StringVar(&f.shard, "shard", "", "replay only shard `K/N` of the log's sessions (K from 0), split by --plan or by a stable hash of the session id")
	fl.IntVar(&f.shards, "shards", 0, "replay one shard of `N`, K taken from "+shard.IndexEnv+" (set by Kubernetes in an Indexed Job's pods)")
	fl.StringVar(&f.plan, "plan", "", "place sessions in shards by this shard plan (pgrehearse plan --out `FILE`, made from the same logs)")
	dsnVar(fl, &f.coordDSN, "coord-dsn", "coordination database of the shards (not the target): a rendezvous for one start, clock offsets, and commits waited for across shards")
	fl.StringVar(&f.runID, "run-id", "", "name of the sharded run, the same for every shard (with --coord-dsn; a Job's uid)")
	fl.StringVar(&f.startAt, "start-at", "", "start every shard's schedule at this time (RFC 3339), instead of a rendezvous")
}

// apply puts the shard options into cfg; the selection's shard and the
// run's Shards. A replay that is not split is left as it was.
func (f shardFlags) apply(cfg *replayrun.Config) error {
	getenv := f.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var spec shard.Spec
	var err error
	switch {
	case f.shard != "" && f.shards != 0:
		return usageError("--shard K/N and --shards N say the same: give one")
	case f.shard != "":
		if spec, err = shard.ParseSpec(f.shard); err != nil {
			return usageError("--shard: %v", err)
		}
	case f.shards != 0:
		if f.shards < 1 {
			return usageError("--shards must be at least 1, got %d", f.shards)
		}
		if spec, err = shard.SpecFromIndex(getenv(shard.IndexEnv), f.shards); err != nil {
			return usageError("--shards: %v; or give the shard with --shard K/N", err)
		}
	}
	var plan *shard.Plan
	if f.plan != "" {
		if plan, err = readShardPlan(f.plan); err != nil {
			return err
		}
		switch {
		case spec.N == 0:
			return usageError("--plan needs the shard this process replays: --shard K/N or --shards N")
		case spec.N != plan.Shards:
			return usageError("--plan %s splits the sessions into %d shards, not %d", f.plan, plan.Shards, spec.N)
		}
	}
	if spec.N <= 1 {
		if f.plan != "" || f.coordDSN != "" || f.runID != "" || f.startAt != "" {
			return usageError("--plan, --coord-dsn, --run-id and --start-at are for a replay split in shards (--shard K/N or --shards N, N > 1)")
		}
		return nil
	}
	sh := &replayrun.Shards{Run: f.runID, Plan: plan, Coord: coord.Config{DSN: f.coordDSN}, SyncGiven: f.syncGiven}
	if f.startAt != "" {
		if sh.StartAt, err = time.Parse(time.RFC3339Nano, f.startAt); err != nil {
			return usageError("--start-at %q: give an RFC 3339 time, such as 2026-11-23T14:00:00Z", f.startAt)
		}
	}
	if f.coordDSN != "" && f.runID == "" {
		return usageError("--coord-dsn needs --run-id: a name for the run, the same for every shard (in Kubernetes, the Job's uid)")
	}
	if cfg.Replay.Speed > 0 && !cfg.Replay.DryRun && f.startAt == "" && f.coordDSN == "" {
		return usageError("shard %s at speed %g needs one start with the other shards: --start-at TIME or --coord-dsn (a rendezvous); "+
			"without it each shard's schedule starts when its process does", spec, cfg.Replay.Speed)
	}
	if plan != nil {
		cfg.Selection.Shard = source.PlanShard(plan, spec.K)
	} else {
		cfg.Selection.Shard = source.Shard{K: spec.K, Of: spec.N}
	}
	cfg.Shards = sh
	return nil
}

// readShardPlan reads a plan file, with the flag's name in its errors.
func readShardPlan(path string) (*shard.Plan, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, usageError("--plan: %v", err)
	}
	defer fh.Close()
	p, err := shard.Decode(fh)
	if err != nil {
		return nil, usageError("--plan %s: %v", path, err)
	}
	return p, nil
}

// metricLabels are the labels of a shard's metrics: its shard number,
// so that the shards of one run are told apart; nil when not split.
func metricLabels(cfg *replayrun.Config) prometheus.Labels {
	if sh := cfg.Selection.Shard; sh.Splits() {
		return prometheus.Labels{"shard": fmt.Sprint(sh.K)}
	}
	return nil
}
