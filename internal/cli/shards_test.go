package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// asCLI makes the test binary run as pgrehearse, so that tests start
// shards as separate processes, as an Indexed Job's pods are.
const asCLI = "PGREHEARSE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Run(ctx, IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
		stop()
		os.Exit(code)
	}
	cases.Init()
	code := m.Run()
	// The shop's capture, shared by the rehearsals' tests, lives as long
	// as the test binary: a directory of its own under the system's
	// temporary one, which no test's cleanup can remove (each make test
	// left one behind).
	if shopCapture.dir != "" {
		os.RemoveAll(shopCapture.dir)
	}
	os.Exit(code)
}

// shardProc is a shard started as its own process.
type shardProc struct {
	k    int
	cmd  *exec.Cmd
	out  bytes.Buffer
	json string
	done chan struct{}
	code int
	// rss is the most memory the process held, once it ended.
	rss int64
}

// startShard starts shard k as the Indexed Job's pod k would run it:
// JOB_COMPLETION_INDEX=k and the same arguments for every shard.
func startShard(t testing.TB, k int, dir string, args ...string) *shardProc {
	t.Helper()
	p := &shardProc{k: k, json: filepath.Join(dir, fmt.Sprintf("shard-%d.json", k)), done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], append([]string{"replay", "--json", p.json}, args...)...)
	p.cmd.Env = append(os.Environ(), asCLI+"=1", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", k))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			p.rss = ru.Maxrss * 1024
		}
		if err != nil && p.code == 0 {
			p.code = -1
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *shardProc) wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		// Its goroutines, to see where it hangs.
		p.cmd.Process.Signal(syscall.SIGQUIT)
		<-p.done
		t.Fatalf("shard %d did not finish within %v:\n%s", p.k, d, p.out.String())
	}
}

// shardWait bounds a shard's run in these tests.
var shardWait = 5 * time.Minute

// runShards starts n shards with the same arguments and waits for them.
func runShards(t testing.TB, n int, dir string, args ...string) []*shardProc {
	t.Helper()
	ps := make([]*shardProc, n)
	for k := range n {
		ps[k] = startShard(t, k, dir, args...)
	}
	for _, p := range ps {
		p.wait(t, shardWait)
	}
	return ps
}

// runCLI runs a command in this process and returns its exit code and
// output.
func runCmd(t testing.TB, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := Run(ctx, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}, args)
	return code, out.String()
}

func readShardResult(t testing.TB, path string) *results.Result {
	t.Helper()
	b := readFile(t, path)
	res, err := results.Decode(b, path)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// mergeShards merges the shards' results with pgrehearse merge.
func mergeShards(t testing.TB, dir string, ps []*shardProc) (int, string, *results.Result) {
	t.Helper()
	out := filepath.Join(dir, "merged.json")
	args := []string{"merge", "--json", out}
	for _, p := range ps {
		if _, err := os.Stat(p.json); err == nil {
			args = append(args, p.json)
		}
	}
	code, text := runCmd(t, args...)
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("merge exited %d without a result:\n%s", code, text)
	}
	return code, text, readShardResult(t, out)
}

// perQuery is calls and errors by fingerprint.
func perQuery(res *results.Result) map[string][2]int64 {
	m := map[string][2]int64{}
	for _, q := range res.Queries {
		c := m[q.Fingerprint]
		m[q.Fingerprint] = [2]int64{c[0] + q.Calls, c[1] + q.Errors}
	}
	return m
}

// captureMixed runs the mixed workload on a cluster that logs every
// statement and returns the log.
func captureMixed(t testing.TB, d time.Duration) string {
	t.Helper()
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	if _, err := workload.Run(ctx, a, workload.Options{Duration: d}); err != nil {
		t.Fatal(err)
	}
	return pgclustertest.StoppedLog(t, a)
}

func pgssTarget(t testing.TB) *pgcluster.Cluster {
	t.Helper()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	mustExec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements", "SELECT pg_stat_statements_reset()")
	return c
}

// TestShardsMergeEqualSingle is issue 22's first acceptance test: three
// shard processes started as the Indexed Job starts them
// (JOB_COMPLETION_INDEX 0, 1, 2, the same arguments, one plan, a
// rendezvous in a coordination database) replay the mixed workload's log
// against one target, and their merge equals the single process's replay
// of the same log against an identical target: the same statement
// accounting, sessions, calls and errors per fingerprint, and the same
// calls per query in the targets' pg_stat_statements.
func TestShardsMergeEqualSingle(t *testing.T) {
	slowCase(t, 22*time.Second)
	ctx := context.Background()
	log := captureMixed(t, 3*time.Second)
	dir := t.TempDir()

	single := pgssTarget(t)
	code, out, one := runReplay(t, "--target", single.DSN("postgres"), "--speed", "0", log)
	if code != ExitOK || one == nil {
		t.Fatalf("single replay exited %d:\n%s", code, out)
	}
	singleCalls := pgssCalls(ctx, t, single)

	plan := filepath.Join(dir, "plan.json")
	if code, out := runCmd(t, "plan", "--shards", "3", "--out", plan, log); code != ExitOK {
		t.Fatalf("plan exited %d:\n%s", code, out)
	}
	coord := startCoord(t)
	sharded := pgssTarget(t)
	// At speed 0 a shard's session may wait for another shard's commit
	// longer than the 10 s default when the machine is busy (make
	// test-busy); the default timeout counts from the awaited shard's
	// last progress (issue 44), so a shard merely behind is waited for.
	merged := runAndMerge(t, 3, dir, "--shards", "3", "--plan", plan, "--coord-dsn", coord, "--run-id", "acceptance-1",
		"--target", sharded.DSN("postgres"), "--speed", "0", log)
	shardedCalls := pgssCalls(ctx, t, sharded)

	if a, b := one.Statements, merged.Statements; a.Total != b.Total || a.Executed != b.Executed || a.Failed != b.Failed ||
		a.SkippedTotal() != b.SkippedTotal() || !mapsEqual(a.Skipped, b.Skipped) {
		t.Errorf("statements: single %+v, merged %+v", a, b)
	}
	if a, b := one.Sessions.Total, merged.Sessions.Total; a != b {
		t.Errorf("sessions: single %d, merged %d", a, b)
	}
	// Each session's connections timed once, in whichever shard ran it.
	if a, b := one.Connections, merged.Connections; a == nil || b == nil || a.Count-one.Sessions.Reconnects != b.Count-merged.Sessions.Reconnects || b.Setup.Count != b.Count {
		t.Errorf("connections: single %+v, merged %+v", a, b)
	}
	if a, b := one.Lines, merged.Lines; a == nil || b == nil || a.Total != b.Total || a.Parsed != b.Parsed {
		t.Errorf("lines: single %+v, merged %+v", a, b)
	}
	pa, pb := perQuery(one), perQuery(merged)
	for fp, c := range pa {
		if pb[fp] != c {
			t.Errorf("%s: single %d calls %d errors, merged %d calls %d errors", fp, c[0], c[1], pb[fp][0], pb[fp][1])
		}
	}
	for fp, c := range pb {
		if _, ok := pa[fp]; !ok {
			t.Errorf("%s: only in the merge, %d calls", fp, c[0])
		}
	}
	if len(pa) < 20 {
		t.Errorf("only %d queries: the workload did not run", len(pa))
	}
	// The count's own statements ran on each target as the replay's, once
	// each, and pg_stat_statements read itself: left out of both.
	// The pre-flight's query (the empty one) and the replayer's look at
	// whether it may untrack its own statements (a ParameterStatus) leave
	// nothing there: every other query counts alike.
	for fp, n := range singleCalls {
		if strings.Contains(n.query, "pg_stat_statements") {
			continue
		}
		if got := shardedCalls[fp].calls; got != n.calls {
			t.Errorf("pg_stat_statements %s: single %d calls, shards %d: %s", fp, n.calls, got, n.query)
		}
	}
	for fp, n := range shardedCalls {
		if _, ok := singleCalls[fp]; !ok && !strings.Contains(n.query, "pg_stat_statements") && !strings.Contains(n.query, "pgrehearse_coord") {
			t.Errorf("pg_stat_statements %s: only with shards, %d calls: %s", fp, n.calls, n.query)
		}
	}
	// The merge says what each shard did, and that they met.
	p := merged.Part
	if p == nil || !p.Whole() || p.Of != 3 || p.Run != "acceptance-1" || p.Barrier == nil || p.Barrier.Kind != results.BarrierRendezvous {
		t.Errorf("merged part %+v", p)
	}
	if len(merged.Shards) != 3 || merged.Sync == nil || merged.Sync.Scope != results.SyncAcrossShards {
		t.Errorf("merged shards %+v, sync %+v", merged.Shards, merged.Sync)
	}
	for k, s := range merged.Shards {
		if s.Shard != k || s.Clock == nil || s.Statements == 0 {
			t.Errorf("shard %d: %+v", k, s)
		}
	}
}

func mapsEqual[K ~string](a, b map[K]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
