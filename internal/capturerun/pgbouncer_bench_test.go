package capturerun

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	execpkg "os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

var txRE = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

// BenchmarkProxyVsPgbouncer is issue 47's yardstick: the capture proxy,
// recording to disk, against PgBouncer in session pooling (the
// distribution's pgbouncer package), relaying the same pgbench traffic
// to the same server. Each iteration runs every mode (select-only with
// the simple and the prepared protocol, and the TPC-B-like script,
// prepared) through both, their order turning from one iteration to the
// next, BENCH_CLIENTS clients (default 16) for BENCH_SECONDS (default 5).
// The proxy runs on BENCH_THREADS threads (Config.Threads, default 1 as
// capture --threads). With BENCH_RECORD=0 it records nothing: an admin
// interface and no Out, as a proxy left in the path between recordings,
// which still keeps each session's state for a recording that may start.
//
// CPU is what each relay used per transaction: PgBouncer's from its
// process's /proc/PID/stat, the proxy's from this process's rusage (the
// proxy runs in it; pgbench is a child, counted apart, and the test
// itself is idle meanwhile). Both are ratios measured in one run on one
// machine, as the guide asks: each reported as the iterations' median,
// with their lowest and highest (-min, -max). Beside them, each relay's
// sleeps per transaction (its threads' voluntary context switches): a
// relay that takes more events per wake-up sleeps less, and each sleep
// and wake-up is CPU, so a relay that falls behind its clients spends
// less per transaction; the throughput ratio shows whether it did. After
// the pgbench runs, one client times
// SELECT 1 round trips directly, through the proxy and through PgBouncer,
// alternating in blocks, and reports what each adds to the direct p50.
//
// bench/proxy.sh runs it with BENCH_PGBOUNCER=1.
func BenchmarkProxyVsPgbouncer(b *testing.B) {
	if os.Getenv("BENCH_PGBOUNCER") == "" {
		b.Skip("set BENCH_PGBOUNCER=1 (bench/proxy.sh pgbouncer): it needs the pgbouncer package")
	}
	bouncerBin, err := execpkg.LookPath("pgbouncer")
	if err != nil {
		if bouncerBin, err = execpkg.LookPath("/usr/sbin/pgbouncer"); err != nil {
			b.Fatal("pgbouncer is not installed (apt-get install pgbouncer)")
		}
	}
	clients := envOr("BENCH_CLIENTS", "16")
	seconds := envOr("BENCH_SECONDS", "5")
	n, _ := strconv.Atoi(clients)
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{"max_connections": strconv.Itoa(2*n + 20)}})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "10", "postgres"); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	threads, _ := strconv.Atoi(envOr("BENCH_THREADS", "1"))
	// Over TCP, as PgBouncer's: the same path to the same server.
	upstream := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", c.Port())
	record := envOr("BENCH_RECORD", "1") != "0"
	cfg := Config{Upstream: upstream, Threads: threads}
	if record {
		cfg.Out = filepath.Join(b.TempDir(), "cap")
	} else {
		cfg.Admin = "127.0.0.1:0"
	}
	s := start(b, cfg)
	proxyHost, proxyPort, _ := net.SplitHostPort(s.addr)
	bouncerPort, bouncerPID := startPgbouncer(b, bouncerBin, c.Port(), n)

	type mode struct {
		name string
		args []string
	}
	modes := []mode{
		{"select-simple", []string{"-S", "-M", "simple"}},
		{"select-prepared", []string{"-S", "-M", "prepared"}},
		{"tpcb-prepared", []string{"-M", "prepared"}},
	}
	// run returns the transactions pgbench made, the CPU seconds the
	// relay used meanwhile, and the times its threads went to sleep.
	run := func(port string, m mode, cpu func() float64, sleeps func() float64) (tx, cpuSec, tps, slept float64) {
		args := append([]string{"-h", proxyHost, "-p", port}, m.args...)
		args = append(args, "-n", "-c", clients, "-j", "2", "-T", seconds, "postgres")
		before, sleptBefore := cpu(), sleeps()
		out, err := c.Pgbench(ctx, args...)
		after := cpu()
		slept = sleeps() - sleptBefore
		if err != nil {
			b.Fatalf("pgbench %v: %v\n%s", args, err, out)
		}
		t, r := txRE.FindSubmatch(out), tpsRE.FindSubmatch(out)
		if t == nil || r == nil {
			b.Fatalf("no transactions in pgbench's output:\n%s", out)
		}
		tx, _ = strconv.ParseFloat(string(t[1]), 64)
		tps, _ = strconv.ParseFloat(string(r[1]), 64)
		return tx, after - before, tps, slept
	}
	proxyCPU := selfCPU
	bouncerCPU := func() float64 { return procCPU(b, bouncerPID) }
	proxySleeps := func() float64 { return voluntarySwitches(b, "self") }
	bouncerSleeps := func() float64 { return voluntarySwitches(b, strconv.Itoa(bouncerPID)) }
	bouncerPortS := strconv.Itoa(bouncerPort)
	run(proxyPort, modes[0], proxyCPU, proxySleeps) // warm the server's caches and both relays
	run(bouncerPortS, modes[0], bouncerCPU, bouncerSleeps)
	type sums struct{ ratio, tpsRatio, pUs, bUs, pSleeps, bSleeps []float64 }
	got := make([]sums, len(modes))
	for i := 0; b.Loop(); i++ {
		for j, m := range modes {
			var pTx, pCPU, pTPS, pSlept, bTx, bCPU, bTPS, bSlept float64
			if (i+j)%2 == 0 {
				pTx, pCPU, pTPS, pSlept = run(proxyPort, m, proxyCPU, proxySleeps)
				bTx, bCPU, bTPS, bSlept = run(bouncerPortS, m, bouncerCPU, bouncerSleeps)
			} else {
				bTx, bCPU, bTPS, bSlept = run(bouncerPortS, m, bouncerCPU, bouncerSleeps)
				pTx, pCPU, pTPS, pSlept = run(proxyPort, m, proxyCPU, proxySleeps)
			}
			pu, bu := 1e6*pCPU/pTx, 1e6*bCPU/bTx
			g := &got[j]
			g.pUs, g.bUs = append(g.pUs, pu), append(g.bUs, bu)
			g.ratio, g.tpsRatio = append(g.ratio, pu/bu), append(g.tpsRatio, pTPS/bTPS)
			g.pSleeps, g.bSleeps = append(g.pSleeps, pSlept/pTx), append(g.bSleeps, bSlept/bTx)
		}
	}
	for j, m := range modes {
		g := got[j]
		b.ReportMetric(median(g.pUs), m.name+"-proxy-cpu-us/tx")
		b.ReportMetric(median(g.bUs), m.name+"-pgbouncer-cpu-us/tx")
		b.ReportMetric(median(g.ratio), m.name+"-cpu-proxy/pgbouncer")
		b.ReportMetric(slices.Min(g.ratio), m.name+"-cpu-proxy/pgbouncer-min")
		b.ReportMetric(slices.Max(g.ratio), m.name+"-cpu-proxy/pgbouncer-max")
		b.ReportMetric(median(g.tpsRatio), m.name+"-tps-proxy/pgbouncer")
		b.ReportMetric(slices.Min(g.tpsRatio), m.name+"-tps-proxy/pgbouncer-min")
		b.ReportMetric(slices.Max(g.tpsRatio), m.name+"-tps-proxy/pgbouncer-max")
		b.ReportMetric(median(g.pSleeps), m.name+"-proxy-sleeps/tx")
		b.ReportMetric(median(g.bSleeps), m.name+"-pgbouncer-sleeps/tx")
	}
	direct, proxied, bounced := roundTrips(b, []string{
		fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", c.Port()),
		fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", proxyHost, proxyPort),
		fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", bouncerPort),
	})
	b.ReportMetric(1e6*(proxied-direct), "proxy-added-p50-us")
	b.ReportMetric(1e6*(bounced-direct), "pgbouncer-added-p50-us")
	s.cancel()
	r := <-s.done
	if r.err != nil || record && !r.sum.Manifest.Complete {
		b.Fatalf("capture: %v, %+v", r.err, r.sum.Manifest)
	}
	// A relay is cheap when it records nothing: what it recorded and
	// dropped is shown beside its CPU.
	b.ReportMetric(float64(r.sum.Manifest.Records), "proxy-records")
	b.ReportMetric(float64(r.sum.Recorder.Dropped), "proxy-records-dropped")
}

// roundTrips times SELECT 1 on one connection per DSN, in blocks of 200
// taken in turn, 10 blocks each, and returns each DSN's median in
// seconds.
func roundTrips(b *testing.B, dsns []string) (direct, proxied, bounced float64) {
	ctx := context.Background()
	conns := make([]*pgconn.PgConn, len(dsns))
	for i, d := range dsns {
		conn := pgclustertest.PgConn(ctx, b, d)
		defer conn.Close(ctx)
		conns[i] = conn
	}
	times := make([][]float64, len(dsns))
	for block := 0; block < 10; block++ {
		for k := range conns {
			i := (k + block) % len(conns)
			for range 200 {
				t0 := time.Now()
				if _, err := conns[i].Exec(ctx, "SELECT 1").ReadAll(); err != nil {
					b.Fatal(err)
				}
				times[i] = append(times[i], time.Since(t0).Seconds())
			}
		}
	}
	return median(times[0]), median(times[1]), median(times[2])
}

// startPgbouncer starts PgBouncer in session pooling in front of the
// server on port upstream, as the server's user when running as root
// (PgBouncer refuses root), and returns its port and pid.
func startPgbouncer(b *testing.B, bin string, upstream, clients int) (int, int) {
	dir, err := os.MkdirTemp("", "pgbouncer")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ini := fmt.Sprintf(`[databases]
postgres = host=127.0.0.1 port=%d dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = session
max_client_conn = %d
default_pool_size = %d
logfile = %s
ignore_startup_parameters = extra_float_digits
`, upstream, port, filepath.Join(dir, "users.txt"), clients+20, clients+10, filepath.Join(dir, "pgbouncer.log"))
	for name, text := range map[string]string{"pgbouncer.ini": ini, "users.txt": `"postgres" ""` + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := execpkg.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Dir = &stderr, &stderr, dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			b.Fatalf("running as root: PgBouncer needs another user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b.Cleanup(func() { cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgconn.Connect(context.Background(), fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", port))
		if err == nil {
			conn.Close(context.Background())
			return port, cmd.Process.Pid
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			b.Fatalf("pgbouncer exited: %v\n%s%s", err, stderr.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("pgbouncer did not accept connections within 30 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// selfCPU is this process's user and system CPU seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// voluntarySwitches is the number of times process pid's threads (pid
// "self": this process's) went to sleep so far, the sum of their
// voluntary_ctxt_switches in /proc: a relay that handles more events per
// wake-up sleeps fewer times per transaction, and each sleep and wake-up
// costs it CPU (docs/capture-performance.md).
func voluntarySwitches(b *testing.B, pid string) float64 {
	tasks, err := filepath.Glob("/proc/" + pid + "/task/*/status")
	if err != nil || len(tasks) == 0 {
		b.Fatalf("threads of process %s: %v", pid, err)
	}
	total := 0.0
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				total += n
			}
		}
	}
	return total
}

// procCPU is process pid's user and system CPU seconds, from
// /proc/PID/stat (in clock ticks of 1/100 s, Linux's USER_HZ).
func procCPU(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command may hold spaces; the fields after it start past ')'.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100
}
