package proxy

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// countSink counts records and keeps none, as a recorder that keeps up.
type countSink struct{ n int64 }

func (s *countSink) Add(capture.Record) bool { s.n++; return true }

// byTurns runs a and b, a first on even turns i and b first on odd ones,
// so that neither always follows the other, and returns what each gave.
func byTurns[T any](i int, a, b func() T) (ra, rb T) {
	if i%2 == 0 {
		ra = a()
		rb = b()
	} else {
		rb = b()
		ra = a()
	}
	return ra, rb
}

// BenchmarkProxySelect times extended-protocol SELECT 1 round trips over
// loopback TCP, directly and through the proxy, alternating one of each
// per iteration so that both sides see the same machine: direct-ns/op,
// proxy-ns/op and their ratio (proxy/direct) are reported from the same
// run. The proxy records into a sink that keeps nothing (one session, so
// Add is never called concurrently).
func BenchmarkProxySelect(b *testing.B) { benchSelect(b, false) }

// BenchmarkProxySelectResume is BenchmarkProxySelect with the session
// state a recording needs to take a session up from the middle
// (Config.ResumeSessions): each Parse, Bind, Execute and answer is
// followed (package midstream, wire.Names) on the relay's path.
func BenchmarkProxySelectResume(b *testing.B) { benchSelect(b, true) }

func benchSelect(b *testing.B, resume bool) {
	c := pgclustertest.StartT(b, pgcluster.Options{})
	r := startProxy(b, Config{Upstream: "host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " sslmode=disable", Sink: &countSink{},
		ResumeSessions: resume})
	ctx := context.Background()
	connect := func(dsn string) *pgconn.PgConn {
		conn := pgclustertest.PgConn(ctx, b, dsn)
		b.Cleanup(func() { conn.Close(ctx) })
		return conn
	}
	direct := connect("host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " user=postgres dbname=postgres sslmode=disable")
	proxied := connect(r.dsn("postgres", "postgres", "sslmode=disable"))
	roundTrip := func(conn *pgconn.PgConn) time.Duration {
		start := time.Now()
		if _, err := conn.ExecParams(ctx, "SELECT 1", nil, nil, nil, nil).Close(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range 100 { // warm both paths: plan cache, buffers, scheduler
		roundTrip(direct)
		roundTrip(proxied)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var d, p time.Duration
	// Medians too: on a shared machine one stall moves a mean.
	ds, ps := make([]time.Duration, 0, 1<<16), make([]time.Duration, 0, 1<<16)
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always follows the other.
		dt, pt := byTurns(i, func() time.Duration { return roundTrip(direct) }, func() time.Duration { return roundTrip(proxied) })
		d, p = d+dt, p+pt
		ds, ps = append(ds, dt), append(ps, pt)
	}
	n := float64(b.N)
	b.ReportMetric(float64(d.Nanoseconds())/n, "direct-ns/op")
	b.ReportMetric(float64(p.Nanoseconds())/n, "proxy-ns/op")
	b.ReportMetric(float64(p)/float64(d), "proxy/direct")
	slices.Sort(ds)
	slices.Sort(ps)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "direct-p50-ns")
	b.ReportMetric(float64(ps[len(ps)/2].Nanoseconds()), "proxy-p50-ns")
}
