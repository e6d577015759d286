package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// shardBinary finds the program a headroom step runs its shards with:
// this pgrehearse's own binary, and what its environment needs beyond
// this process's. Tests, whose binary is the test binary, replace it.
var shardBinary = func() (path string, env []string, err error) {
	p, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Stat(p); err != nil {
		return "", nil, err
	}
	return p, nil, nil
}

// forwardedFlags are the replay options given on headroom's command line
// that a shard process is started with as given: every flag replay and
// headroom share (addReplayOptionFlags) except those a step sets itself
// (its speed, database map, window, pre-flight and observer).
func forwardedFlags(cmd *cobra.Command) []string {
	own := pflag.NewFlagSet("replay options", pflag.ContinueOnError)
	addReplayOptionFlags(own, &replayFlags{}, replayrun.SyncLoad)
	perStep := map[string]bool{"speed": true, "database-map": true, "start": true, "end": true, "skip-preflight": true, "require-start-state": true, "observe": true}
	var out []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if own.Lookup(f.Name) == nil || perStep[f.Name] {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name, v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return out
}

// shardReplay is how --shards' steps replay (replayrun.ShardReplay): the
// shards as processes of this binary when it is found, else inside this
// process. It returns what the opening line says of them.
func (h *headroomRun) shardReplay() (*replayrun.ShardReplay, string) {
	f := h.f
	s := &replayrun.ShardReplay{N: f.shards, CoordDSN: f.coordDSN, Hard: h.replay.Hard}
	bin, env, err := shardBinary()
	if err != nil {
		return s, fmt.Sprintf("; every step in %d shards at once inside this process (this pgrehearse's binary was not found to start them as processes: %v), meeting in the coordination database", f.shards, err)
	}
	s.Procs = &replayrun.ShardProcs{
		Bin: bin, Env: env, Clean: withoutDSNEnv, Args: h.shardArgs, DSNEnv: h.shardDSNEnv,
		Exit:        replayrun.ShardExit{OK: ExitOK, Failure: ExitFailure, Incomplete: ExitIncomplete},
		FailureText: report.ShardFailureText,
	}
	return s, fmt.Sprintf("; every step in %d shards at once, each a process (%s replay --shard K/%d), meeting in the coordination database", f.shards, bin, f.shards)
}

// replayShards replays a step (or one slice of a fold) split by session
// into --shards shards at once (replayrun.ShardReplay).
func (h *headroomRun) replayShards(ctx context.Context, st headroom.StepRun, cfg replayrun.Config, start time.Time, sel source.Selection) (*results.Result, error) {
	run := fmt.Sprintf("%s-step%d-%s", h.runID, st.Seq, st.Side)
	if sel.Start != 0 {
		run += fmt.Sprintf("-slice%d", sel.Start)
	}
	s := *h.shards
	if s.Procs != nil {
		p := *s.Procs
		label := fmt.Sprintf("headroom: step %d", st.Seq)
		p.Relay = func(k int, out string) { h.relayShardLines(st, k, out) }
		p.Started = func(k, n, pid int, slice int64) { report.WriteShardStarted(h.stdio.Stderr, label, k, n, pid, slice) }
		p.Failed = func(k, n, pid int, out string) { report.WriteShardFailed(h.stdio.Stderr, label, k, n, pid, out) }
		s.Procs = &p
	}
	m, err := s.Replay(ctx, cfg, replayrun.ShardRound{
		Run:  run,
		Part: results.Part{Round: st.N, Side: st.Side}, Load: h.load(st), Overloaded: st.K > 1,
		Replay: func(ctx context.Context, c replayrun.Config) (*results.Result, error) {
			return h.runReplay(ctx, st, c, start)
		},
	})
	if err == nil && s.Procs != nil {
		h.shown.set(st.Side)
	}
	return m, err
}

// shardArgs are the arguments of shard k's process: replay of shard
// k/n of run, with everything the step sets (speed, database map with
// the reset's copies, window, the target's logs) as flags, but its
// connection strings, which the environment gives.
func (h *headroomRun) shardArgs(cfg replayrun.Config, run string, k, n int, jsonPath string) []string {
	args := []string{"replay", "--shard", fmt.Sprintf("%d/%d", k, n), "--run-id", run,
		"--json", jsonPath, "--speed", strconv.FormatFloat(cfg.Replay.Speed, 'g', -1, 64),
		// The step's errors are the SLO's to judge (the unsharded
		// step's replay has no error window either); findings are not
		// a headroom's.
		"--findings=false", "--max-error-rate=100", "--error-window=0", "--sync=" + cfg.Replay.Sync.String()}
	args = append(args, h.f.forward...)
	for _, from := range slices.Sorted(maps.Keys(cfg.Replay.DatabaseMap)) {
		args = append(args, "--database-map", from+"="+cfg.Replay.DatabaseMap[from])
	}
	if s := cfg.Selection.Start; s != 0 {
		args = append(args, "--start", time.UnixMicro(s).UTC().Format(time.RFC3339Nano))
	}
	if e := cfg.Selection.End; e != 0 {
		args = append(args, "--end", time.UnixMicro(e).UTC().Format(time.RFC3339Nano))
	}
	for _, l := range cfg.TargetLogs {
		args = append(args, "--target-log", l)
	}
	// One observer and one pre-flight: the first shard's.
	if cfg.SkipPreflight || k > 0 {
		args = append(args, "--skip-preflight")
	} else if cfg.StartCheck == replayrun.StartCheckRequire {
		args = append(args, "--require-start-state")
	}
	if cfg.Observe == nil || k > 0 {
		args = append(args, "--observe=false")
	}
	return append(append(args, "--"), h.paths...)
}

// shardDSNEnv is what a shard process's environment adds to this one's:
// the step's target and the coordination database, as the environment
// variables replay reads its --target and --coord-dsn from (dsnEnv). On
// a command line, a password in either would be read by every user of
// the machine (ps); a process's environment only by its own user.
func (h *headroomRun) shardDSNEnv(cfg replayrun.Config) []string {
	return []string{dsnEnv("target") + "=" + cfg.Replay.Target, dsnEnv("coord-dsn") + "=" + h.f.coordDSN}
}

// relayShardLines passes on what a shard process that ended well said
// for the user: its warnings (pgrehearse: ...), once each across the
// run's shards, and the first shard's pre-flight line the first time a
// side is replayed.
func (h *headroomRun) relayShardLines(st headroom.StepRun, k int, out string) {
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, replayrun.ErrorLinePrefix) && h.replay.Warn != nil:
			h.replay.Warn(strings.TrimPrefix(l, replayrun.ErrorLinePrefix))
		case strings.HasPrefix(l, "pre-flight: ") && k == 0 && !h.shown.has(st.Side):
			fmt.Fprintln(h.stdio.Stderr, l)
		}
	}
}
