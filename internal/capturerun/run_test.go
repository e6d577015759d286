package capturerun

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// started is a Run in the background.
type started struct {
	addr      string
	admin     string
	cancel    context.CancelFunc
	done      chan result
	mu        sync.Mutex
	finalized []StopReason
}

type result struct {
	sum Summary
	err error
}

func start(t testing.TB, cfg Config) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{cancel: cancel, done: make(chan result, 1)}
	listening := make(chan [2]string, 1)
	cfg.Listen = "127.0.0.1:0"
	cfg.Listening = func(a, admin string) { listening <- [2]string{a, admin} }
	cfg.Finalized = func(why StopReason, _ capture.Manifest) {
		s.mu.Lock()
		s.finalized = append(s.finalized, why)
		s.mu.Unlock()
	}
	go func() {
		sum, err := Run(ctx, cfg)
		s.done <- result{sum, err}
	}()
	t.Cleanup(cancel)
	select {
	case a := <-listening:
		s.addr, s.admin = a[0], a[1]
	case r := <-s.done:
		t.Fatalf("Run returned before listening: %v", r.err)
	}
	return s
}

func (s *started) stopped() []StopReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StopReason(nil), s.finalized...)
}

func (s *started) dsn() string {
	host, port, _ := net.SplitHostPort(s.addr)
	return "host=" + host + " port=" + port + " user=" + "postgres dbname=postgres sslmode=disable"
}

// query runs sql through the proxy on a new connection.
func query(t *testing.T, s *started, user, sql string) {
	t.Helper()
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(s.addr)
	conn := pgclustertest.PgConn(ctx, t, "host="+host+" port="+port+" user="+user+" dbname=postgres sslmode=disable")
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
		t.Fatal(err)
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}

// TestRunDurationThenRelays: --duration finalizes a complete capture,
// the metrics say the proxy stopped recording, and the proxy goes on
// relaying, unrecorded, until it is stopped.
func TestRunDurationThenRelays(t *testing.T) {
	// Sequential: its first query and held session must come within the
	// 500 ms --duration, which a busy machine may not leave them.
	c := pgclustertest.StartT(t, pgcluster.Options{})
	user := c.User()
	reg := prometheus.NewRegistry()
	dir := filepath.Join(t.TempDir(), "cap")
	s := start(t, Config{Upstream: c.DSN("postgres"), Out: dir, Duration: 500 * time.Millisecond, Metrics: reg})
	query(t, s, user, "SELECT 1")
	// A session that stays open across the limit is recorded as open.
	held := pgclustertest.PgConn(context.Background(), t, s.dsn())
	defer held.Close(context.Background())
	if got := metric(t, reg, "pgrehearse_capture_recording", nil); got != 1 && len(s.stopped()) == 0 {
		t.Errorf("recording %v while the capture runs", got)
	}
	poll(t, "the capture finalized at --duration", func() bool { return len(s.stopped()) > 0 })
	if got := metric(t, reg, "pgrehearse_capture_recording", nil); got != 0 {
		t.Errorf("recording %v after the capture was finalized, want 0", got)
	}
	if got := metric(t, reg, "pgrehearse_capture_records_total", nil); got < 3 {
		t.Errorf("records_total %v after the capture was finalized, want what it wrote (a startup, a query, its answers)", got)
	}
	// Still relaying, not recording.
	query(t, s, user, "SELECT 2")
	if n := metric(t, reg, "pgrehearse_capture_sessions_total", nil); n < 2 {
		t.Errorf("sessions_total %v, want 2", n)
	}
	// The proxy counts a Terminate as it relays it, after the client
	// went on.
	poll(t, "the two sessions' Query and Terminate counted", func() bool {
		return metric(t, reg, "pgrehearse_capture_messages_total", map[string]string{"from": "client"}) >= 4
	})
	// Each of those came in a chunk of its own, timed once forwarded.
	poll(t, "the time the proxy added to the client's four chunks and the server's answers", func() bool {
		return metric(t, reg, "pgrehearse_capture_relay_seconds", map[string]string{"from": "client"}) >= 4 &&
			metric(t, reg, "pgrehearse_capture_relay_seconds", map[string]string{"from": "server"}) >= 2
	})
	s.cancel()
	r := <-s.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.Stopped != StopDuration || !r.sum.Manifest.Complete || r.sum.OpenAtEnd != 1 {
		t.Errorf("stopped %q, %d open at the end, manifest %+v: want a complete capture stopped by its duration, with the held session open",
			r.sum.Stopped, r.sum.OpenAtEnd, r.sum.Manifest)
	}
	if got := s.stopped(); len(got) != 1 {
		t.Errorf("finalized %v, want once", got)
	}
	// The capture holds the first session, not the second.
	rd, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	queries := 0
	ends := map[capture.EndReason]int{}
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.Kind == capture.KindFrontend && len(rec.Msg) > 0 && rec.Msg[0] == 'Q' {
			queries++
		}
		if rec.Kind == capture.KindEnd {
			ends[rec.End]++
		}
	}
	if queries != 1 {
		t.Errorf("the capture holds %d queries, want the one before --duration", queries)
	}
	if ends[capture.EndTerminate] != 1 || ends[capture.EndOpen] != 1 || len(ends) != 2 {
		t.Errorf("session ends %v: want the first terminated, the held one open", ends)
	}
}

// TestRunStopAtMaxSize: with StopAtLimit, reaching MaxSize finalizes the
// capture, marked incomplete for that reason, and ends the run.
func TestRunStopAtMaxSize(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	dir := filepath.Join(t.TempDir(), "cap")
	s := start(t, Config{Upstream: c.DSN("postgres"), Out: dir, MaxSize: 4 << 10, StopAtLimit: true})
	ctx := context.Background()
	conn := pgclustertest.PgConn(ctx, t, s.dsn())
	defer conn.Close(ctx)
	var r result
	// Each query is recorded until the files pass 4 kB; then the run
	// ends by itself, and the connection with it.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
loop:
	for i := 0; ; i++ {
		conn.Exec(ctx, "SELECT repeat('x', 1000) /* "+time.Now().String()+" */").ReadAll()
		select {
		case r = <-s.done:
			break loop
		case <-deadline:
			t.Fatal("the run did not stop at --max-size")
		case <-tick.C:
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.Stopped != StopMaxSize || r.sum.Manifest.Complete || r.sum.Manifest.Reason != capture.ReasonMaxSize {
		t.Errorf("stopped %q, manifest %+v: want an incomplete capture, stopped at its max size", r.sum.Stopped, r.sum.Manifest)
	}
}

// TestRunDropsCountedUntilStop: a capture that reached its maximum size
// (as one whose disk filled) is finalized at once, incomplete, and the
// proxy relays on; the records it makes after are lost to the capture,
// and the manifest counts them once the proxy stops.
func TestRunDropsCountedUntilStop(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	dir := filepath.Join(t.TempDir(), "cap")
	s := start(t, Config{Upstream: c.DSN("postgres"), Out: dir, MaxSize: 4 << 10})
	ctx := context.Background()
	conn := pgclustertest.PgConn(ctx, t, s.dsn())
	defer conn.Close(ctx)
	poll(t, "the capture reaches its maximum size", func() bool {
		conn.Exec(ctx, "SELECT repeat('x', 1000) /* "+time.Now().String()+" */").ReadAll()
		return len(s.stopped()) > 0
	})
	at, err := capture.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Relayed after the finalization: each a Query, a CommandComplete
	// and a ReadyForQuery at least.
	const after = 20
	for range after {
		if _, err := conn.Exec(ctx, "SELECT 1").ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	s.cancel()
	r := <-s.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	m, err := capture.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete || m.Reason != capture.ReasonMaxSize || m.Dropped < at.Dropped+3*after {
		t.Errorf("manifest at the stop %+v, at the finalization %+v: want %d records more dropped", m, at, 3*after)
	}
	if r.sum.Manifest.Dropped != m.Dropped {
		t.Errorf("summary says %d dropped, the manifest %d", r.sum.Manifest.Dropped, m.Dropped)
	}
}

// TestRunFallsBehind: a recorder whose queue cannot keep up drops
// records, and the application never notices: pgbench through the proxy
// completes every transaction, the capture is finalized as incomplete
// for that reason with its drops counted, and the operator is told once.
func TestRunFallsBehind(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "postgres"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var mu sync.Mutex
	var warns []string
	s := start(t, Config{Upstream: c.DSN("postgres"), Out: filepath.Join(t.TempDir(), "cap"), Queue: 1,
		Warn: func(w string) { mu.Lock(); warns = append(warns, w); mu.Unlock() }})
	host, port, _ := net.SplitHostPort(s.addr)
	out, err := c.Pgbench(ctx, "-h", host, "-p", port, "-c", "4", "-t", "200", "postgres")
	if err != nil {
		t.Fatalf("pgbench through a proxy that falls behind: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "number of failed transactions: 0") && !strings.Contains(string(out), "number of transactions actually processed: 800/800") {
		t.Errorf("pgbench lost transactions:\n%s", out)
	}
	poll(t, "the operator is told", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(warns) > 0
	})
	s.cancel()
	r := <-s.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	m := r.sum.Manifest
	if m.Complete || m.Reason != capture.ReasonFellBehind || m.Dropped == 0 {
		t.Errorf("manifest %+v: want incomplete, the recorder fell behind, with its drops", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warns) != 1 || !strings.Contains(warns[0], "fell behind") || !strings.Contains(warns[0], "goes on relaying") {
		t.Errorf("warnings %q: want one saying the recorder fell behind and the proxy relays on", warns)
	}
}

// functionalCase marks t as a functional case, which measures no time:
// it asserts counts, errors, messages, results or files, with generous
// time bounds or none. Go runs such tests in parallel (at most -parallel
// at once, GOMAXPROCS by default) and only after every sequential test
// of the package has finished: the tests that time real servers (pacing,
// lag, throughput, overhead, comparisons), left sequential, still run
// alone, undisturbed.
func functionalCase(t *testing.T) {
	t.Helper()
	t.Parallel()
}
