// Package capturerun runs a capture: the proxy (package proxy) in front of
// a server, recording through a Recorder into a capture directory
// (package capture), until it is stopped or reaches its limits, and
// finalizes the capture whatever stopped it. A proxy that stays in the
// path records on demand: Recordings starts and stops recordings, one at
// a time, without touching a connection, and its admin interface
// (Handler, Client) lets an operator do so over HTTP. It is what the
// capture command calls; it knows no flags and prints nothing.
package capturerun

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/proxy"
)

// DrainStart and DrainEnd are the proxy's drain, begun and ended (see
// Config.Draining).
type (
	DrainStart = proxy.DrainStart
	DrainEnd   = proxy.DrainEnd
)

// Why a drain ended (DrainEnd.Ended).
const (
	DrainAllClosed = proxy.DrainAllClosed
	DrainTimedOut  = proxy.DrainTimedOut
	DrainCutShort  = proxy.DrainCutShort
)

// Config is one capture proxy and its recordings.
type Config struct {
	// Listen is the address the proxy listens on (host:port).
	Listen string
	// Upstream is the server's connection string: where and how (TLS)
	// to connect; each client authenticates as itself.
	Upstream string
	// Out is the capture directory recorded into from the start,
	// created; it must not hold a capture already. Empty records
	// nothing until a recording is started through the admin interface.
	Out string
	// TLS is the certificate shown to clients that ask for TLS; nil
	// refuses TLS to clients.
	TLS *tls.Config
	// Duration and MaxSize bound the recording into Out (0: unbounded).
	// When one is reached the capture is finalized; the proxy goes on
	// relaying, unrecorded, until ctx is done, unless StopAtLimit.
	// FileSize starts a new file of a capture at this size.
	Duration    time.Duration
	MaxSize     int64
	FileSize    int64
	StopAtLimit bool
	// Queue is each recorder's queue in records (0: its default).
	Queue int
	// NoRowDigest spares the proxy the rows' digest (proxy.Config).
	NoRowDigest bool
	// MonitorDSN, when set, is a connection to the upstream as a role
	// with pg_monitor, through which the capture records its starting
	// point in its manifest (see StartState).
	MonitorDSN string
	// CountBelow is the size (pg_relation_size) up to which the start
	// state counts a table's rows rather than estimating them
	// (catalog.DefaultCountBelow when 0; negative counts none).
	CountBelow int64
	// Admin is the address of the admin interface (see Handler); empty
	// serves none. A bare ":port" listens on loopback only.
	Admin string
	// AdminToken is the bearer token the admin interface requires; it
	// must be set when Admin is not a loopback address, since whoever
	// reaches the interface chooses where the proxy writes.
	AdminToken string
	// Drain is how long the proxy relays the open connections once ctx
	// is done, having finalized the recording under way and stopped
	// accepting; 0 closes them at once. EndDrain, when closed, cuts it
	// short.
	Drain    time.Duration
	EndDrain <-chan struct{}
	// Draining and Drained are told as the drain begins and ends, when
	// connections were open (proxy.Config's): a drain that waits says
	// so, rather than look like a hang.
	Draining func(DrainStart)
	Drained  func(DrainEnd)
	// Warn is told of each problem, one sentence, never a password or
	// a parameter value.
	Warn func(string)
	// Listening is called once the proxy listens, with its address and
	// the admin interface's ("" without one).
	Listening func(addr, admin string)
	// Finalized is called once the capture into Out is finalized, with
	// why recording stopped (StopReason) and the capture's manifest.
	Finalized func(StopReason, capture.Manifest)
	// RecordingFinalized is called once each recording is finalized,
	// the one into Out included.
	RecordingFinalized func(Status)
	// Metrics, when not nil, receives the capture's metrics.
	Metrics prometheus.Registerer
	// Threads, when above 0, is how many threads run the process's Go
	// code (GOMAXPROCS) while Run runs; 0 leaves the runtime's choice.
	// One thread, PgBouncer's model, relays a message for the least
	// CPU: the threads of a process serving many sockets wake each
	// other through futexes, and steal work from each other, for each
	// burst of traffic (docs/capture-performance.md). More relay more at once,
	// once one thread is busy all the time.
	Threads int
}

// threads is the process's GOMAXPROCS as the captures running in it
// left it (setThreads): the value before the first, put back when the
// last ends, so that two captures ending in any order never leave the
// process on the first one's setting.
var threads struct {
	sync.Mutex
	running, was int
}

// setThreads sets GOMAXPROCS to n when n > 0 (Config.Threads) and
// returns what puts it back once no capture of the process runs.
func setThreads(n int) func() {
	if n <= 0 {
		return func() {}
	}
	threads.Lock()
	defer threads.Unlock()
	if threads.running == 0 {
		threads.was = runtime.GOMAXPROCS(n)
	} else {
		runtime.GOMAXPROCS(n)
	}
	threads.running++
	return func() {
		threads.Lock()
		defer threads.Unlock()
		if threads.running--; threads.running == 0 {
			runtime.GOMAXPROCS(threads.was)
		}
	}
}

// StopReason says why recording stopped.
type StopReason string

const (
	StopInterrupted StopReason = "interrupted"
	StopDuration    StopReason = "duration reached"
	StopMaxSize     StopReason = "max size reached"
	StopWriteFailed StopReason = "the capture could not be written"
	// StopRequested: stopped through the admin interface.
	StopRequested StopReason = "stopped on request"
)

// Summary is what a capture did.
type Summary struct {
	// Dir, Stopped, Manifest, Recorder and OpenAtEnd are the capture
	// into Config.Out's; empty without one.
	Dir      string
	Addr     string
	Stopped  StopReason
	Manifest capture.Manifest
	Proxy    proxy.Stats
	Recorder capture.RecorderStats
	// OpenAtEnd counts the sessions recorded as open: relayed when the
	// capture was finalized.
	OpenAtEnd int64
	// Recordings are every recording the proxy made, oldest first, the
	// one into Config.Out included.
	Recordings []Status
}

// Run relays until ctx is done (and, with StopAtLimit, until the
// capture into Out reaches a limit), recording into Out from the start
// and into what the admin interface asks. The outputs are created and
// the addresses bound before any traffic is relayed, so that a wrong
// path or a busy port fails at once. When ctx is done, the recording
// under way is finalized, the proxy stops accepting and relays the open
// connections for Config.Drain at most.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	sum := Summary{Dir: cfg.Out}
	defer setThreads(cfg.Threads)()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return sum, fmt.Errorf("capture: listen on %s: %w", cfg.Listen, err)
	}
	start, err := StartState(ctx, cfg.MonitorDSN, cfg.CountBelow)
	if err != nil {
		ln.Close()
		return sum, err
	}
	p, err := newProxy(cfg)
	if err != nil {
		ln.Close()
		return sum, err
	}
	atLimit := make(chan struct{})
	var finalizeErr error
	recs := newRecordings(p, cfg, func(r *recording) {
		if cfg.RecordingFinalized != nil {
			cfg.RecordingFinalized(r.status)
		}
		// The capture into Out is the first recording.
		if cfg.Out == "" || r.id != FirstID {
			return
		}
		sum.Stopped, sum.Manifest, sum.Recorder, sum.OpenAtEnd = r.status.StopReason, r.manifest, r.recStats, r.status.OpenAtEnd
		if r.manifest.Reason == capture.ReasonNotFinalized {
			finalizeErr = errors.New(r.manifest.Error)
		}
		if cfg.Finalized != nil {
			cfg.Finalized(r.status.StopReason, r.manifest)
		}
		if cfg.StopAtLimit && (r.status.StopReason == StopDuration || r.status.StopReason == StopMaxSize) {
			close(atLimit)
		}
	})
	if cfg.Out != "" {
		if _, err := recs.Start(ctx, StartOptions{Out: cfg.Out, Duration: cfg.Duration, MaxSize: cfg.MaxSize, FileSize: cfg.FileSize, StartState: start}); err != nil {
			ln.Close()
			return sum, err
		}
	}
	var adminAddr string
	if cfg.Admin != "" {
		addr, stop, err := serveAdmin(cfg.Admin, cfg.AdminToken, recs, cfg.FileSize)
		if err != nil {
			ln.Close()
			recs.shutdown(StopInterrupted)
			return sum, err
		}
		defer stop()
		adminAddr = addr
	}
	sum.Addr = ln.Addr().String()
	if cfg.Metrics != nil {
		if err := register(cfg.Metrics, p, recs); err != nil {
			ln.Close()
			recs.shutdown(StopInterrupted)
			return sum, err
		}
	}

	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServe()
	served := make(chan error, 1)
	serveDone := make(chan struct{})
	go func() {
		defer close(serveDone)
		served <- p.Serve(serveCtx, ln)
	}()
	if cfg.EndDrain != nil {
		go func() {
			select {
			case <-cfg.EndDrain:
				p.EndDrain()
			case <-serveDone:
			}
		}()
	}
	if cfg.Listening != nil {
		cfg.Listening(sum.Addr, adminAddr)
	}

	var serveErr error
	stopped := false
	select {
	case <-ctx.Done():
	case <-atLimit:
	case serveErr = <-served:
		stopped = true
	}
	// The recording under way is finalized first, its open sessions
	// recorded as open; then the proxy stops accepting and drains.
	recs.shutdown(StopInterrupted)
	stopServe()
	if !stopped {
		serveErr = <-served
	}
	sum.Proxy = p.Stats()
	// What the proxy relayed, unrecorded, after a recording stopped at
	// its size limit or on its writer's failure, until it stopped.
	if err := recs.settleLost(); err != nil {
		finalizeErr = errors.Join(finalizeErr, err)
	}
	if cfg.Out != "" {
		if r := recs.byID(FirstID); r != nil {
			recs.mu.Lock()
			sum.Manifest, sum.Recorder = r.manifest, r.recStats
			recs.mu.Unlock()
		}
	}
	sum.Recordings = recs.List()
	return sum, errors.Join(serveErr, finalizeErr)
}

// newProxy is the proxy cfg describes. With an admin interface,
// recordings start while sessions are open: the proxy keeps what it
// needs to take them up from the middle.
func newProxy(cfg Config) (*proxy.Proxy, error) {
	return proxy.New(proxy.Config{Upstream: cfg.Upstream, TLS: cfg.TLS, Warn: cfg.Warn, NoRowDigest: cfg.NoRowDigest,
		Drain: cfg.Drain, Draining: cfg.Draining, Drained: cfg.Drained, ResumeSessions: cfg.Admin != ""})
}

// register adds the capture's metrics to reg: the proxy's sessions,
// messages, bytes and the time it adds, and the recorder's records,
// bytes, lag and drops.
func register(reg prometheus.Registerer, p *proxy.Proxy, recs *Recordings) error {
	recStats := recs.totals
	recording := func() float64 {
		if recs.Current() != "" {
			return 1
		}
		return 0
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pgrehearse_capture_sessions_open", Help: "Sessions open through the proxy."},
			func() float64 { return float64(p.Stats().SessionsOpen) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pgrehearse_capture_sessions_total", Help: "Sessions relayed since the start."},
			func() float64 { return float64(p.Stats().SessionsTotal) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pgrehearse_capture_messages_total", Help: "Messages relayed.", ConstLabels: prometheus.Labels{"from": "client"}},
			func() float64 { return float64(p.Stats().FrontendMessages) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pgrehearse_capture_messages_total", Help: "Messages relayed.", ConstLabels: prometheus.Labels{"from": "server"}},
			func() float64 { return float64(p.Stats().BackendMessages) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pgrehearse_capture_bytes_total", Help: "Bytes relayed.", ConstLabels: prometheus.Labels{"from": "client"}},
			func() float64 { return float64(p.Stats().FrontendBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pgrehearse_capture_bytes_total", Help: "Bytes relayed.", ConstLabels: prometheus.Labels{"from": "server"}},
			func() float64 { return float64(p.Stats().BackendBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pgrehearse_capture_records_total", Help: "Records written to the capture."},
			func() float64 { return float64(recStats().Records) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pgrehearse_capture_file_bytes", Help: "Size of the capture's files."},
			func() float64 { return float64(recStats().Bytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pgrehearse_capture_dropped_total", Help: "Records the recorder dropped: the capture is incomplete when this is not 0."},
			func() float64 { return float64(recStats().Dropped) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pgrehearse_capture_recorder_lag_seconds", Help: "Age of the oldest record waiting to be written."},
			func() float64 { return recStats().Lag.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pgrehearse_capture_recording", Help: "1 while the proxy records, 0 once the capture is finalized (it may go on relaying)."},
			recording),
		relayCollector{p: p, desc: prometheus.NewDesc("pgrehearse_capture_relay_seconds",
			"Time the proxy added to each chunk it relayed, from its read to the end of the write forwarding it, recording included.",
			[]string{"from"}, nil)},
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// relayCollector serves the proxy's RelayTimes as a histogram by the
// direction relayed: the proxy counts them in its own fixed buckets,
// without Prometheus on its hot path, and they are read at each scrape.
type relayCollector struct {
	p    *proxy.Proxy
	desc *prometheus.Desc
}

func (c relayCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c relayCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	for _, d := range []struct {
		from string
		t    proxy.RelayTimes
	}{{"client", s.FrontendRelay}, {"server", s.BackendRelay}} {
		buckets := make(map[float64]uint64, len(proxy.RelayBuckets))
		n := uint64(0)
		for i, b := range d.t.Buckets {
			n += uint64(b)
			buckets[proxy.RelayBuckets[i].Seconds()] = n
		}
		ch <- prometheus.MustNewConstHistogram(c.desc, uint64(d.t.Count()), d.t.Sum.Seconds(), buckets, d.from)
	}
}
