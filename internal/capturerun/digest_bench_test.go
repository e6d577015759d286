package capturerun

import (
	"context"
	"github.com/pgrehearse/pgrehearse/internal/proctest"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

var transactionsRE = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

// digestWorkloads are the traffic BenchmarkCaptureDigest relays: pgbench's
// select-only transaction (one row of one int per statement); a
// statement of 100 rows, of mixed sizes (25 to 315 bytes: a NULL
// or 84 characters, and 0 to 199 more) or narrow (two ints, 12 to 18
// bytes); one of 10,000 narrow rows, an export that fills the proxy's
// buffer at each read, where the digest weighs most against relaying; and
// one of 10,000 wide rows, pgbench_accounts' whole rows (with its filler
// of 84 characters: bodies of 110 bytes, hashed as longer than 64). Each
// is a pgbench script run with -M prepared.
var digestWorkloads = []struct{ name, script string }{
	{"select", "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"},
	{"rows100", "\\set a random(1, 100000 * :scale - 100)\n" +
		"SELECT aid, bid, abalance, CASE WHEN aid % 3 = 0 THEN filler END, repeat('x', aid % 200) FROM pgbench_accounts WHERE aid BETWEEN :a AND :a + 99;\n"},
	{"narrow100", "\\set a random(1, 100000 * :scale - 100)\n" +
		"SELECT aid, abalance FROM pgbench_accounts WHERE aid BETWEEN :a AND :a + 99;\n"},
	{"narrow10k", "\\set a random(1, 100000 * :scale - 10000)\n" +
		"SELECT aid, abalance FROM pgbench_accounts WHERE aid BETWEEN :a AND :a + 9999;\n"},
	{"wide10k", "\\set a random(1, 100000 * :scale - 10000)\n" +
		"SELECT aid, bid, abalance, filler FROM pgbench_accounts WHERE aid BETWEEN :a AND :a + 9999;\n"},
}

// BenchmarkCaptureDigest is what the rows' digest costs the capture
// proxy: the CPU time of this process (the proxy and its Recorder
// writing to disk; pgbench and the server are other processes) per
// message relayed, in both directions, through two capture proxies in
// front of one server, one with the digest and one without
// (Config.NoRowDigest), pgbench (BENCH_CLIENTS clients, default 4, for
// BENCH_SECONDS, default 3) through each in turn, their order turning from
// one iteration to the next. It reports the medians of each side's CPU per
// message and of the iterations' digest/no-digest ratios, and the lowest
// and highest ratio (bench/proxy.sh runs it with BENCH_DIGEST=1). A CPU
// profile of it tells what share of the proxy's CPU the digest takes:
// the samples in package rowdigest among those labelled digest=true.
func BenchmarkCaptureDigest(b *testing.B) {
	clients := envOr("BENCH_CLIENTS", "4")
	seconds := envOr("BENCH_SECONDS", "3")
	n, _ := strconv.Atoi(clients)
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{"max_connections": strconv.Itoa(n + 20)}})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "10", "postgres"); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	type leg struct {
		s    *started
		msgs func() float64
	}
	proxy := func(noDigest bool) leg {
		reg := prometheus.NewRegistry()
		var s *started
		// The proxy's goroutines inherit the label, so that a CPU
		// profile (-cpuprofile; pprof -tagfocus digest=true) tells the
		// two proxies' samples apart.
		pprof.Do(ctx, pprof.Labels("digest", strconv.FormatBool(!noDigest)), func(context.Context) {
			s = start(b, Config{Upstream: c.DSN("postgres"), Out: filepath.Join(b.TempDir(), "cap"), NoRowDigest: noDigest, Metrics: reg})
		})
		b.Cleanup(func() {
			s.cancel()
			if r := <-s.done; r.err != nil || !r.sum.Manifest.Complete {
				b.Errorf("capture: %v, %+v", r.err, r.sum.Manifest)
			}
		})
		return leg{s, func() float64 {
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			total := 0.0
			for _, mf := range mfs {
				if mf.GetName() == "pgrehearse_capture_messages_total" {
					for _, m := range mf.GetMetric() {
						total += m.GetCounter().GetValue()
					}
				}
			}
			return total
		}}
	}
	on, off := proxy(false), proxy(true)
	for _, w := range digestWorkloads {
		b.Run(w.name, func(b *testing.B) {
			script := filepath.Join(b.TempDir(), w.name+".sql")
			if err := os.WriteFile(script, []byte(w.script), 0o644); err != nil {
				b.Fatal(err)
			}
			// run is one pgbench through l: this process's CPU per
			// message relayed, and the transactions.
			run := func(l leg, secs string) (cpuPerMsg float64, tx int) {
				host, port, _ := net.SplitHostPort(l.s.addr)
				m0, c0 := l.msgs(), proctest.ProcessCPU(b)
				out, err := c.Pgbench(ctx, "-h", host, "-p", port, "-M", "prepared", "-f", script,
					"-n", "-c", clients, "-j", "2", "-T", secs, "postgres")
				cpu, msgs := proctest.ProcessCPU(b)-c0, l.msgs()-m0
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				m := transactionsRE.FindSubmatch(out)
				if m == nil || msgs == 0 {
					b.Fatalf("no transactions relayed (%v messages):\n%s", msgs, out)
				}
				tx, _ = strconv.Atoi(string(m[1]))
				return float64(cpu.Nanoseconds()) / msgs, tx
			}
			run(on, "1") // warm both proxies and the server's caches
			run(off, "1")
			var ons, offs, ratios []float64
			for i := 0; b.Loop(); i++ {
				var d, nd float64
				if i%2 == 0 {
					d, _ = run(on, seconds)
					nd, _ = run(off, seconds)
				} else {
					nd, _ = run(off, seconds)
					d, _ = run(on, seconds)
				}
				ons, offs, ratios = append(ons, d), append(offs, nd), append(ratios, d/nd)
			}
			b.ReportMetric(median(ons), "digest-cpu-ns/msg")
			b.ReportMetric(median(offs), "nodigest-cpu-ns/msg")
			b.ReportMetric(median(ratios), "digest/nodigest")
			b.ReportMetric(slices.Min(ratios), "ratio-min")
			b.ReportMetric(slices.Max(ratios), "ratio-max")
		})
	}
}
