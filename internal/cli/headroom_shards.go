package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/coord"
	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
	"github.com/pgrehearse/pgrehearse/internal/tailbuf"
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

// checkCoord connects to the shards' coordination database once, so
// that one that cannot be reached stops the run before any target is
// reset, rather than every shard of the first step.
func checkCoord(ctx context.Context, dsn string) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, dsn)
	if err != nil {
		return fmt.Errorf("--coord-dsn: the shards' coordination database cannot be reached: %w; nothing was done", err)
	}
	return conn.Close(ctx)
}

// Where a step's shards run.
const (
	shardsProcesses = "processes"
	shardsInProcess = "in_process"
)

// forwardedFlags are the replay options given on headroom's command line
// that a shard process is started with as given: every flag replay and
// headroom share (addReplayOptionFlags) except those a step sets itself
// (its speed, database map, window, pre-flight and observer).
func forwardedFlags(cmd *cobra.Command) []string {
	own := pflag.NewFlagSet("replay options", pflag.ContinueOnError)
	addReplayOptionFlags(own, &replayFlags{}, syncdep.Object)
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

// replayShards replays a step (or one slice of a fold) split by session
// into --shards shards at once, as "pgrehearse replay --shard K/N
// --coord-dsn" splits a replay across processes: each shard replays its
// sessions, they start together at the coordination database's
// rendezvous, and a statement waits there for the commits it depends on
// in other shards (with --sync). Their results are merged as
// "pgrehearse merge" merges shards, into the step's.
//
// Each shard is a process of its own (this binary's replay command), so
// the shards' CPU adds up beyond one process's; only when the binary
// cannot be found do they run in this process (h.shardMode says which).
func (h *headroomRun) replayShards(ctx context.Context, st headroom.StepRun, cfg replayrun.Config, start time.Time, sel source.Selection) (*results.Result, error) {
	run := fmt.Sprintf("%s-step%d-%s", h.runID, st.Seq, st.Side)
	if sel.Start != 0 {
		run += fmt.Sprintf("-slice%d", sel.Start)
	}
	if h.shardMode == shardsProcesses {
		return h.shardProcesses(ctx, st, cfg, run)
	}
	return h.shardsInProcess(ctx, st, cfg, start, run)
}

// shardsInProcess runs the shards in this process, each a replay of its
// own (its own dispatcher and sessions); their CPU is this one process's.
func (h *headroomRun) shardsInProcess(ctx context.Context, st headroom.StepRun, cfg replayrun.Config, start time.Time, run string) (*results.Result, error) {
	n := h.f.shards
	type done struct {
		k   int
		res *results.Result
		err error
	}
	ch := make(chan done, n)
	for k := range n {
		c := cfg
		c.Selection.Shard = source.Shard{K: k, Of: n}
		c.Shards = &replayrun.Shards{Run: run, Coord: coord.Config{DSN: h.f.coordDSN}}
		if k > 0 {
			// One observer, one pre-flight and one progress line: the
			// first shard's.
			c.Observe = nil
			c.SkipPreflight = true
			c.OnPreflight, c.OnStart, c.OnEnd = nil, nil, nil
		}
		go func() {
			res, err := h.runReplay(ctx, st, c, start)
			ch <- done{k, res, err}
		}()
	}
	parts := make([]*results.Result, 0, n)
	var errs []error
	for range n {
		d := <-ch
		if d.err != nil {
			errs = append(errs, fmt.Errorf("shard %d of %d: %w", d.k, n, d.err))
		}
		if d.res != nil {
			parts = append(parts, d.res)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var cpu float64
	for _, p := range parts {
		// Each shard's CPU is the one process's, over the same window.
		if p.Replay != nil {
			cpu = max(cpu, p.Replay.ClientCPUSeconds)
		}
	}
	m, err := results.MergeAll(parts...)
	if err != nil {
		return nil, fmt.Errorf("merge %d shards: %w", n, err)
	}
	if m.Replay != nil {
		m.Replay.ClientCPUSeconds = cpu
	}
	return m, nil
}

// shardArgs are the arguments of shard k's process: replay of shard
// k/n of run, with everything the step sets (speed, database map with
// the reset's copies, window, the target's logs) as flags, but its
// connection strings, which shardDSNEnv gives.
func (h *headroomRun) shardArgs(cfg replayrun.Config, run string, k, n int, jsonPath string) []string {
	args := []string{"replay", "--shard", fmt.Sprintf("%d/%d", k, n), "--run-id", run,
		"--json", jsonPath, "--speed", strconv.FormatFloat(cfg.Replay.Speed, 'g', -1, 64),
		// The step's errors are the SLO's to judge (the unsharded
		// step's replay has no error window either); findings are not
		// a headroom's.
		"--findings=false", "--max-error-rate=100", "--error-window=0"}
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
	return append(args, "--")
}

// shardDSNEnv is what a shard process's environment adds to this one's:
// the step's target and the coordination database, as the environment
// variables replay reads its --target and --coord-dsn from (dsnEnv). On
// a command line, a password in either would be read by every user of
// the machine (ps); a process's environment only by its own user.
func (h *headroomRun) shardDSNEnv(cfg replayrun.Config) []string {
	return []string{dsnEnv("target") + "=" + cfg.Replay.Target, dsnEnv("coord-dsn") + "=" + h.f.coordDSN}
}

// shardProc is one shard's process of a step.
type headroomShardProc struct {
	k    int
	cmd  *exec.Cmd
	json string
	out  *tailbuf.Buffer
	done chan struct{}
	// err is Wait's, once done is closed.
	err error
}

// shardProcesses runs the step's n shards as processes of this binary,
// waits for all of them and merges their results. A shard that cannot
// start, or ends without its result (killed, crashed, refused), fails
// the step, naming it; the other shards are then stopped (SIGTERM: they
// cancel what is in flight and write what ran) and waited for, so that
// none is left running. Ctrl-C is passed on to each (SIGINT), the second
// one as SIGTERM.
func (h *headroomRun) shardProcesses(ctx context.Context, st headroom.StepRun, cfg replayrun.Config, run string) (*results.Result, error) {
	n := h.f.shards
	dir, err := os.MkdirTemp("", "pgrehearse-headroom-shards-")
	if err != nil {
		return nil, fmt.Errorf("a directory for the shards' results: %w", err)
	}
	defer os.RemoveAll(dir)
	var procs []*headroomShardProc
	ended := make(chan *headroomShardProc, n)
	// Whatever happens below, no shard outlives the step.
	defer func() {
		for _, p := range procs {
			select {
			case <-p.done:
			default:
				p.cmd.Process.Kill()
				<-p.done
			}
		}
	}()
	signalAll := func(sig os.Signal) {
		for _, p := range procs {
			select {
			case <-p.done:
			default:
				p.cmd.Process.Signal(sig)
			}
		}
	}
	var startErr error
	procs, startErr = h.startShards(st, cfg, run, dir, ended)
	if startErr != nil {
		// The others would wait at the rendezvous for it: stop them.
		signalAll(syscall.SIGTERM)
		for _, p := range procs {
			<-p.done
		}
		return nil, startErr
	}
	var failed []error
	parts := make([]*results.Result, 0, n)
	interrupted, hard := ctx.Done(), h.replay.Hard
	stopped := false
	// Told to stop (SIGTERM), a shard cancels what is in flight and
	// writes what ran; one that has not ended shardKillAfter later is
	// killed.
	var kill <-chan time.Time
	for left := n; left > 0; {
		select {
		case <-interrupted:
			interrupted = nil
			signalAll(os.Interrupt)
		case <-hard:
			hard = nil
			signalAll(syscall.SIGTERM)
			kill = time.After(shardKillAfter)
		case <-kill:
			signalAll(syscall.SIGKILL)
		case p := <-ended:
			left--
			res, err := h.shardOutcome(ctx, st, p, n)
			if err == nil && p.cmd.ProcessState.ExitCode() == ExitOK {
				h.relayShardLines(st, p)
			}
			if res != nil {
				parts = append(parts, res)
			}
			// A shard stopped because another failed ends as it was
			// told to: only the first failures are the step's.
			if err != nil && !stopped {
				failed = append(failed, err)
				if ctx.Err() == nil && strings.TrimSpace(p.out.String()) != "" {
					fmt.Fprintf(h.stdio.Stderr, "headroom: step %d: shard %d of %d (process %d) failed; the end of its output:\n%s",
						st.Seq, p.k, n, p.cmd.Process.Pid, indent(p.out.String(), "    "))
				}
			}
			if len(failed) > 0 && !stopped {
				// The step has failed: the others need not go on.
				stopped = true
				signalAll(syscall.SIGTERM)
				kill = time.After(shardKillAfter)
			}
		}
	}
	return h.mergeShards(ctx, st, parts, failed)
}

// startShards starts the step's shards, each a process of this binary
// that writes its result into dir and is sent to ended once it ended.
// It returns those started; at the first that cannot start, with its
// error.
func (h *headroomRun) startShards(st headroom.StepRun, cfg replayrun.Config, run, dir string, ended chan<- *headroomShardProc) ([]*headroomShardProc, error) {
	n := h.f.shards
	procs := make([]*headroomShardProc, 0, n)
	for k := range n {
		p := &headroomShardProc{k: k, json: filepath.Join(dir, fmt.Sprintf("shard-%d.json", k)), out: tailbuf.New(16 << 10), done: make(chan struct{})}
		p.cmd = exec.Command(h.shardBin, append(h.shardArgs(cfg, run, k, n, p.json), h.paths...)...)
		p.cmd.Env = append(append(withoutDSNEnv(os.Environ()), h.shardEnv...), h.shardDSNEnv(cfg)...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		p.cmd.SysProcAttr = shardProcAttr()
		if err := p.cmd.Start(); err != nil {
			return procs, fmt.Errorf("shard %d of %d could not start (%s): %w", k, n, h.shardBin, err)
		}
		slice := ""
		if s := cfg.Selection.Start; s != 0 && h.load(st).Folds() {
			slice = ", the slice from " + time.UnixMicro(s).UTC().Format(time.RFC3339Nano)
		}
		fmt.Fprintf(h.stdio.Stderr, "headroom: step %d: shard %d of %d is process %d%s\n", st.Seq, k, n, p.cmd.Process.Pid, slice)
		procs = append(procs, p)
		go func() {
			p.err = p.cmd.Wait()
			close(p.done)
			ended <- p
		}()
	}
	return procs, nil
}

// mergeShards merges the results of the step's shards that wrote one
// into the step's result, and is the step's error: the shards' failures,
// or at 1x a shard's failure its result records.
func (h *headroomRun) mergeShards(ctx context.Context, st headroom.StepRun, parts []*results.Result, failed []error) (*results.Result, error) {
	var m *results.Result
	if len(parts) > 0 {
		var err error
		if m, err = results.MergeAll(parts...); err != nil {
			return nil, errors.Join(append(failed, fmt.Errorf("merge %d shards: %w", len(parts), err))...)
		}
		// The child's results know their shard, not the step's round and
		// side: replay has no flag for those.
		if m.Part == nil {
			m.Part = &results.Part{}
		}
		m.Part.Round, m.Part.Side, m.Part.Load = st.N, st.Side, h.load(st).Part()
	}
	if len(failed) > 0 {
		return m, errors.Join(failed...)
	}
	if m != nil && st.K <= 1 && ctx.Err() == nil {
		if fs := m.ShardFailures(); len(fs) > 0 {
			why := make([]string, len(fs))
			for i, f := range fs {
				why[i] = report.ShardFailureText(f)
			}
			return m, fmt.Errorf("shards failed at 1x: %s", strings.Join(why, "; "))
		}
	}
	h.shown.set(st.Side)
	return m, nil
}

// shardOutcome reads shard p's result once its process ended, and says
// whether it counts, as runReplay does for a replay in this process: at
// 1x what would fail the replay command fails the step; above, what the
// load did to the target (statements lost, connections refused, a
// degraded replay) is in the result, which the step's verdict judges.
func (h *headroomRun) shardOutcome(ctx context.Context, st headroom.StepRun, p *headroomShardProc, n int) (*results.Result, error) {
	pid := p.cmd.Process.Pid
	code := p.cmd.ProcessState.ExitCode()
	how := fmt.Sprintf("exited with code %d", code)
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		how = "was killed by signal " + ws.Signal().String()
	}
	if _, err := os.Stat(p.json); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("shard %d of %d (process %d) %s without writing its result%s", p.k, n, pid, how, lastLines(p.out, 3))
	}
	res, rerr := results.ReadFile(p.json)
	if rerr != nil {
		return nil, fmt.Errorf("shard %d of %d (process %d) %s; its result: %w%s", p.k, n, pid, how, rerr, lastLines(p.out, 3))
	}
	switch {
	case code == ExitOK:
		return res, nil
	case ctx.Err() != nil:
		// Interrupted: what ran, marked partial.
		return res, nil
	case st.K > 1 && code == ExitIncomplete && (len(res.Incomplete) > 0 || len(res.Degraded) > 0):
		return res, nil
	case st.K > 1 && code == ExitFailure && res.Sessions.ConnectFailed > 0:
		return res, nil
	}
	return res, fmt.Errorf("shard %d of %d (process %d) %s%s", p.k, n, pid, how, lastLines(p.out, 3))
}

// relayShardLines passes on what a shard process that ended well said
// for the user: its warnings (pgrehearse: ...), once each across the
// run's shards, and the first shard's pre-flight line the first time a
// side is replayed.
func (h *headroomRun) relayShardLines(st headroom.StepRun, p *headroomShardProc) {
	for _, l := range strings.Split(p.out.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "pgrehearse: ") && h.replay.Warn != nil:
			h.replay.Warn(strings.TrimPrefix(l, "pgrehearse: "))
		case strings.HasPrefix(l, "pre-flight: ") && p.k == 0 && !h.shown.has(st.Side):
			fmt.Fprintln(h.stdio.Stderr, l)
		}
	}
}

// shardKillAfter is how long a shard process told to stop (SIGTERM) may
// take to write what ran before it is killed.
const shardKillAfter = 30 * time.Second

// indent prefixes each of the last 20 non-empty lines of s with p, each
// ending in a newline.
func indent(s, p string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	lines = lines[max(0, len(lines)-20):]
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString(p + l + "\n")
		}
	}
	return b.String()
}

// lastLines is what the process said last, as ": ...": its own error
// line (pgrehearse: ...) when it wrote one, else its last n non-empty
// lines; " (it wrote nothing)" when it wrote nothing.
func lastLines(t *tailbuf.Buffer, n int) string {
	var out []string
	for _, l := range strings.Split(t.String(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return " (it wrote nothing)"
	}
	for i := len(out) - 1; i >= 0; i-- {
		if strings.HasPrefix(out[i], "pgrehearse: ") {
			return ": " + strings.TrimPrefix(out[i], "pgrehearse: ")
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return ": " + strings.Join(out, " / ")
}
