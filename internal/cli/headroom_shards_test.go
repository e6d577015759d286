package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/proctest"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

func init() {
	// A step's shards are processes of the test binary, run as
	// pgrehearse (TestMain).
	shardBinary = func() (string, []string, error) { return os.Args[0], []string{asCLI + "=1"}, nil }
}

// shardPIDs are the processes a headroom run's stderr says it started
// as shards, by step.
var shardPIDLine = regexp.MustCompile(`headroom: step ([0-9]+): shard ([0-9]+) of ([0-9]+) is process ([0-9]+)`)

func shardPIDs(t *testing.T, stderr string) (pids []int, steps map[int]int) {
	t.Helper()
	steps = map[int]int{}
	for _, m := range shardPIDLine.FindAllStringSubmatch(stderr, -1) {
		step, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[4])
		pids = append(pids, pid)
		steps[step]++
	}
	return pids, steps
}

// checkGone fails the test for every pid that still names a process.
func checkGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("shard process %d is still there after headroom ended (kill 0: %v)", pid, err)
		}
	}
}

// TestHeadroomShards: headroom --shards 2 --coord-dsn replays every step
// as two shard processes at once (this binary's replay --shard K/2),
// meeting in a coordination database of their own (another cluster than
// the target's): every step's result is the merge of both shards of one
// run (its part covers shards 0 and 1 of 2, one barrier, the step's round
// and side), each 1x round runs every statement of the log once, the
// merged client CPU is the sum of the shards', the search answers, and no
// shard process is left once it has. With a password in every connection
// string, no shard process has one on its command line (read from
// /proc/PID/cmdline while they run): they get them in their environment.
func TestHeadroomShards(t *testing.T) {
	slowCase(t, 54*time.Second)
	logPath := shopLog(t)
	tg := shopHeadroomTarget(t, nil)
	coord := startCoord(t)
	dir := t.TempDir()
	jsonPath, outDir := filepath.Join(dir, "headroom.json"), filepath.Join(dir, "steps")
	start := time.Now()
	// A password in every connection string (the servers trust, and
	// ignore it): no shard process may have one on its command line.
	const plantedTarget, plantedCoord = "PlantedShardTarget-3b7", "PlantedShardCoord-9d2"
	stop := make(chan struct{})
	seen := proctest.WatchChildren(stop, func(cmdline string) bool { return strings.Contains(cmdline, "\x00--shard\x00") })
	code, stdout, stderr := runHeadroom(t, "--control", tg.DSN("postgres")+" password="+plantedTarget, "--shards", "2",
		"--coord-dsn", coord+" password="+plantedCoord,
		"--max-k", "2", "--base-rounds", "2", "--boundary-rounds", "1", "--out", outDir, "--json", jsonPath, logPath)
	close(stop)
	children := <-seen
	t.Logf("exit %d in %v\n%s\n%s", code, time.Since(start).Round(time.Second), stdout, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	ours := 0
	for _, ch := range children {
		if strings.Contains(ch.Cmdline, plantedTarget) || strings.Contains(ch.Cmdline, plantedCoord) {
			t.Errorf("shard process %d has a password on its command line: %s", ch.PID, strings.ReplaceAll(ch.Cmdline, "\x00", " "))
		}
		// Other tests' shards run beside this one: ours have our
		// passwords in their environment.
		if strings.Contains(ch.Env, plantedTarget) && strings.Contains(ch.Env, plantedCoord) {
			ours++
		}
	}
	if ours == 0 {
		t.Errorf("no shard process of this run seen among %d readings", len(children))
	}
	if !strings.Contains(stderr, "every step in 2 shards at once, each a process") {
		t.Errorf("the start line does not say the steps are sharded in processes")
	}
	pids, steps := shardPIDs(t, stderr)
	checkGone(t, pids)
	out := readJSON[headroom.Outcome](t, jsonPath)
	so := out.Side(headroom.Control)
	if out.Shards != 2 || out.ShardsRun != replayrun.ShardsProcesses {
		t.Errorf("the outcome says %d shards run as %q, want 2 as %q", out.Shards, out.ShardsRun, replayrun.ShardsProcesses)
	}
	if so == nil || so.Answer == nil || so.Baseline == nil || len(so.Steps) < 3 {
		t.Fatalf("side %+v", so)
	}
	var base int64
	for _, st := range so.Steps {
		m := st.Measurement
		if st.Status != headroom.StatusDone || m == nil || m.Statements == 0 || st.File == "" {
			t.Fatalf("step %d: %+v", st.Seq, st)
		}
		if m.Failed != 0 {
			t.Errorf("step %d at %gx: %d statements failed", st.Seq, st.K, m.Failed)
		}
		if st.K == 1 {
			if base != 0 && m.Statements != base {
				t.Errorf("step %d at 1x: %d statements, the first round %d", st.Seq, m.Statements, base)
			}
			base = m.Statements
		}
		data := readFile(t, filepath.Join(outDir, st.File))
		res, err := results.Decode(data, st.File)
		if err != nil {
			t.Fatal(err)
		}
		if p := res.Part; p == nil || p.Of != 2 || len(p.Shards) != 2 || p.Run == "" || p.Barrier == nil || p.Side != headroom.Control || p.Round == 0 {
			t.Errorf("step %d: part %+v, want both shards of 2 of one run, with its barrier, side and round", st.Seq, res.Part)
		}
		if steps[st.Seq] != 2 {
			t.Errorf("step %d: %d shard processes started, want 2", st.Seq, steps[st.Seq])
		}
		rp := res.Replay
		if rp == nil || len(rp.Shards) != 2 {
			t.Fatalf("step %d: replay %+v, want two shards' figures", st.Seq, rp)
		}
		var sum float64
		for _, s := range rp.Shards {
			sum += s.CPUSeconds
		}
		if d := rp.ClientCPUSeconds - sum; sum <= 0 || d > 1e-6 || d < -1e-6 {
			t.Errorf("step %d: client CPU %.3f s, the shards' sum %.3f s", st.Seq, rp.ClientCPUSeconds, sum)
		}
	}
}

// startShardedHeadroom starts, in the background under ctx, headroom on
// the shop's log with every step in two shard processes (up to 2x, two
// base rounds), which meet in a coordination database of their own. It
// returns the running headroom, the path of its JSON and the
// coordination database's DSN.
func startShardedHeadroom(ctx context.Context, t *testing.T) (h *runningHeadroom, jsonPath, coord string) {
	t.Helper()
	logPath := shopLog(t)
	tg := shopHeadroomTarget(t, nil)
	coord = startCoord(t)
	jsonPath = filepath.Join(t.TempDir(), "headroom.json")
	h = startHeadroom(ctx, "--control", tg.DSN("postgres"), "--shards", "2", "--coord-dsn", coord,
		"--max-k", "2", "--base-rounds", "2", "--boundary-rounds", "1", "--json", jsonPath, logPath)
	return h, jsonPath, coord
}

// TestHeadroomShardKilled: a shard process killed (SIGKILL) once its
// step's replay has begun (its run's start passed in the coordination
// database) fails that step, naming the shard, its process and the
// signal; the run stops (exit 1) with the steps before it kept, and no
// shard process of any step is left. The test polls the progress lines
// and the coordination database; it never sleeps to synchronize.
func TestHeadroomShardKilled(t *testing.T) {
	longCase(t)
	ctx := context.Background()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	h, jsonPath, coord := startShardedHeadroom(rctx, t)
	conn := pgclustertest.Connect(ctx, t, coord)
	defer conn.Close(ctx)
	// Step 2 (the second 1x round): its shard 1, once the step's start
	// has passed.
	victim := 0
	h.await(t, "step 2's shards replayed", 2*time.Minute, func() bool {
		if victim == 0 {
			for _, m := range shardPIDLine.FindAllStringSubmatch(h.stderr.String(), -1) {
				if m[1] == "2" && m[2] == "1" {
					victim, _ = strconv.Atoi(m[4])
				}
			}
			return false
		}
		var started bool
		err := conn.QueryRow(ctx, `SELECT coalesce(bool_or(start_at < clock_timestamp()), false) FROM pgrehearse_coord.runs WHERE run LIKE '%-step2-control'`).Scan(&started)
		// Without the schema (made by the first shard to join), not yet.
		return err == nil && started
	})
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatalf("kill shard process %d: %v", victim, err)
	}
	code, _, errOut := h.exit(t, 90*time.Second, "its shard's death")
	pids, _ := shardPIDs(t, errOut)
	checkGone(t, pids)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d (ExitFailure)", code, ExitFailure)
	}
	want := "shard 1 of 2 (process " + strconv.Itoa(victim) + ") was killed by signal killed without writing its result"
	if !strings.Contains(errOut, want) {
		t.Errorf("the error does not say %q", want)
	}
	out := readJSON[headroom.Outcome](t, jsonPath)
	so := out.Side(headroom.Control)
	if so == nil || len(so.Steps) != 2 {
		t.Fatalf("side %+v, want two steps", so)
	}
	if st := so.Steps[0]; st.Status != headroom.StatusDone {
		t.Errorf("step 1: %s %s, want done", st.Status, st.Error)
	}
	if st := so.Steps[1]; st.Status != headroom.StatusFailed || !strings.Contains(st.Error, want) {
		t.Errorf("step 2: %s %q, want failed saying %q", st.Status, st.Error, want)
	}
}

// TestHeadroomShardsInterrupted: Ctrl-C (the command's context
// cancelled) while step 2's shard processes replay is passed on to them:
// they stop and write what ran, the step is marked interrupted, the
// answer partial (exit 5), and no shard process is left.
func TestHeadroomShardsInterrupted(t *testing.T) {
	longCase(t)
	rctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, jsonPath, _ := startShardedHeadroom(rctx, t)
	h.await(t, "step 2's shards started", 2*time.Minute, func() bool {
		_, steps := shardPIDs(t, h.stderr.String())
		return steps[2] == 2
	})
	cancel()
	code, _, errOut := h.exit(t, 90*time.Second, "Ctrl-C")
	pids, _ := shardPIDs(t, errOut)
	checkGone(t, pids)
	if code != ExitIncomplete {
		t.Errorf("exit %d, want %d (ExitIncomplete)", code, ExitIncomplete)
	}
	if !strings.Contains(errOut, "PARTIAL: interrupted during step 2") {
		t.Errorf("the answer is not marked partial for step 2")
	}
	out := readJSON[headroom.Outcome](t, jsonPath)
	so := out.Side(headroom.Control)
	if !out.Partial || so == nil || len(so.Steps) != 2 || so.Steps[0].Status != headroom.StatusDone || so.Steps[1].Status != headroom.StatusInterrupted {
		t.Errorf("partial %v, side %+v: want step 1 done and step 2 interrupted", out.Partial, so)
	}
}

// TestHeadroomShardsFold: --by fold with --shards 2 runs every slice of
// a 2x step as two shard processes (four at once), each slice its own
// run in the coordination database, the window through --start and
// --end: the 2x step runs every statement of the log once, as the 1x
// rounds do, without errors. A long case (issue 44: make test within 15
// minutes), the second of headroom's shards: TestHeadroomShards keeps
// every step in shard processes, and TestHeadroomFold a fold's slices.
func TestHeadroomShardsFold(t *testing.T) {
	longCase(t)
	parallelCase(t)
	logPath := shopLog(t)
	tg := shopHeadroomTarget(t, nil)
	coord := startCoord(t)
	jsonPath := filepath.Join(t.TempDir(), "headroom.json")
	_, stderr := headroomOK(t, "--control", tg.DSN("postgres"), "--shards", "2", "--coord-dsn", coord,
		"--by", "fold", "--max-k", "2", "--base-rounds", "2", "--boundary-rounds", "1", "--json", jsonPath, logPath)
	pids, steps := shardPIDs(t, stderr)
	checkGone(t, pids)
	out := readJSON[headroom.Outcome](t, jsonPath)
	so := out.Side(headroom.Control)
	if so == nil || so.Baseline == nil {
		t.Fatalf("side %+v", so)
	}
	var base int64
	folded := 0
	for _, st := range so.Steps {
		m := st.Measurement
		if st.Status != headroom.StatusDone || m == nil {
			t.Fatalf("step %d: %+v", st.Seq, st)
		}
		want := 2
		if st.K == 2 {
			want = 4
			folded++
		}
		if steps[st.Seq] != want {
			t.Errorf("step %d at %gx: %d shard processes, want %d", st.Seq, st.K, steps[st.Seq], want)
		}
		if m.Failed != 0 {
			t.Errorf("step %d at %gx: %d statements failed", st.Seq, st.K, m.Failed)
		}
		if base == 0 {
			base = m.Statements
		} else if m.Statements != base {
			t.Errorf("step %d at %gx: %d statements, the first round %d", st.Seq, st.K, m.Statements, base)
		}
	}
	if folded == 0 {
		t.Errorf("no step at 2x")
	}
}

// TestHeadroomShardsInProcess: when pgrehearse's binary cannot be found,
// the shards of every step run inside headroom's process, and the start
// line, the text and the JSON say so.
func TestHeadroomShardsInProcess(t *testing.T) {
	longCase(t)
	saved := shardBinary
	shardBinary = func() (string, []string, error) { return "", nil, errors.New("no binary here") }
	t.Cleanup(func() { shardBinary = saved })
	logPath := shopLog(t)
	tg := shopHeadroomTarget(t, nil)
	coord := startCoord(t)
	jsonPath := filepath.Join(t.TempDir(), "headroom.json")
	stdout, stderr := headroomOK(t, "--control", tg.DSN("postgres"), "--shards", "2", "--coord-dsn", coord,
		"--max-k", "1.5", "--base-rounds", "2", "--boundary-rounds", "1", "--json", jsonPath, logPath)
	if !strings.Contains(stderr, "every step in 2 shards at once inside this process (this pgrehearse's binary was not found to start them as processes: no binary here)") {
		t.Errorf("the start line does not say the shards run inside this process, and why")
	}
	if !strings.Contains(stdout, "every step in 2 shards inside one process") {
		t.Errorf("the summary does not say the shards ran inside one process")
	}
	if pids, _ := shardPIDs(t, stderr); len(pids) != 0 {
		t.Errorf("shard processes %v started", pids)
	}
	out := readJSON[headroom.Outcome](t, jsonPath)
	if out.ShardsRun != replayrun.ShardsInProcess {
		t.Errorf("shards_run %q, want %q", out.ShardsRun, replayrun.ShardsInProcess)
	}
}

// TestHeadroomShardsCoordUnreachable: a coordination database that
// cannot be reached stops headroom at once (exit 1), naming --coord-dsn,
// before any target is touched or shard started.
func TestHeadroomShardsCoordUnreachable(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	writeFile(t, log, []byte("x\n"))
	sock := t.TempDir() // no server listens there
	code, _, stderr := runHeadroom(t, "--control", "host=a", "--shards", "2", "--coord-dsn", "host="+sock+" port=1 dbname=coord", log)
	if code != ExitFailure || !strings.Contains(stderr, "--coord-dsn: the shards' coordination database cannot be reached") || !strings.Contains(stderr, "nothing was done") {
		t.Errorf("exit %d, want %d naming --coord-dsn:\n%s", code, ExitFailure, stderr)
	}
	if pids, _ := shardPIDs(t, stderr); len(pids) != 0 {
		t.Errorf("shard processes %v started", pids)
	}
}

// TestHeadroomShardArgs: a shard process gets the replay options given to
// headroom as given (lists repeated), and the step's own speed, database
// map, window and target logs in their place; its target and
// coordination database come in its environment, never on its command
// line; replay reads them all.
func TestHeadroomShardArgs(t *testing.T) {
	cmd := newHeadroomCmd(context.Background(), IO{})
	if err := cmd.ParseFlags([]string{"--control", "host=a", "--sync", "commit", "--user-map", "a=b,c=d", "--max-lag", "50ms",
		"--speed", "2", "--database-map", "x=y", "--observe=false", "--start", "2026-01-01 00:00:00", "--json", "out.json", "--shards", "2"}); err != nil {
		t.Fatal(err)
	}
	fw := forwardedFlags(cmd)
	got := strings.Join(fw, " ")
	for _, want := range []string{"--sync=commit", "--user-map a=b --user-map c=d", "--max-lag=50ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("forwarded %q, want %q in it", got, want)
		}
	}
	for _, not := range []string{"--speed", "--database-map", "--observe", "--start", "--json", "--shards", "--control"} {
		if strings.Contains(got, not) {
			t.Errorf("forwarded %q: %s is the step's or headroom's own", got, not)
		}
	}
	h := &headroomRun{f: headroomFlags{coordDSN: "host=c", forward: fw}}
	var cfg replayrun.Config
	cfg.Replay.Target, cfg.Replay.Speed = "host=t", 3
	cfg.Replay.DatabaseMap = map[string]string{"shop": "shop_copy_2", "x": "y"}
	cfg.Selection.Start, cfg.Selection.End = 1767225600000000, 1767225601500000
	cfg.TargetLogs = []string{"/var/log/pg/a.log"}
	args := h.shardArgs(cfg, "run-1", 1, 2, "/tmp/s1.json")
	for _, a := range args {
		if strings.Contains(a, "host=") {
			t.Errorf("a connection string on the shard's command line: %v", args)
		}
	}
	// Its connection strings come through the environment.
	for _, kv := range h.shardDSNEnv(cfg) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	rc := newReplayCmd(context.Background(), IO{})
	if err := rc.ParseFlags(args[1:]); err != nil {
		t.Fatalf("replay's flags do not read %v: %v", args, err)
	}
	if err := checkDSNFlags(rc); err != nil {
		t.Fatal(err)
	}
	fl := rc.Flags()
	for name, want := range map[string]string{"shard": "1/2", "coord-dsn": "host=c", "run-id": "run-1", "json": "/tmp/s1.json",
		"target": "host=t", "speed": "3", "database-map": "[shop=shop_copy_2,x=y]", "start": "2026-01-01T00:00:00Z",
		"end": "2026-01-01T00:00:01.5Z", "target-log": "[/var/log/pg/a.log]", "skip-preflight": "true", "observe": "false",
		"sync": "commit", "user-map": "[a=b,c=d]", "max-lag": "50ms", "findings": "false", "max-error-rate": "100"} {
		if v := fl.Lookup(name).Value.String(); v != want {
			t.Errorf("--%s %q, want %q (args %v)", name, v, want, args)
		}
	}
	// Without --sync, headroom's steps replay in load mode (a capacity
	// is a load's: object mode's waits cut a fold's throughput below
	// 1x's on hot rows), and so do its shards, whose replay's own
	// default is another.
	if d := newHeadroomCmd(context.Background(), IO{}).Flags().Lookup("sync").DefValue; d != replayrun.SyncLoad.String() {
		t.Errorf("headroom's --sync defaults to %q, want %q", d, replayrun.SyncLoad.String())
	}
	h.f.forward = nil
	cfg.Replay.Sync = replayrun.SyncLoad
	rc = newReplayCmd(context.Background(), IO{})
	if err := rc.ParseFlags(h.shardArgs(cfg, "run-1", 1, 2, "/tmp/s1.json")[1:]); err != nil {
		t.Fatal(err)
	}
	if v := rc.Flags().Lookup("sync").Value.String(); v != "load" {
		t.Errorf("a shard of a step in load mode replays with --sync %q", v)
	}
}
