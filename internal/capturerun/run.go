// Package capturerun runs a capture: the proxy (package proxy) in front of
// a server, recording through a Recorder into a capture directory
// (package capture), until it is stopped or reaches its limits, and
// finalizes the capture whatever stopped it. It is what the capture
// command calls; it knows no flags and prints nothing.
package capturerun

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/proxy"
)

// Config is one capture.
type Config struct {
	// Listen is the address the proxy listens on (host:port).
	Listen string
	// Upstream is the server's connection string: where and how (TLS)
	// to connect; each client authenticates as itself.
	Upstream string
	// Out is the capture directory, created; it must not hold a
	// capture already.
	Out string
	// TLS is the certificate shown to clients that ask for TLS; nil
	// refuses TLS to clients.
	TLS *tls.Config
	// Duration and MaxSize bound the recording (0: unbounded). When one
	// is reached the capture is finalized; the proxy goes on relaying,
	// unrecorded, until ctx is done, unless StopAtLimit.
	Duration    time.Duration
	MaxSize     int64
	FileSize    int64
	StopAtLimit bool
	// Queue is the recorder's queue in records (0: its default).
	Queue int
	// NoRowDigest spares the proxy the rows' digest (proxy.Config).
	NoRowDigest bool
	// MonitorDSN, when set, is a connection to the upstream as a role
	// with pg_monitor, through which the capture records its starting
	// point in its manifest (see StartState).
	MonitorDSN string
	// Warn is told of each problem, one sentence, never a password or
	// a parameter value.
	Warn func(string)
	// Listening is called once the proxy listens, with its address.
	Listening func(addr string)
	// Finalized is called once the capture is finalized, with why
	// recording stopped (StopReason) and the capture's manifest.
	Finalized func(StopReason, capture.Manifest)
	// Metrics, when not nil, receives the capture's metrics.
	Metrics prometheus.Registerer
}

// StopReason says why recording stopped.
type StopReason string

const (
	StopInterrupted StopReason = "interrupted"
	StopDuration    StopReason = "duration reached"
	StopMaxSize     StopReason = "max size reached"
	StopWriteFailed StopReason = "the capture could not be written"
)

// Summary is what a capture did.
type Summary struct {
	Dir      string
	Addr     string
	Stopped  StopReason
	Manifest capture.Manifest
	Proxy    proxy.Stats
	Recorder capture.RecorderStats
	// OpenAtEnd counts the sessions recorded as open: relayed when the
	// capture was finalized.
	OpenAtEnd int64
}

// switchSink is the proxy's Sink: the recorder until the capture is
// finalized, nothing after (the proxy goes on relaying).
// It keeps which sessions are open, so that a capture finalized while
// the proxy relays on (--duration, --max-size) records them as open, as
// Serve does when it stops.
type switchSink struct {
	// mu is held shared by Add, exclusively by stop: no record reaches
	// the recorder after stop.
	mu    sync.RWMutex
	rec   atomic.Pointer[capture.Recorder]
	after atomic.Int64

	openMu sync.Mutex
	open   map[uint64]struct{}
	// openAtEnd counts the sessions recorded as open at the end.
	openAtEnd int64
}

func (s *switchSink) Add(r capture.Record) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec := s.rec.Load()
	if rec == nil {
		s.after.Add(1)
		return false
	}
	switch r.Kind {
	case capture.KindStartup:
		s.openMu.Lock()
		s.open[r.Session] = struct{}{}
		s.openMu.Unlock()
	case capture.KindEnd:
		s.openMu.Lock()
		delete(s.open, r.Session)
		if r.End == capture.EndOpen {
			s.openAtEnd++
		}
		s.openMu.Unlock()
	}
	return rec.Add(r)
}

// stop takes the recorder out of the proxy's path and records the
// sessions still open as ended open, then returns the recorder to close.
func (s *switchSink) stop() *capture.Recorder {
	s.mu.Lock()
	rec := s.rec.Swap(nil)
	s.mu.Unlock()
	if rec == nil {
		return nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	now := time.Now().UnixMicro()
	for _, id := range slices.Sorted(maps.Keys(s.open)) {
		rec.Add(capture.Record{Kind: capture.KindEnd, Session: id, Time: now, End: capture.EndOpen})
		s.openAtEnd++
	}
	clear(s.open)
	return rec
}

// Run captures until ctx is done (and, with StopAtLimit, until a limit
// is reached). The output is created and the address bound before any
// traffic is relayed, so that a wrong path or a busy port fails at once.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	sum := Summary{Dir: cfg.Out}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return sum, fmt.Errorf("capture: listen on %s: %w", cfg.Listen, err)
	}
	start, err := StartState(ctx, cfg.MonitorDSN)
	if err != nil {
		ln.Close()
		return sum, err
	}
	w, err := capture.Create(cfg.Out, capture.WriterOptions{MaxSize: cfg.MaxSize, FileSize: cfg.FileSize, StartState: start})
	if err != nil {
		ln.Close()
		return sum, err
	}
	rec := capture.NewRecorder(w, capture.RecorderOptions{Queue: cfg.Queue})
	sink := &switchSink{open: map[uint64]struct{}{}}
	sink.rec.Store(rec)
	p, err := proxy.New(proxy.Config{Upstream: cfg.Upstream, TLS: cfg.TLS, Sink: sink, Warn: cfg.Warn, NoRowDigest: cfg.NoRowDigest})
	if err != nil {
		ln.Close()
		rec.Close()
		return sum, err
	}
	sum.Addr = ln.Addr().String()
	if cfg.Metrics != nil {
		if err := register(cfg.Metrics, p, sink, rec); err != nil {
			ln.Close()
			rec.Close()
			return sum, err
		}
	}

	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServe()
	served := make(chan error, 1)
	go func() { served <- p.Serve(serveCtx, ln) }()
	if cfg.Listening != nil {
		cfg.Listening(sum.Addr)
	}

	var once sync.Once
	var finalizeErr error
	// lostAfter: recording stopped on the writer's failure or at
	// MaxSize, so what the proxy relays after the capture is finalized
	// is lost to it, and counted in the manifest once the proxy stops.
	lostAfter := false
	finalize := func(why StopReason) {
		once.Do(func() {
			lostAfter = why == StopWriteFailed || why == StopMaxSize
			sink.stop()
			finalizeErr = rec.Close()
			sink.openMu.Lock()
			sum.OpenAtEnd = sink.openAtEnd
			sink.openMu.Unlock()
			sum.Stopped = why
			sum.Recorder = rec.Stats()
			if m, err := capture.ReadManifest(cfg.Out); err == nil {
				sum.Manifest = *m
			} else {
				// Not finalized: what the files hold, as a reader of
				// an unfinalized capture will find it.
				st := sum.Recorder
				sum.Manifest = capture.Manifest{Records: st.Records, Bytes: st.Bytes, Dropped: st.Dropped,
					Reason: capture.ReasonNotFinalized, Error: errors.Join(finalizeErr, err).Error()}
			}
			if cfg.Finalized != nil {
				cfg.Finalized(why, sum.Manifest)
			}
		})
	}

	var limit <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		limit = t.C
	}
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	var serveErr error
	stopped := false
	var warnedDropped int64
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err := <-served:
			serveErr, stopped = err, true
			break wait
		case <-limit:
			limit = nil
			finalize(StopDuration)
			if cfg.StopAtLimit {
				break wait
			}
		case <-poll.C:
			if sink.rec.Load() == nil {
				continue
			}
			st := rec.Stats()
			// Records dropped because recording stopped are told with
			// the stop, not as a recorder that fell behind.
			if st.Dropped > 0 && warnedDropped == 0 && st.Stopped == "" && cfg.Warn != nil {
				cfg.Warn(fmt.Sprintf("the recorder fell behind the traffic and dropped %d records: the capture will be marked incomplete; "+
					"the proxy goes on relaying every message unchanged (a larger --queue or a faster disk keeps up)", st.Dropped))
			}
			warnedDropped = st.Dropped
			if st.Stopped != "" && st.Stopped != capture.ReasonMaxSize && cfg.Warn != nil {
				cfg.Warn(fmt.Sprintf("recording stopped: %s; the capture is finalized as incomplete, and the proxy goes on relaying, unrecorded", st.Stopped))
			}
			switch st.Stopped {
			case "":
			case capture.ReasonMaxSize:
				finalize(StopMaxSize)
				if cfg.StopAtLimit {
					break wait
				}
			default:
				finalize(StopWriteFailed)
			}
		}
	}
	// Serve records the sessions still open as open, then returns:
	// the capture is finalized after it, so that they are in it.
	stopServe()
	if !stopped {
		serveErr = <-served
	}
	finalize(StopInterrupted)
	sum.Proxy = p.Stats()
	if n := sink.after.Load(); lostAfter && n > 0 && sum.Manifest.Reason != capture.ReasonNotFinalized {
		m, err := capture.AddDropped(cfg.Out, n)
		if err != nil {
			// The manifest keeps the count of its finalization.
			finalizeErr = errors.Join(finalizeErr, err)
		} else {
			sum.Manifest = *m
			sum.Recorder.Dropped += n
		}
	}
	return sum, errors.Join(serveErr, finalizeErr)
}

// register adds the capture's metrics to reg: the proxy's sessions,
// messages and bytes, and the recorder's records, bytes, lag and drops.
func register(reg prometheus.Registerer, p *proxy.Proxy, sink *switchSink, rec *capture.Recorder) error {
	// The recorder's figures stay what they were once it is closed.
	recStats := rec.Stats
	recording := func() float64 {
		if sink.rec.Load() != nil {
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
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
