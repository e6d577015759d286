package replay

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
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

// BenchmarkWireVsPgconn compares, on one server after capturing a
// pgbench log, BENCH_ROUNDS (3) times in turn: pgbench, the bare pgconn
// loop of BenchmarkSpeed0Experiment, the same bare loop on the
// message-level path the replay uses (wire.go), and the replay with a
// cancellable hard context, as the CLI runs it. It logs the rates, each
// as a share of pgbench's, and the client CPU per statement.
// BENCH_PROFILE=DIR writes a CPU profile of each phase there.
func BenchmarkWireVsPgconn(b *testing.B) {
	clients, secs, rounds, c, files, perSession := speed0Capture(b)
	n := float64(nExec(perSession))
	profDir := os.Getenv("BENCH_PROFILE")
	profile := func(name string, round int) func() {
		if profDir == "" {
			return func() {}
		}
		os.MkdirAll(profDir, 0o755)
		f, err := os.Create(profDir + "/" + name + "-" + itoa(round+1) + ".pprof")
		if err != nil {
			b.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		return func() { pprof.StopCPUProfile(); f.Close() }
	}
	for b.Loop() {
		for round := range rounds {
			ch0 := cpuTime(syscall.RUSAGE_CHILDREN)
			base := pgbenchRate(b, c, clients, secs)
			pgbenchCPU := (cpuTime(syscall.RUSAGE_CHILDREN) - ch0) / (base * float64(secs))

			stop := profile("bare", round)
			self0 := cpuTime(syscall.RUSAGE_SELF)
			bare := bareRate(b, c, perSession)
			bareCPU := (cpuTime(syscall.RUSAGE_SELF) - self0) / n
			stop()

			stop = profile("wire", round)
			self0 = cpuTime(syscall.RUSAGE_SELF)
			wire := bareWireRate(b, c, perSession)
			wireCPU := (cpuTime(syscall.RUSAGE_SELF) - self0) / n
			stop()

			floor, floorCPU, floorWaits, floorParks, floorGiveUps := -1.0, 0.0, 0, 0, 0
			if mode := benchSync(b); mode != syncdep.Off {
				steps := syncSteps(b, c, files[len(files)-1], mode)
				stop = profile("syncfloor", round)
				self0 = cpuTime(syscall.RUSAGE_SELF)
				floor, floorWaits, floorParks, floorGiveUps = syncFloorRate(b, c, steps)
				floorCPU = (cpuTime(syscall.RUSAGE_SELF) - self0) / n
				stop()
				// The same by row (pgbench's key values), what a finer
				// order than syncdep's would leave.
				rows := rowSteps(b, files[len(files)-1])
				self0 = cpuTime(syscall.RUSAGE_SELF)
				rowFloor, rw, rp, rg := syncFloorRate(b, c, rows)
				rowCPU := (cpuTime(syscall.RUSAGE_SELF) - self0) / n
				b.Logf("round %d: row floor (bare wire keeping the commit order by row) %.2f of pgbench, client CPU %.1f µs per statement, %.2f of pgbench's; %d waits, %d parks, %d given up",
					round+1, rowFloor/base, rowCPU*1e6, rowCPU/pgbenchCPU, rw, rp, rg)
			}

			hard, cancel := context.WithCancel(context.Background())
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			stop = profile("replay", round)
			self0 = cpuTime(syscall.RUSAGE_SELF)
			res := replayLogHard(b, files[len(files)-1], workload.LogLinePrefix, hard, Options{Target: c.DSN("postgres"), Speed: 0, Sync: benchSync(b)})
			stop()
			cancel()
			runtime.ReadMemStats(&ms1)
			ran := float64(res.Statements.Executed + res.Statements.Failed)
			replayCPU := (cpuTime(syscall.RUSAGE_SELF) - self0) / ran
			rate := ran / res.WallSeconds
			b.Logf("round %d: pgbench %.0f stmt/s; bare pgconn %.2f, bare wire %.2f, replay %.2f of pgbench; client CPU per statement: pgbench %.1f µs, bare pgconn %.1f µs, bare wire %.1f µs, replay %.1f µs",
				round+1, base, bare/base, wire/base, rate/base, pgbenchCPU*1e6, bareCPU*1e6, wireCPU*1e6, replayCPU*1e6)
			if floor >= 0 {
				b.Logf("round %d: sync floor (bare wire keeping the commit order) %.2f of pgbench, client CPU %.1f µs per statement, %.2f of pgbench's; %d sync waits, %d parks, %d given up; replay's rate %.2f of the floor's, CPU %.2fx the floor's",
					round+1, floor/base, floorCPU*1e6, floorCPU/pgbenchCPU, floorWaits, floorParks, floorGiveUps, rate/floor, replayCPU/floorCPU)
			}
			b.Logf("round %d: replay: %.1f allocations, %.0f bytes per statement (log reading included), %d GCs",
				round+1, float64(ms1.Mallocs-ms0.Mallocs)/ran, float64(ms1.TotalAlloc-ms0.TotalAlloc)/ran, ms1.NumGC-ms0.NumGC)
		}
	}
}

// replayLogHard replays a log whose log_line_prefix is prefix, with a
// hard context.
func replayLogHard(b testing.TB, path, prefix string, hard context.Context, opts Options) *results.Result {
	rd, err := logread.Open(path, logread.Options{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	r, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	res, err := r.Run(context.Background(), hard, []event.Source{rd})
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// runBare runs one captured execution on the message-level path, in the
// protocol form it was logged in, with nothing around it.
func (s *session) runBare(ctx context.Context, ev *event.Event) error {
	switch {
	case ev.Kind == event.Statement:
		return s.execSimple(ev.Query)
	case ev.Name != "":
		if err := s.prepare(ctx, ev.Name, ev.Query, nil); err != nil {
			return err
		}
		return s.execPrepared(ev.Name, s.bindParams(ev.Params), nil)
	default:
		return s.execParams(ev.Query, s.bindParams(ev.Params), nil)
	}
}

// bareWireRate is bareRate on the message-level path: each session's
// executions from memory on its own goroutine and connection.
func bareWireRate(b *testing.B, c *pgcluster.Cluster, perSession map[string][]*event.Event) float64 {
	ctx := context.Background()
	r := &Replayer{hard: ctx}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n int
	sessions := map[string]*session{}
	for id := range perSession {
		conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			b.Fatal(err)
		}
		sessions[id] = &session{r: r, conn: conn}
	}
	start := time.Now()
	for id, evs := range perSession {
		s := sessions[id]
		wg.Go(func() {
			defer s.conn.Close(ctx)
			for _, ev := range evs {
				err := s.runBare(ctx, ev)
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

// BenchmarkStatementAllocs runs one replayed execution of a named
// prepared statement, through session.statement with its accounting,
// against a local server, and reports the allocations of each.
func BenchmarkStatementAllocs(b *testing.B) {
	c := pgclustertest.StartT(b, pgcluster.Options{})
	r, err := New(Options{Target: c.DSN("postgres"), Speed: 0})
	if err != nil {
		b.Fatal(err)
	}
	hard, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.stopCh = make(chan struct{})
	r.hard = hard
	clk := newClock(Unpaced, 0, time.Now(), 0)
	for _, tc := range []struct {
		name string
		ev   event.Event
	}{
		{"prepared", event.Event{Kind: event.Execute, Name: "p1", Query: "SELECT $1::int + 1", Params: []event.Param{{Value: "41"}}}},
		{"unnamed", event.Event{Kind: event.Execute, Query: "SELECT $1::int + 1", Params: []event.Param{{Value: "41"}}}},
		{"simple", event.Event{Kind: event.Statement, Query: "SELECT 1"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ev := tc.ev
			ev.Session, ev.User, ev.Database = "s", "", ""
			s := r.newSession(&ev, &clk)
			defer s.closeConn()
			it := item{ev: &ev}
			t := time.NewTimer(time.Hour)
			s.statement(it, t) // connects, prepares
			allocs := testing.AllocsPerRun(1000, func() { s.statement(it, t) })
			for b.Loop() {
				s.statement(it, t)
			}
			b.ReportMetric(allocs, "allocs/stmt")
		})
	}
}

// BenchmarkBareLoop runs a named prepared statement on BENCH_CLIENTS (8)
// connections, through pgconn's ExecPrepared and through the replay's
// message-level path, against BENCH_DSN or a throwaway server, and
// reports the client CPU per statement. Run it under strace -c or perf to
// count the system calls of each.
func BenchmarkBareLoop(b *testing.B) {
	dsn := os.Getenv("BENCH_DSN")
	if dsn == "" {
		dsn = pgclustertest.StartT(b, pgcluster.Options{}).DSN("postgres")
	}
	clients := envInt("BENCH_CLIENTS", 8)
	ctx := context.Background()
	run := func(b *testing.B, exec func(s *session) error) {
		ss := make([]*session, clients)
		for i := range ss {
			conn, err := pgconn.Connect(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			ss[i] = &session{r: &Replayer{hard: ctx}, conn: conn}
			if _, err := conn.Prepare(ctx, "p", "SELECT $1::int + 1", nil); err != nil {
				b.Fatal(err)
			}
		}
		cpu0 := cpuTime(syscall.RUSAGE_SELF)
		var wg sync.WaitGroup
		for _, s := range ss {
			wg.Go(func() {
				for range b.N / clients {
					if err := exec(s); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric((cpuTime(syscall.RUSAGE_SELF)-cpu0)/float64(b.N/clients*clients)*1e6, "cpu_µs/stmt")
	}
	params := [][]byte{[]byte("41")}
	b.Run("pgconn", func(b *testing.B) {
		run(b, func(s *session) error {
			_, err := s.conn.ExecPrepared(ctx, "p", params, nil, nil).Close()
			return err
		})
	})
	b.Run("wire", func(b *testing.B) {
		run(b, func(s *session) error { return s.execPrepared("p", params, nil) })
	})
}
