package promsink

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgrehearse/pgrehearse/internal/replay"
)

// Sink is a replay.SampleSink that keeps Prometheus metrics of a replay:
// statements by outcome, errors by SQLSTATE, latency and schedule lag
// histograms, sync waits and their give-ups, open sessions and the
// reader's position in log time.
type Sink struct {
	statements *prometheus.CounterVec
	errors     *prometheus.CounterVec
	latency    prometheus.Histogram
	lag        prometheus.Histogram
	syncWait   prometheus.Histogram
	syncGiveUp *prometheus.CounterVec
	open       prometheus.Gauge
	reader     prometheus.Gauge
}

var _ replay.SampleSink = (*Sink)(nil)

// New registers the replay's metrics with reg.
func New(reg prometheus.Registerer) *Sink {
	buckets := prometheus.ExponentialBuckets(0.0001, 2, 22) // 100 µs .. ~3.5 min
	m := &Sink{
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgrehearse_replay_statements_total",
			Help: "Execution events replayed, by outcome (executed, failed, skipped).",
		}, []string{"outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgrehearse_replay_errors_total",
			Help: "Errors of the target, by SQLSTATE.",
		}, []string{"sqlstate"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pgrehearse_replay_latency_seconds", Help: "Time the target took per execution.", Buckets: buckets,
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pgrehearse_replay_schedule_lag_seconds", Help: "How late executions were issued against their schedule.", Buckets: buckets,
		}),
		syncWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pgrehearse_replay_sync_wait_seconds", Help: "How long executions that waited for other sessions' commits waited.", Buckets: buckets,
		}),
		syncGiveUp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgrehearse_replay_sync_giveups_total",
			Help: "Sync waits given up, by reason (timeout, deadlock); the execution ran anyway.",
		}, []string{"reason"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pgrehearse_replay_sessions_open", Help: "Connections open to the target.",
		}),
		reader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pgrehearse_replay_reader_log_time_seconds", Help: "Log time of the last event read, in seconds since the epoch.",
		}),
	}
	reg.MustRegister(m.statements, m.errors, m.latency, m.lag, m.syncWait, m.syncGiveUp, m.open, m.reader)
	return m
}

func (m *Sink) SessionOpened() { m.open.Inc() }
func (m *Sink) SessionClosed() { m.open.Dec() }

func (m *Sink) Statement(s replay.Sample) {
	switch {
	case s.Skipped != "":
		m.statements.WithLabelValues("skipped").Inc()
		return
	case s.SQLState != "":
		m.statements.WithLabelValues("failed").Inc()
		m.errors.WithLabelValues(s.SQLState).Inc()
	default:
		m.statements.WithLabelValues("executed").Inc()
	}
	m.latency.Observe(s.Latency.Seconds())
	m.lag.Observe(s.Lag.Seconds())
	if s.SyncWait > 0 {
		m.syncWait.Observe(s.SyncWait.Seconds())
	}
	if s.SyncGiveUp != "" {
		m.syncGiveUp.WithLabelValues(s.SyncGiveUp).Inc()
	}
}

func (m *Sink) ReaderPosition(us int64) { m.reader.Set(float64(us) / 1e6) }

// ListenAddr makes a listen address concrete: a bare ":port" listens on
// loopback only, since metrics describe a production workload; a host
// says otherwise.
func ListenAddr(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// Serve serves a new registry's metrics on addr (see ListenAddr) at
// /metrics and returns the Sink that feeds them, the address it listens
// on and a function that stops the server.
func Serve(addr string) (*Sink, string, func(), error) { return ServeLabeled(addr, nil) }

// ServeLabeled is Serve with labels on every metric: a shard of a replay
// split over several processes serves its metrics with {shard="K"}, so
// that one dashboard tells the shards apart and sums them. The process's
// own CPU and memory (process_*) are served too: a shard whose CPU is
// saturated while it falls behind is the bottleneck, not the target.
func ServeLabeled(addr string, labels prometheus.Labels) (*Sink, string, func(), error) {
	reg := prometheus.NewRegistry()
	wrapped := prometheus.WrapRegistererWith(labels, reg)
	m := New(wrapped)
	wrapped.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", ListenAddr(addr))
	if err != nil {
		return nil, "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the replay goes on without metrics
		}
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
	return m, ln.Addr().String(), stop, nil
}

// ServeRegistry serves reg's metrics on addr (see ListenAddr) at /metrics,
// with the process's own CPU and memory, and /ready, a Kubernetes
// readiness probe, which answers 200 while ready says so and 503 before
// and after. It returns the address it listens on and a function that
// stops the server.
func ServeRegistry(addr string, reg *prometheus.Registry, ready func() bool) (string, func(), error) {
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", ListenAddr(addr))
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if ready() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the capture goes on without metrics
		}
	}()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}
