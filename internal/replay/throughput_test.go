package replay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// BenchmarkSpeed0Experiment takes apart where speed-0 throughput goes. On
// one server, after capturing a pgbench log, it runs BENCH_ROUNDS (3)
// rounds of four runs: pgbench -T without logging, pgbench -t with the
// log's transactions per session, a bare pgconn loop that runs the
// captured statements of each session from memory on its own goroutine
// (no log reading, no queues, no accounting: the least a Go client can
// do), and the replay engine. Each run starts from a settled server and
// the order turns from round to round; the rates of a round are measured
// within seconds of each other. BENCH_PROFILE=DIR writes CPU, block,
// mutex and allocation profiles of the replays there. BENCH_BASELINE=BIN
// adds to each round the replay of another build of this package's test
// binary, on the same capture (see baseline_test.go), so that a change is
// measured against its baseline in the same run.
//
// The rounds run in two layouts (BENCH_LAYOUT=shared,apart): with the
// server and the clients sharing every CPU, then with the server on a CPU
// of its own and the clients on the others (pinApart). On a small machine
// shared, a client's own CPU (for a replay, reading and parsing the log)
// is taken from the server, so the rate measures client and server
// together; apart, the server is what limits the rate, as when the
// replayer runs on a machine of its own, which is what the replay's
// target is stated for.
//
// Measured and dropped: event loops on locked OS threads polling the
// sessions' sockets (pgbench's model, so that no goroutine hand-off sits
// between an answer and the next statement). A bare loop of that kind ran
// at pgbench's rate, but inside the engine, where each answer also costs
// recording, accounting and the next event's set-up, one loop serialized
// that work and ran at 0.65–0.94 of pgbench against 0.83–1.10 for a
// goroutine per session, with one to four loops, in the same rounds.
func BenchmarkSpeed0Experiment(b *testing.B) {
	clients, secs, rounds, c, files, perSession := speed0Capture(b)
	// The same work per connection as the log's sessions, for pgbench -t.
	txPerClient := max(1, nExec(perSession)/7/clients)
	// As cmd/pgrehearse runs (unless GOGC is set).
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	profDir := os.Getenv("BENCH_PROFILE")
	if profDir != "" {
		runtime.SetBlockProfileRate(10_000) // one sample per 10 µs blocked
		runtime.SetMutexProfileFraction(10)
	}
	layouts := strings.Split(envString("BENCH_LAYOUT", "shared,apart"), ",")
	for b.Loop() {
		for _, layout := range layouts {
			speed0Rounds(b, c, files, perSession, clients, secs, rounds, txPerClient, layout, profDir)
		}
	}
}

// speed0Rounds runs the rounds of BenchmarkSpeed0Experiment with the
// server and the clients sharing every CPU (layout "shared"), or on CPUs
// of their own ("apart", see pinApart).
func speed0Rounds(b *testing.B, c *pgcluster.Cluster, files []string, perSession map[string][]*event.Event, clients, secs, rounds, txPerClient int, layout, profDir string) {
	switch layout {
	case "shared":
	case "apart":
		defer pinApart(b, c)()
	default:
		b.Fatalf("BENCH_LAYOUT: %q is neither shared nor apart", layout)
	}
	baseline := os.Getenv("BENCH_BASELINE")
	// BENCH_AB=1 leaves out pgbench -t and the bare loop: the replay,
	// its baseline and pgbench -T only, for more rounds in the time.
	full := os.Getenv("BENCH_AB") == ""
	var pollOfT, pollCPUOf, rawOfT, rawCPUOf []float64
	var ofT, ofFixed, cpuOf, baseOfT, baseCPUOf, pairRate, pairCPU, floorOfT, floorCPUOf, ofFloor, cpuOfFloor, rowOfT, rowCPUOf []float64
	for round := range rounds {
		var pgbenchUse, replayUse usage
		var base, fixed, bare, pgbenchCPU, bareCPU, replayCPU, oldRate, oldCPU, floor, floorCPU, poll, pollCPU, rawG, rawGCPU float64
		var floorWaits, floorParks, floorGiveUps int
		var rowFloor, rowCPU float64
		var rowWaits int
		var res *results.Result
		var tl *timeline
		runs := []func(){
			func() {
				ch0 := cpuTime(syscall.RUSAGE_CHILDREN)
				u0 := usageOf(syscall.RUSAGE_CHILDREN)
				base = pgbenchRate(b, c, clients, secs)
				pgbenchCPU = (cpuTime(syscall.RUSAGE_CHILDREN) - ch0) / (base * float64(secs))
				pgbenchUse = usageOf(syscall.RUSAGE_CHILDREN).per(u0, base*float64(secs))
			},
			func() {
				self0 := cpuTime(syscall.RUSAGE_SELF)
				u0 := usageOf(syscall.RUSAGE_SELF)
				th0 := threadUsage()
				var stop func()
				if profDir != "" {
					stop = startProfiles(b, profDir, layout+"-"+itoa(round+1))
				}
				tl = &timeline{start: time.Now()}
				res = replayLog(b, files[len(files)-1], workload.LogLinePrefix, Options{Target: c.DSN("postgres"), Speed: 0, Sink: tl, Budget: int64(envInt("BENCH_BUDGET", 0)), Sync: benchSync(b), Sessions: benchSessions(b), Engines: envInt("BENCH_ENGINES", 0)})
				if stop != nil {
					stop()
				}
				replayCPU = (cpuTime(syscall.RUSAGE_SELF) - self0) / float64(res.Statements.Executed+res.Statements.Failed)
				replayUse = usageOf(syscall.RUSAGE_SELF).per(u0, float64(res.Statements.Executed+res.Statements.Failed))
				b.Logf("%s round %d: replay threads: %s", layout, round+1, threadLine(th0, threadUsage(), float64(res.Statements.Executed+res.Statements.Failed)))
			},
		}
		if full {
			runs = append(runs,
				func() { fixed = pgbenchFixedRate(b, c, clients, txPerClient) },
				func() {
					self0 := cpuTime(syscall.RUSAGE_SELF)
					bare = bareRate(b, c, perSession)
					bareCPU = (cpuTime(syscall.RUSAGE_SELF) - self0) / float64(nExec(perSession))
				},
				func() {
					self0 := cpuTime(syscall.RUSAGE_SELF)
					poll = pollRate(b, c, perSession)
					pollCPU = (cpuTime(syscall.RUSAGE_SELF) - self0) / float64(nExec(perSession))
				},
				func() {
					self0 := cpuTime(syscall.RUSAGE_SELF)
					rawG = rawGoroutineRate(b, c, perSession)
					rawGCPU = (cpuTime(syscall.RUSAGE_SELF) - self0) / float64(nExec(perSession))
				})
			if mode := benchSync(b); mode != syncdep.Off {
				runs = append(runs, func() {
					steps := syncSteps(b, c, files[len(files)-1], mode)
					self0 := cpuTime(syscall.RUSAGE_SELF)
					floor, floorWaits, floorParks, floorGiveUps = syncFloorRate(b, c, steps)
					floorCPU = (cpuTime(syscall.RUSAGE_SELF) - self0) / float64(nExec(perSession))
				}, func() {
					rows := rowSteps(b, files[len(files)-1])
					self0 := cpuTime(syscall.RUSAGE_SELF)
					rowFloor, rowWaits, _, _ = syncFloorRate(b, c, rows)
					rowCPU = (cpuTime(syscall.RUSAGE_SELF) - self0) / float64(nExec(perSession))
				})
			}
		}
		if baseline != "" {
			runs = append(runs, func() { oldRate, oldCPU = baselineReplay(b, baseline, files[len(files)-1], c.DSN("postgres")) })
		}
		// Each run updates the same rows and leaves dead tuples and
		// WAL behind, which slow whatever runs next: every run starts
		// from a vacuumed, checkpointed server, and the order turns
		// from round to round.
		for i := range runs {
			settle(b, c)
			runs[(i+round)%len(runs)]()
		}
		ran := float64(res.Statements.Executed + res.Statements.Failed)
		rate := ran / res.WallSeconds
		if full {
			b.Logf("%s round %d: client CPU per statement: pgbench %.1f µs, bare %.1f µs, replay %.1f µs",
				layout, round+1, pgbenchCPU*1e6, bareCPU*1e6, replayCPU*1e6)
			b.Logf("%s round %d: pgbench %.0f stmt/s, bare pgconn %.0f stmt/s (%.2f of pgbench), replay %.0f stmt/s (%.2f of pgbench, %.2f of bare) in %.2f s",
				layout, round+1, base, bare, bare/base, rate, rate/base, rate/bare, res.WallSeconds)
			b.Logf("%s round %d: one-thread poll loop: %.0f stmt/s (%.2f of pgbench), client CPU per statement %.1f µs (%.2fx pgbench's)",
				layout, round+1, poll, poll/base, pollCPU*1e6, pollCPU/pgbenchCPU)
			pollOfT, pollCPUOf = append(pollOfT, poll/base), append(pollCPUOf, pollCPU/pgbenchCPU)
			b.Logf("%s round %d: raw goroutine loop: %.0f stmt/s (%.2f of pgbench), client CPU per statement %.1f µs (%.2fx pgbench's)",
				layout, round+1, rawG, rawG/base, rawGCPU*1e6, rawGCPU/pgbenchCPU)
			rawOfT, rawCPUOf = append(rawOfT, rawG/base), append(rawCPUOf, rawGCPU/pgbenchCPU)
			b.Logf("%s round %d: same work per connection: pgbench -t %d %.0f stmt/s, replay %.2f of it",
				layout, round+1, txPerClient, fixed, rate/fixed)
			ofFixed = append(ofFixed, rate/fixed)
			if floor > 0 {
				b.Logf("%s round %d: sync floor (bare wire keeping the commit order): %.0f stmt/s (%.2f of pgbench), client CPU %.1f µs per statement (%.2fx pgbench's), %d waits, %d parks, %d given up; replay %.2f of its rate, %.2fx its CPU",
					layout, round+1, floor, floor/base, floorCPU*1e6, floorCPU/pgbenchCPU, floorWaits, floorParks, floorGiveUps, rate/floor, replayCPU/floorCPU)
				b.Logf("%s round %d: row floor (pgbench's statements ordered by row): %.2f of pgbench, client CPU %.2fx pgbench's, %d waits",
					layout, round+1, rowFloor/base, rowCPU/pgbenchCPU, rowWaits)
				rowOfT, rowCPUOf = append(rowOfT, rowFloor/base), append(rowCPUOf, rowCPU/pgbenchCPU)
				floorOfT, floorCPUOf = append(floorOfT, floor/base), append(floorCPUOf, floorCPU/pgbenchCPU)
				ofFloor, cpuOfFloor = append(ofFloor, rate/floor), append(cpuOfFloor, replayCPU/floorCPU)
			}
		} else {
			b.Logf("%s round %d: client CPU per statement: pgbench %.1f µs, replay %.1f µs; pgbench %.0f stmt/s, replay %.0f stmt/s (%.2f of pgbench) in %.2f s",
				layout, round+1, pgbenchCPU*1e6, replayCPU*1e6, base, rate, rate/base, res.WallSeconds)
		}
		b.Logf("%s round %d: per statement (context switches voluntary, involuntary): pgbench %v; replay %v",
			layout, round+1, pgbenchUse, replayUse)
		b.Logf("%s round %d: replay statements per 500 ms: %v", layout, round+1, tl.buckets())
		b.Logf("%s round %d: replay sync %s", layout, round+1, syncLine(res))
		ofT = append(ofT, rate/base)
		cpuOf = append(cpuOf, replayCPU/pgbenchCPU)
		if baseline != "" {
			b.Logf("%s round %d: baseline build: replay %.0f stmt/s (%.2f of pgbench), client CPU per statement %.1f µs (%.2fx pgbench's); this build %.2f of pgbench, %.2fx",
				layout, round+1, oldRate, oldRate/base, oldCPU*1e6, oldCPU/pgbenchCPU, rate/base, replayCPU/pgbenchCPU)
			baseOfT, baseCPUOf = append(baseOfT, oldRate/base), append(baseCPUOf, oldCPU/pgbenchCPU)
			pairRate, pairCPU = append(pairRate, rate/oldRate), append(pairCPU, replayCPU/oldCPU)
		}
	}
	// Single rounds move by several percent: the median is the figure
	// to compare from run to run.
	if full {
		b.Logf("%s, median of %d rounds: replay %.2f of pgbench -t", layout, rounds, median(ofFixed))
		b.Logf("%s, median of %d rounds: one-thread poll loop %.2f of pgbench -T (%s), client CPU per statement %.2fx pgbench's (%s)",
			layout, rounds, median(pollOfT), fmtRatios(pollOfT), median(pollCPUOf), fmtRatios(pollCPUOf))
		b.Logf("%s, median of %d rounds: raw goroutine loop %.2f of pgbench -T (%s), client CPU per statement %.2fx pgbench's (%s)",
			layout, rounds, median(rawOfT), fmtRatios(rawOfT), median(rawCPUOf), fmtRatios(rawCPUOf))
		if len(floorOfT) > 0 {
			b.Logf("%s, median of %d rounds: sync floor %.2f of pgbench -T (%s), client CPU per statement %.2fx pgbench's (%s); replay %.2f of the floor's rate (%s), %.2fx its CPU (%s)",
				layout, rounds, median(floorOfT), fmtRatios(floorOfT), median(floorCPUOf), fmtRatios(floorCPUOf), median(ofFloor), fmtRatios(ofFloor), median(cpuOfFloor), fmtRatios(cpuOfFloor))
			b.Logf("%s, median of %d rounds: row floor %.2f of pgbench -T (%s), client CPU per statement %.2fx pgbench's (%s)",
				layout, rounds, median(rowOfT), fmtRatios(rowOfT), median(rowCPUOf), fmtRatios(rowCPUOf))
		}
	}
	b.Logf("%s, median of %d rounds: replay %.2f of pgbench -T; client CPU per statement %.2fx pgbench's",
		layout, rounds, median(ofT), median(cpuOf))
	if baseline != "" {
		b.Logf("%s, median of %d rounds, baseline build: replay %.2f of pgbench -T; client CPU per statement %.2fx pgbench's",
			layout, rounds, median(baseOfT), median(baseCPUOf))
		b.Logf("%s, this build against the baseline in the same round, median of %d: rate %.3f (%s), CPU per statement %.3f (%s)",
			layout, rounds, median(pairRate), fmtRatios(pairRate), median(pairCPU), fmtRatios(pairCPU))
	}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// settle vacuums the tables pgbench updates, empties its history and
// checkpoints, as pgbench does before a run (unless -n), so that no run
// inherits the dead tuples and dirty buffers of the one before.
func settle(b *testing.B, c *pgcluster.Cluster) {
	pgclustertest.Exec(b, c, "postgres", "VACUUM pgbench_branches", "VACUUM pgbench_tellers", "VACUUM pgbench_accounts", "TRUNCATE pgbench_history", "CHECKPOINT")
}

// speed0Capture is the set-up the speed-0 benchmarks share: BENCH_CLIENTS
// (8) clients, BENCH_SECONDS (10) of pgbench captured by capturePgbench,
// BENCH_ROUNDS (3) rounds, and the last log file's executions per session.
func speed0Capture(b *testing.B) (clients, secs, rounds int, c *pgcluster.Cluster, files []string, perSession map[string][]*event.Event) {
	clients = envInt("BENCH_CLIENTS", 8)
	secs = envInt("BENCH_SECONDS", 10)
	rounds = envInt("BENCH_ROUNDS", 3)
	c, files = capturePgbench(b, clients, secs)
	return clients, secs, rounds, c, files, loadExecutions(b, files[len(files)-1])
}

// capturePgbench starts a cluster, initializes pgbench and captures secs
// seconds of pgbench -M prepared with clients connections in the log.
func capturePgbench(b *testing.B, clients, secs int) (*pgcluster.Cluster, []string) {
	ctx := context.Background()
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{
		"logging_collector": "on", "log_destination": "stderr", "log_line_prefix": workload.LogLinePrefix,
		"lc_messages": "C", "log_rotation_size": "0", "max_connections": "300",
	}})
	if _, err := c.Pgbench(ctx, "-i", "-q", "-s", "10", "postgres"); err != nil {
		b.Fatal(err)
	}
	setLogging(b, c, true)
	pgbenchRate(b, c, clients, secs)
	setLogging(b, c, false)
	files, err := c.LogFiles("*.log")
	if err != nil || len(files) == 0 {
		b.Fatal(files, err)
	}
	return c, files
}

func setLogging(b *testing.B, c *pgcluster.Cluster, on bool) {
	v := map[bool][3]string{true: {"0", "on", "on"}, false: {"-1", "off", "off"}}[on]
	pgclustertest.Exec(b, c, "postgres",
		"ALTER SYSTEM SET log_min_duration_statement = "+v[0],
		"ALTER SYSTEM SET log_connections = "+v[1],
		"ALTER SYSTEM SET log_disconnections = "+v[2],
		"SELECT pg_reload_conf()",
	)
}

// pgbenchRate runs pgbench -M prepared (tpcb-like: 7 statements a
// transaction) and returns its statements/s.
func pgbenchRate(b *testing.B, c *pgcluster.Cluster, clients, secs int) float64 {
	cl, s := itoa(clients), itoa(secs)
	out, err := c.Pgbench(context.Background(), "-n", "-M", "prepared", "-c", cl, "-j", cl, "-T", s, "postgres")
	if err != nil {
		b.Fatal(err)
	}
	m := tpsRe.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench output: %s", out)
	}
	return atof(string(m[1])) * 7 / float64(secs)
}

var fixedTPSRe = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbenchFixedRate runs pgbench -M prepared with tx transactions per
// client: like a replay of a log, it ends when its slowest client is done,
// not at a fixed time. It returns statements/s over that time, connecting
// excluded.
func pgbenchFixedRate(b *testing.B, c *pgcluster.Cluster, clients, tx int) float64 {
	cl := itoa(clients)
	out, err := c.Pgbench(context.Background(), "-n", "-M", "prepared", "-c", cl, "-j", cl, "-t", itoa(tx), "postgres")
	if err != nil {
		b.Fatal(err)
	}
	m := fixedTPSRe.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench output: %s", out)
	}
	return atof(string(m[1])) * 7
}

// loadExecutions reads the executions of a log into memory, by session.
func loadExecutions(b *testing.B, path string) map[string][]*event.Event {
	m := map[string][]*event.Event{}
	for _, ev := range captured(b, path) {
		m[ev.Session] = append(m[ev.Session], ev)
	}
	return m
}

// captured returns a capture's executions in the database postgres, in
// log order.
func captured(b *testing.B, path string) []*event.Event {
	rd, err := logread.Open(path, logread.Options{Prefix: workload.LogLinePrefix})
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	var evs []*event.Event
	for ev, err := range event.All(rd) {
		if err != nil {
			b.Fatal(err)
		}
		if ev.IsExecution() && ev.Database == "postgres" {
			evs = append(evs, ev)
		}
	}
	return evs
}

// bareRate runs each session's executions from memory on its own
// goroutine and connection, with nothing around them.
func bareRate(b *testing.B, c *pgcluster.Cluster, perSession map[string][]*event.Event) float64 {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n int
	conns := map[string]*pgconn.PgConn{}
	for id := range perSession {
		conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			b.Fatal(err)
		}
		conns[id] = conn
	}
	start := time.Now()
	for id, evs := range perSession {
		conn := conns[id]
		wg.Go(func() {
			defer conn.Close(ctx)
			prepared := map[string]bool{}
			params := make([][]byte, 0, 8)
			for _, ev := range evs {
				var err error
				switch {
				case ev.Kind == event.Statement:
					_, err = conn.Exec(ctx, ev.Query).ReadAll()
				case ev.Name != "":
					if !prepared[ev.Name] {
						if _, err := conn.Prepare(ctx, ev.Name, ev.Query, nil); err != nil {
							b.Error(err)
							return
						}
						prepared[ev.Name] = true
					}
					params = params[:0]
					for _, p := range ev.Params {
						params = append(params, []byte(p.Value))
					}
					_, err = conn.ExecPrepared(ctx, ev.Name, params, nil, nil).Close()
				default:
					params = params[:0]
					for _, p := range ev.Params {
						params = append(params, []byte(p.Value))
					}
					_, err = conn.ExecParams(ctx, ev.Query, params, nil, nil, nil).Close()
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
			mu.Lock()
			n += len(evs)
			mu.Unlock()
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

func startProfiles(b *testing.B, dir, run string) func() {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := func(kind string) string { return filepath.Join(dir, kind+"-"+run+".pprof") }
	f, err := os.Create(name("cpu"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	// The allocations before and after: go tool pprof -base
	// allocs0-RUN.pprof allocs-RUN.pprof shows the run's own.
	writeProfile := func(kind, file string) {
		if kind == "allocs" {
			runtime.GC() // the profile is as of the last collection
		}
		pf, err := os.Create(name(file))
		if err != nil {
			b.Fatal(err)
		}
		pprof.Lookup(kind).WriteTo(pf, 0)
		pf.Close()
	}
	writeProfile("allocs", "allocs0")
	// BENCH_TRACE=1: an execution trace of the run too (go tool trace).
	var tf *os.File
	if os.Getenv("BENCH_TRACE") != "" {
		if tf, err = os.Create(filepath.Join(dir, "trace-"+run+".out")); err != nil {
			b.Fatal(err)
		}
		if err := trace.Start(tf); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		if tf != nil {
			trace.Stop()
			tf.Close()
		}
		pprof.StopCPUProfile()
		f.Close()
		writeProfile("allocs", "allocs")
		writeProfile("block", "block")
		writeProfile("mutex", "mutex")
	}
}

// usage is who's resource use so far (RUSAGE_SELF or RUSAGE_CHILDREN):
// context switches, voluntary (the thread slept: waited for a socket) and
// not, minor page faults, and user and system CPU seconds.
type usage struct {
	voluntary, involuntary, minflt float64
	user, sys                      float64
}

func usageOf(who int) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return usage{}
	}
	return usage{float64(ru.Nvcsw), float64(ru.Nivcsw), float64(ru.Minflt),
		float64(ru.Utime.Nano()) / 1e9, float64(ru.Stime.Nano()) / 1e9}
}

// threadUsage reads every thread's CPU ticks (user, system) and context
// switches (voluntary, involuntary) from /proc/self/task, by thread id.
func threadUsage() map[string][4]float64 {
	out := map[string][4]float64{}
	dirs, _ := os.ReadDir("/proc/self/task")
	for _, d := range dirs {
		var u [4]float64
		if b, err := os.ReadFile("/proc/self/task/" + d.Name() + "/stat"); err == nil {
			// The fields after the command's closing parenthesis:
			// utime and stime are the 12th and 13th.
			if i := bytes.LastIndexByte(b, ')'); i > 0 {
				if f := strings.Fields(string(b[i+1:])); len(f) > 12 {
					u[0], u[1] = atof(f[11]), atof(f[12])
				}
			}
		}
		if b, err := os.ReadFile("/proc/self/task/" + d.Name() + "/status"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
					u[2] = atof(strings.TrimSpace(v))
				}
				if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
					u[3] = atof(strings.TrimSpace(v))
				}
			}
		}
		out[d.Name()] = u
	}
	return out
}

// threadLine is the threads' use between two readings, busiest first:
// CPU ticks user+system, and switches per statement of n.
func threadLine(before, after map[string][4]float64, n float64) string {
	type th struct {
		id string
		d  [4]float64
	}
	var ths []th
	for id, a := range after {
		b := before[id]
		d := [4]float64{a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]}
		if d[0]+d[1]+d[2]+d[3] > 0 {
			ths = append(ths, th{id, d})
		}
	}
	sort.Slice(ths, func(i, j int) bool { return ths[i].d[0]+ths[i].d[1] > ths[j].d[0]+ths[j].d[1] })
	var parts []string
	for _, t := range ths {
		parts = append(parts, fmt.Sprintf("[ticks %.0f+%.0f, switches %.3f+%.3f]", t.d[0], t.d[1], t.d[2]/n, t.d[3]/n))
	}
	return strings.Join(parts, " ")
}

// per is the use between u0 and u, per statement of n.
func (u usage) per(u0 usage, n float64) usage {
	return usage{(u.voluntary - u0.voluntary) / n, (u.involuntary - u0.involuntary) / n, (u.minflt - u0.minflt) / n,
		(u.user - u0.user) / n, (u.sys - u0.sys) / n}
}

func (u usage) String() string {
	return fmt.Sprintf("switches %.2f, %.2f; minor faults %.3f; user %.1f µs, sys %.1f µs",
		u.voluntary, u.involuntary, u.minflt, u.user*1e6, u.sys*1e6)
}

// cpuTime is the user+system CPU seconds of who (RUSAGE_SELF or
// RUSAGE_CHILDREN, the children waited for).
func cpuTime(who int) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func nExec(m map[string][]*event.Event) int {
	n := 0
	for _, evs := range m {
		n += len(evs)
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// replayLog replays a log whose log_line_prefix is prefix.
func replayLog(b testing.TB, path, prefix string, opts Options) *results.Result {
	return replayLogHard(b, path, prefix, context.Background(), opts)
}

// timeline counts statements per 500 ms, to see the start and the tail.
type timeline struct {
	nopSink
	start time.Time
	mu    sync.Mutex
	n     []int
}

func (t *timeline) Statement(Sample) {
	i := int(time.Since(t.start) / (500 * time.Millisecond))
	t.mu.Lock()
	for len(t.n) <= i {
		t.n = append(t.n, 0)
	}
	t.n[i]++
	t.mu.Unlock()
}

func (t *timeline) buckets() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// benchSessions is BENCH_SESSIONS: how this build's replay runs its
// sessions, auto (the default: one engine with GOMAXPROCS up to 2, so in
// both layouts on a 2-core machine), engine or goroutines.
func benchSessions(b *testing.B) Sessions {
	switch m := envString("BENCH_SESSIONS", "auto"); m {
	case "auto":
		return SessionsAuto
	case "engine":
		return SessionsEngine
	case "goroutines":
		return SessionsGoroutines
	default:
		b.Fatalf("BENCH_SESSIONS: %q is none of auto, engine, goroutines", m)
		return 0
	}
}
