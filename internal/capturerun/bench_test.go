package capturerun

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

var (
	tpsRE     = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	latencyRE = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
)

// BenchmarkCapturePgbench is what the capture costs an application:
// pgbench (BENCH_MODE, default select-only -S with -M prepared) with
// BENCH_CLIENTS clients (default 16) for BENCH_SECONDS (default 5) over
// loopback TCP, directly and through the capture proxy recording to disk
// with its Recorder, one run of each per iteration, their order turning
// from one iteration to the next, so that both see the same machine.
// It reports each side's median transactions per second and mean
// latency, and the median of the iterations' proxy/direct ratios
// (bench/proxy.sh runs it).
func BenchmarkCapturePgbench(b *testing.B) {
	clients := envOr("BENCH_CLIENTS", "16")
	seconds := envOr("BENCH_SECONDS", "5")
	n, _ := strconv.Atoi(clients)
	c := pgclustertest.StartT(b, pgcluster.Options{Settings: map[string]string{"max_connections": strconv.Itoa(n + 20)}})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "10", "postgres"); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	s := start(b, Config{Upstream: c.DSN("postgres"), Out: filepath.Join(b.TempDir(), "cap")})
	host, port, _ := net.SplitHostPort(s.addr)
	mode := []string{"-S", "-M", "prepared"}
	if envOr("BENCH_MODE", "select") == "tpcb" {
		mode = []string{"-M", "prepared"}
	}
	run := func(through bool) (tps, lat float64) {
		args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(c.Port())}
		if through {
			args = []string{"-h", host, "-p", port}
		}
		args = append(args, mode...)
		args = append(args, "-n", "-c", clients, "-j", "2", "-T", seconds, "postgres")
		out, err := c.Pgbench(ctx, args...)
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		m, l := tpsRE.FindSubmatch(out), latencyRE.FindSubmatch(out)
		if m == nil || l == nil {
			b.Fatalf("no tps in pgbench's output:\n%s", out)
		}
		tps, _ = strconv.ParseFloat(string(m[1]), 64)
		lat, _ = strconv.ParseFloat(string(l[1]), 64)
		return tps, lat
	}
	run(false) // warm the server's caches
	var dt, pt, ratios []float64
	var dl, pl float64
	for i := 0; b.Loop(); i++ {
		var d, p, dlat, plat float64
		if i%2 == 0 {
			d, dlat = run(false)
			p, plat = run(true)
		} else {
			p, plat = run(true)
			d, dlat = run(false)
		}
		dt, pt, ratios = append(dt, d), append(pt, p), append(ratios, p/d)
		dl, pl = dl+dlat, pl+plat
	}
	s.cancel()
	r := <-s.done
	if r.err != nil || !r.sum.Manifest.Complete {
		b.Fatalf("capture: %v, %+v", r.err, r.sum.Manifest)
	}
	k := float64(len(dt))
	b.ReportMetric(median(dt), "direct-tps")
	b.ReportMetric(median(pt), "proxy-tps")
	b.ReportMetric(median(ratios), "proxy/direct-tps")
	b.ReportMetric(dl/k, "direct-latency-ms")
	b.ReportMetric(pl/k, "proxy-latency-ms")
	b.ReportMetric(float64(r.sum.Manifest.Bytes)/float64(r.sum.Manifest.Records), "capture-bytes/record")
}

func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
