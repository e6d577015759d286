package replayrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/coord"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/tailbuf"
)

// Where a load level's shards run (ShardReplay.Procs), as the run's
// outcome records it.
const (
	ShardsProcesses = "processes"
	ShardsInProcess = "in_process"
)

// CheckCoord connects to the shards' coordination database once, so
// that one that cannot be reached stops the run before any target is
// reset, rather than every shard of the first step.
func CheckCoord(ctx context.Context, dsn string) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, dsn)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// ShardProcs starts a round's shards as processes of a pgrehearse
// binary, each the replay of one shard. The command line a shard is
// started with is the caller's (its flags are the CLI's): Args and Env.
type ShardProcs struct {
	// Bin is the binary; Env what its environment needs beyond this
	// process's, Clean that environment less what no child may inherit
	// (connection strings it is not given).
	Bin   string
	Env   []string
	Clean func(env []string) []string
	// Args are the arguments of shard k of n of run, whose result goes
	// to the file result; DSNEnv the variables that give it its
	// connection strings (on a command line, a password would be read
	// by every user of the machine).
	Args   func(cfg Config, run string, k, n int, result string) []string
	DSNEnv func(cfg Config) []string
	// Exit names the exit codes of a shard's replay.
	Exit ShardExit
	// Relay is given what a shard process that ended well wrote.
	Relay func(k int, output string)
	// FailureText words a shard's failure its merged result records,
	// for the error of a round at 1x.
	FailureText func(results.ShardFailure) string
	// Started is told that shard k of n is process pid (slice: the
	// start of the fold's slice it replays, in µs since the epoch; 0
	// when not a slice); Failed is given the end of the output of a
	// shard process that failed (what it wrote last, at most 16 KiB).
	Started func(k, n, pid int, slice int64)
	Failed  func(k, n, pid int, output string)
}

// ShardExit are the exit codes of a shard process's replay: it
// succeeded; it failed (a connection refused among them); it is
// incomplete (statements lost, a degraded replay).
type ShardExit struct{ OK, Failure, Incomplete int }

// ShardReplay replays a round split by session into N shards at once,
// as "pgrehearse replay --shard K/N --coord-dsn" splits a replay across
// processes: each shard replays its sessions, they start together at the
// coordination database's rendezvous, and a statement waits there for
// the commits it depends on in other shards (with synchronization).
// Their results are merged, as "pgrehearse merge" merges shards, into
// the round's: a way to make a load one replayer cannot send.
//
// Each shard is a process of its own (Procs), so the shards' CPU adds
// up beyond one process's; without Procs they run in this process.
type ShardReplay struct {
	N        int
	CoordDSN string
	Procs    *ShardProcs
	// Hard, closed, stops the shards at once (a second Ctrl-C).
	Hard <-chan struct{}
}

// ShardRound is one round replayed in shards.
type ShardRound struct {
	// Run names it in the coordination database.
	Run string
	// Part is the round's (its round and side), Load its load level;
	// Overloaded says it is above the workload's own load, where what
	// the load did to the target is the result's, not a failure.
	Part       results.Part
	Load       Load
	Overloaded bool
	// Replay replays one shard in this process (without Procs).
	Replay func(context.Context, Config) (*results.Result, error)
}

// Replay replays round r of cfg split in shards and returns the merged
// result.
func (s *ShardReplay) Replay(ctx context.Context, cfg Config, r ShardRound) (*results.Result, error) {
	if s.Procs != nil {
		return s.processes(ctx, cfg, r)
	}
	return s.inProcess(ctx, cfg, r)
}

// inProcess runs the shards in this process, each a replay of its
// own (its own dispatcher and sessions); their CPU is this one process's.
func (s *ShardReplay) inProcess(ctx context.Context, cfg Config, r ShardRound) (*results.Result, error) {
	n := s.N
	type done struct {
		k   int
		res *results.Result
		err error
	}
	ch := make(chan done, n)
	for k := range n {
		c := cfg
		c.Selection.Shard = source.Shard{K: k, Of: n}
		c.Shards = &Shards{Run: r.Run, Coord: coord.Config{DSN: s.CoordDSN}}
		if k > 0 {
			// One observer, one pre-flight and one progress line: the
			// first shard's.
			c.Observe = nil
			c.SkipPreflight = true
			c.OnPreflight, c.OnStart, c.OnEnd = nil, nil, nil
		}
		go func() {
			res, err := r.Replay(ctx, c)
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

// shardProc is one shard's process of a round.
type shardProc struct {
	k    int
	cmd  *exec.Cmd
	json string
	out  *tailbuf.Buffer
	done chan struct{}
	// err is Wait's, once done is closed.
	err error
}

// processes runs the round's n shards as processes of Procs.Bin, waits
// for all of them and merges their results. A shard that cannot start,
// or ends without its result (killed, crashed, refused), fails the
// round, naming it; the other shards are then stopped (SIGTERM: they
// cancel what is in flight and write what ran) and waited for, so that
// none is left running. Ctrl-C is passed on to each (SIGINT), the second
// one as SIGTERM.
func (s *ShardReplay) processes(ctx context.Context, cfg Config, r ShardRound) (*results.Result, error) {
	n := s.N
	dir, err := os.MkdirTemp("", "pgrehearse-headroom-shards-")
	if err != nil {
		return nil, fmt.Errorf("a directory for the shards' results: %w", err)
	}
	defer os.RemoveAll(dir)
	var procs []*shardProc
	ended := make(chan *shardProc, n)
	// Whatever happens below, no shard outlives the round.
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
	procs, startErr = s.start(cfg, r, dir, ended)
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
	interrupted, hard := ctx.Done(), s.Hard
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
			res, err := s.outcome(ctx, r, p)
			if err == nil && p.cmd.ProcessState.ExitCode() == s.Procs.Exit.OK && s.Procs.Relay != nil {
				s.Procs.Relay(p.k, p.out.String())
			}
			if res != nil {
				parts = append(parts, res)
			}
			// A shard stopped because another failed ends as it was
			// told to: only the first failures are the round's.
			if err != nil && !stopped {
				failed = append(failed, err)
				if ctx.Err() == nil && strings.TrimSpace(p.out.String()) != "" && s.Procs.Failed != nil {
					s.Procs.Failed(p.k, n, p.cmd.Process.Pid, p.out.String())
				}
			}
			if len(failed) > 0 && !stopped {
				// The round has failed: the others need not go on.
				stopped = true
				signalAll(syscall.SIGTERM)
				kill = time.After(shardKillAfter)
			}
		}
	}
	return s.merge(ctx, r, parts, failed)
}

// start starts the round's shards, each a process that writes its
// result into dir and is sent to ended once it ended. It returns those
// started; at the first that cannot start, with its error.
func (s *ShardReplay) start(cfg Config, r ShardRound, dir string, ended chan<- *shardProc) ([]*shardProc, error) {
	n, pr := s.N, s.Procs
	procs := make([]*shardProc, 0, n)
	for k := range n {
		p := &shardProc{k: k, json: filepath.Join(dir, fmt.Sprintf("shard-%d.json", k)), out: tailbuf.New(16 << 10), done: make(chan struct{})}
		p.cmd = exec.Command(pr.Bin, pr.Args(cfg, r.Run, k, n, p.json)...)
		p.cmd.Env = append(append(pr.Clean(os.Environ()), pr.Env...), pr.DSNEnv(cfg)...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		p.cmd.SysProcAttr = shardProcAttr()
		if err := p.cmd.Start(); err != nil {
			return procs, fmt.Errorf("shard %d of %d could not start (%s): %w", k, n, pr.Bin, err)
		}
		if pr.Started != nil {
			var slice int64
			if r.Load.Folds() {
				slice = cfg.Selection.Start
			}
			pr.Started(k, n, p.cmd.Process.Pid, slice)
		}
		procs = append(procs, p)
		go func() {
			p.err = p.cmd.Wait()
			close(p.done)
			ended <- p
		}()
	}
	return procs, nil
}

// merge merges the results of the round's shards that wrote one into
// the round's result, and is the round's error: the shards' failures,
// or at 1x a shard's failure its result records.
func (s *ShardReplay) merge(ctx context.Context, r ShardRound, parts []*results.Result, failed []error) (*results.Result, error) {
	var m *results.Result
	if len(parts) > 0 {
		var err error
		if m, err = results.MergeAll(parts...); err != nil {
			return nil, errors.Join(append(failed, fmt.Errorf("merge %d shards: %w", len(parts), err))...)
		}
		// The child's results know their shard, not the round and
		// side: replay has no flag for those.
		if m.Part == nil {
			m.Part = &results.Part{}
		}
		m.Part.Round, m.Part.Side, m.Part.Load = r.Part.Round, r.Part.Side, r.Load.Part()
	}
	if len(failed) > 0 {
		return m, errors.Join(failed...)
	}
	if m != nil && !r.Overloaded && ctx.Err() == nil {
		if fs := m.ShardFailures(); len(fs) > 0 {
			why := make([]string, len(fs))
			for i, f := range fs {
				why[i] = s.Procs.FailureText(f)
			}
			return m, fmt.Errorf("shards failed at 1x: %s", strings.Join(why, "; "))
		}
	}
	return m, nil
}

// outcome reads shard p's result once its process ended, and says
// whether it counts, as a replay in this process would: at 1x what
// would fail the replay command fails the round; above, what the load
// did to the target (statements lost, connections refused, a degraded
// replay) is in the result, which the round's verdict judges.
func (s *ShardReplay) outcome(ctx context.Context, r ShardRound, p *shardProc) (*results.Result, error) {
	n, exit := s.N, s.Procs.Exit
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
	case code == exit.OK:
		return res, nil
	case ctx.Err() != nil:
		// Interrupted: what ran, marked partial.
		return res, nil
	case r.Overloaded && code == exit.Incomplete && (len(res.Incomplete) > 0 || len(res.Degraded) > 0):
		return res, nil
	case r.Overloaded && code == exit.Failure && res.Sessions.ConnectFailed > 0:
		return res, nil
	}
	return res, fmt.Errorf("shard %d of %d (process %d) %s%s", p.k, n, pid, how, lastLines(p.out, 3))
}

// shardKillAfter is how long a shard process told to stop (SIGTERM) may
// take to write what ran before it is killed.
const shardKillAfter = 30 * time.Second

// ErrorLinePrefix starts the line in which a pgrehearse process says
// why it failed.
const ErrorLinePrefix = "pgrehearse: "

// lastLines is what the process said last, as ": ...": its own error
// line (ErrorLinePrefix) when it wrote one, else its last n non-empty
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
		if strings.HasPrefix(out[i], ErrorLinePrefix) {
			return ": " + strings.TrimPrefix(out[i], ErrorLinePrefix)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return ": " + strings.Join(out, " / ")
}
