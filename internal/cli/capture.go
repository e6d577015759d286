package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	capfile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/capturerun"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/promsink"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

var exitDocCaptureIncomplete = exitDoc{ExitIncomplete, "incomplete capture: the recorder fell behind, the disk " +
	"filled or a write failed; the proxy kept relaying, and the capture is finalized and marked incomplete"}

// captureFlags are capture's flags.
type captureFlags struct {
	listen, upstream, out string
	monitorDSN            string
	tlsCert, tlsKey       string
	duration              time.Duration
	maxSize, fileSize     string
	countSize             string
	stopAtLimit           bool
	metrics               string
	queue                 int
	rowDigest             bool
	admin, adminTokenFile string
	drain                 time.Duration
	threads               int
}

func newCaptureCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f captureFlags
	cmd := &cobra.Command{
		Use:   "capture --listen ADDR --upstream DSN (--out DIR | --admin ADDR)",
		Short: "Record production traffic through a wire-protocol proxy, without logging every statement",
		Long:  captureLong + exitHelp(exitDocCaptureIncomplete),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCapture(ctx, stdio, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:6432", "address the proxy listens on (host:port); applications connect here")
	dsnVar(fl, &f.upstream, "upstream", "the server to relay to, as a connection string: its host, port and sslmode are used; each client logs in as itself")
	dsnVar(fl, &f.monitorDSN, "monitor-dsn", "record the starting point (WAL position, time, version, system identifier, rows and size per table) "+
		"of the capture, and of each recording started through --admin, through this connection to the upstream, as a role with pg_monitor; see docs/start-state.md")
	fl.StringVar(&f.countSize, "count-size", "1GiB", "with --monitor-dsn, count the rows (count(*)) at the start of each table up to this size (pg_relation_size), "+
		"and estimate the larger ones; 0 counts none. The role then needs SELECT on the tables (pg_read_all_data)")
	fl.StringVar(&f.out, "out", "", "capture directory to create (it must not hold a capture already); {start} in it is replaced by the UTC start time, 20261125T070000Z")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "certificate (PEM) shown to clients that ask for TLS; without it they are answered that the proxy has no TLS")
	fl.StringVar(&f.tlsKey, "tls-key", "", "private key (PEM) of --tls-cert")
	fl.DurationVar(&f.duration, "duration", 0, "finalize the capture after this long (0: when stopped)")
	fl.StringVar(&f.maxSize, "max-size", "", "finalize the capture when its files reach this size (e.g. 10GB; empty: unbounded)")
	fl.StringVar(&f.fileSize, "file-size", "", "start a new file of the capture at this size (default 64MiB)")
	fl.BoolVar(&f.stopAtLimit, "stop-at-limit", false, "stop relaying when --duration or --max-size is reached, instead of relaying on unrecorded")
	fl.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics on this address (\":9187\" is loopback only), /metrics")
	fl.IntVar(&f.queue, "queue", 0, "records that may wait for the disk before the recorder drops (0: 1048576, within 64 MiB of memory)")
	fl.BoolVar(&f.rowDigest, "row-digest", true, "keep a 64-bit digest of the rows each statement returned (never a row), so that a replay compares answers by value; false spares the proxy hashing each row relayed, and answers are compared by row count only")
	fl.StringVar(&f.admin, "admin", "", "serve the admin interface (start, stop and list recordings) on this address (\":6433\" is loopback only); without --out, nothing is recorded until a recording starts")
	fl.StringVar(&f.adminTokenFile, "admin-token-file", "", "file holding the bearer token the admin interface requires; needed when --admin is not a loopback address")
	fl.IntVar(&f.threads, "threads", 1, "threads that relay and record (0: the Go runtime's default, one per core or $GOMAXPROCS); one, as PgBouncer, spends the least CPU per message: raise it when the proxy's process keeps a core busy")
	fl.DurationVar(&f.drain, "drain", 30*time.Second, "once stopped, relay the open connections until they close or this long passes, accepting no new one (0: close them at once)")
	cmd.AddCommand(newCaptureStartCmd(ctx, stdio), newCaptureStopCmd(ctx, stdio), newCaptureStatusCmd(ctx, stdio))
	return cmd
}

// captureLong is capture --help's text before its exit codes.
const captureLong = `capture is a proxy between applications and PostgreSQL: point the applications at
--listen, and it relays every byte to --upstream unchanged while it records each
session (its startup parameters, every message it sent, and the server's answers in
summary: command tags with row counts, SQLSTATEs) into --out. Every command that
reads a log (analyze, events, replay, rehearse, findings, sweep) reads the capture
directory the same way, and a replay of it sends the same protocol form, parameter
types and formats and COPY data, and says where the target answered otherwise.

Authentication is relayed: each client logs in as itself, and no password or SASL
message is ever written. Forwarding never waits for the recorder: when it falls
behind or the disk fills, the proxy goes on relaying, stops recording and marks
the capture incomplete. Ctrl-C or SIGTERM finalizes the capture; sessions still
open are recorded as open. --duration and --max-size finalize it too, and the
proxy then goes on relaying, unrecorded, until stopped (--stop-at-limit: it stops).
Once stopped, the proxy accepts no connection and relays the open ones until they
close or --drain passes (a second Ctrl-C or SIGTERM closes them at once); standard
error says how many it waits for and until when, then how many it cut.

With --admin and without --out, the proxy relays and records nothing until a
recording is started through its admin interface ("pgrehearse capture start
--admin ADDR --out DIR", stop, status; docs/capture-admin.md): recordings start and
stop, one at a time, without touching a connection. The sessions open when a
recording starts are recorded from the middle, with their settings and prepared
statements: an idle one from the start's answer on, one inside a transaction or
with a request in flight from its next idle point; one whose state
the proxy could not keep is relayed, counted as not recorded, with why
(docs/capture-midsession.md).

Clients that ask for TLS see --tls-cert; --upstream's sslmode sets the leg to the
server. SCRAM channel binding passes through only when --tls-cert is the server's
own certificate. Otherwise, with TLS on both legs, a client that supports binding
(libpq's and pgjdbc's default) is refused, as the server would refuse it: relay in
plaintext from beside the server, or turn binding off in the client (libpq
channel_binding=disable, pgjdbc channelBinding=disable). See
docs/capture-production.md.

With --monitor-dsn (a role with pg_monitor), the capture, and each recording
started through --admin, records its starting point in its manifest, read as it
starts: the upstream's WAL position (the LSN to restore a copy to) and clock,
its version and system identifier, and per table the rows (counted up to
--count-size, which needs pg_read_all_data; estimated beyond) and size, in every
database that role can connect to. replay and rehearse check their
targets against it. See docs/start-state.md for making a copy at that point.

The capture holds parameter values, which are personal data: its files are
created readable by their owner only. See docs/capture-format.md.`

// runCapture relays and records as f says until ctx ends (or a limit
// --stop-at-limit stops at), then says what was recorded.
func runCapture(ctx context.Context, stdio IO, f *captureFlags) error {
	// ready says the proxy listens, for --metrics' readiness.
	var ready atomic.Bool
	if f.upstream == "" || f.out == "" && f.admin == "" {
		return usageError("capture needs --upstream, and --out or --admin")
	}
	if f.out == "" && (f.duration != 0 || f.maxSize != "" || f.stopAtLimit) {
		return usageError("--duration, --max-size and --stop-at-limit bound --out's capture; a recording started through --admin gives its own")
	}
	token, err := readAdminToken(f.adminTokenFile)
	if err != nil {
		return err
	}
	if f.threads < 0 {
		return usageError("--threads: %d is not a number of threads (0: one per core)", f.threads)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usageError("--tls-cert and --tls-key go together")
	}
	// A container restarted in the same pod names its new
	// capture apart from the one it left.
	f.out = strings.ReplaceAll(f.out, "{start}", time.Now().UTC().Format("20060102T150405Z"))
	maxBytes, err := capturerun.ParseSize(f.maxSize)
	if err != nil {
		return usageError("--max-size: %v", err)
	}
	fileBytes, err := capturerun.ParseSize(f.fileSize)
	if err != nil {
		return usageError("--file-size: %v", err)
	}
	cfg := capturerun.Config{
		Listen: f.listen, Upstream: f.upstream, Out: f.out,
		Duration: f.duration, MaxSize: maxBytes, FileSize: fileBytes, StopAtLimit: f.stopAtLimit, Queue: f.queue,
		NoRowDigest: !f.rowDigest,
		Admin:       f.admin, AdminToken: token, Drain: f.drain, Threads: f.threads,
		Warn: func(s string) { fmt.Fprintf(stdio.Stderr, "pgrehearse: capture: %s\n", s) },
	}
	cfg.MonitorDSN = f.monitorDSN
	countBytes, err := capturerun.ParseSize(f.countSize)
	if err != nil {
		return usageError("--count-size: %v", err)
	}
	if cfg.CountBelow = countBytes; countBytes == 0 {
		cfg.CountBelow = -1
	}
	endDrain, release := drainInterrupt(ctx)
	defer release()
	cfg.EndDrain = endDrain
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if f.metrics != "" {
		reg := prometheus.NewRegistry()
		// Ready from the moment the proxy listens until it
		// stops: relaying, recorded or not, is the service.
		addr, stop, err := promsink.ServeRegistry(f.metrics, reg, ready.Load)
		if err != nil {
			return fmt.Errorf("--metrics: %w", err)
		}
		defer stop()
		cfg.Metrics = reg
		fmt.Fprintf(stdio.Stderr, "pgrehearse: capture: metrics on http://%s/metrics\n", addr)
	}
	captureNotices(ctx, stdio, f, &cfg, &ready)
	sum, err := capturerun.Run(ctx, cfg)
	return captureOutcome(stdio, f.out, sum, err)
}

// captureNotices sets cfg's callbacks that tell, on standard error, where
// the proxy listens and each recording finalized; ready is set while the
// proxy listens.
func captureNotices(ctx context.Context, stdio IO, f *captureFlags, cfg *capturerun.Config, ready *atomic.Bool) {
	where := upstreamAddr(f.upstream)
	cfg.Listening = func(addr, adminAddr string) {
		ready.Store(true)
		context.AfterFunc(ctx, func() { ready.Store(false) })
		report.WriteCaptureListening(stdio.Stderr, addr, where, f.out, adminAddr)
	}
	cfg.RecordingFinalized = func(st capturerun.Status) {
		if st.ID != capturerun.FirstID || f.out == "" {
			fmt.Fprintf(stdio.Stderr, "pgrehearse: capture: recording %s into %s finalized (%s)\n", st.ID, st.Out, st.StopReason)
		}
	}
	drainNotices(stdio, f.drain, cfg)
	cfg.Finalized = func(why capturerun.StopReason, m capfile.Manifest) {
		// A write failure was told as it happened.
		if (why == capturerun.StopDuration || why == capturerun.StopMaxSize) && !f.stopAtLimit {
			fmt.Fprintf(stdio.Stderr, "pgrehearse: capture: %s: the capture is finalized; still relaying, unrecorded, until stopped\n", why)
		}
	}
}

// drainNotices sets cfg's callbacks that tell, on standard error, that
// the proxy drains (how many connections, until when) and how the drain
// ended: waiting silently for --drain looked like a hang.
func drainNotices(stdio IO, drain time.Duration, cfg *capturerun.Config) {
	cfg.Draining = func(d capturerun.DrainStart) { report.WriteCaptureDraining(stdio.Stderr, d, drain) }
	cfg.Drained = func(d capturerun.DrainEnd) { report.WriteCaptureDrained(stdio.Stderr, d) }
}

// captureOutcome prints what the capture recorded (out, and the
// recordings started through --admin) and is its error: ExitIncomplete
// when a recording is incomplete, with err.
func captureOutcome(stdio IO, out string, sum capturerun.Summary, err error) error {
	if sum.Addr == "" && err != nil {
		return err
	}
	var incomplete []error
	if out != "" {
		report.WriteCaptureSummary(stdio.Stdout, sum)
		if !sum.Manifest.Complete {
			incomplete = append(incomplete, fmt.Errorf("the capture %s is incomplete: %s", out, sum.Manifest.Reason))
		}
	}
	for _, st := range sum.Recordings {
		if out != "" && st.ID == capturerun.FirstID {
			continue
		}
		report.WriteRecording(stdio.Stdout, st)
		if !st.Complete {
			incomplete = append(incomplete, fmt.Errorf("the capture %s is incomplete: %s", st.Out, st.Reason))
		}
	}
	if out == "" && len(sum.Recordings) == 0 {
		fmt.Fprintf(stdio.Stdout, "no recording: %d sessions relayed, unrecorded\n", sum.Proxy.SessionsTotal)
	}
	if len(incomplete) > 0 {
		// What was recorded is readable; the exit says it is
		// not all.
		return &exitError{code: ExitIncomplete, err: errors.Join(append(incomplete, err)...)}
	}
	return err
}

// upstreamAddr names the server a connection string reaches, without its
// user or password.
func upstreamAddr(dsn string) string {
	cfg, err := connstr.Parse(dsn)
	if err != nil || cfg.Host == "" {
		return "the upstream"
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}
