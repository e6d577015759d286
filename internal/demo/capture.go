package demo

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrehearse/pgrehearse/internal/capturerun"
	"github.com/pgrehearse/pgrehearse/internal/numfmt"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// Capture is how the demo takes production's traffic.
type Capture string

// The ways to take it: every statement logged, or through a capture
// proxy (pgrehearse capture), production logging nothing.
const (
	CaptureLog   Capture = "log"
	CaptureProxy Capture = "proxy"
)

// IncompleteCaptureError is Set's error when a recording of production's
// traffic is incomplete.
type IncompleteCaptureError struct{ Out, ID, Reason string }

func (e *IncompleteCaptureError) Error() string {
	return fmt.Sprintf("demo: the capture %s (recording %s) is incomplete: %s", e.Out, e.ID, e.Reason)
}

// sessionsTotal is the capture proxy's metric of the sessions it
// relayed since its start: unchanged across the switch between the two
// recordings when no connection was dropped or reopened.
const sessionsTotal = "pgrehearse_capture_sessions_total"

// captureShop runs the shop's traffic on prod through one capture proxy,
// with prod logging no statement, as a team that cannot log every
// statement would take it, and takes two recordings from that proxy
// while the traffic runs, as an operator would through its admin
// interface: the first over the first half of the run into firstDir,
// the second over the rest into dir, without a reconnect, so that the
// sessions open at the switch are recorded from the middle. It returns
// the second's directory, the one the rehearsal replays: o.CaptureDir,
// the first's being o.CaptureFirst.
func captureShop(ctx context.Context, o Options, prod *pgcluster.Cluster) (string, error) {
	say, firstDir, dir := o.Say, o.CaptureFirst, o.CaptureDir
	// A recording refuses a directory that holds a capture: an earlier
	// demo's.
	for _, d := range []string{firstDir, dir} {
		if err := os.RemoveAll(d); err != nil {
			return "", err
		}
	}
	type addrs struct{ proxy, admin string }
	listening := make(chan addrs, 1)
	reg := prometheus.NewRegistry()
	capCtx, stop := context.WithCancel(ctx)
	defer stop()
	type outcome struct {
		sum capturerun.Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		// No Out: the proxy records nothing until a recording starts.
		sum, err := capturerun.Run(capCtx, capturerun.Config{
			Listen: "127.0.0.1:0", Upstream: prod.DSN(workload.ShopDatabase), Admin: "127.0.0.1:0", Metrics: reg,
			Warn:      func(s string) { say("capture: %s", s) },
			Listening: func(addr, admin string) { listening <- addrs{addr, admin} },
		})
		done <- outcome{sum, err}
	}()
	var a addrs
	select {
	case a = <-listening:
	case out := <-done:
		return "", fmt.Errorf("demo: capture: %w", out.err)
	}
	host, port, err := net.SplitHostPort(a.proxy)
	if err != nil {
		return "", err
	}
	admin := &capturerun.Client{Addr: a.admin}
	first, err := admin.Start(ctx, capturerun.StartRequest{Out: firstDir})
	if err != nil {
		return "", fmt.Errorf("demo: capture: start the first recording: %w", err)
	}
	half := o.Duration / 2
	say("production traffic through pgrehearse capture on %s, admin interface on %s (production logs no statement): pgbench -M prepared, %d transactions/s for %v",
		a.proxy, a.admin, o.Rate, o.Duration)
	say("recording %s into %s over the first %v; the second from then on, from the same proxy", first.ID, firstDir, half)

	// At the half, the first recording stops and the second starts,
	// the traffic going on through the same connections.
	type switched struct {
		first, second   capturerun.Status
		open, totalThen int64
		err             error
	}
	sw := make(chan switched, 1)
	swCtx, cancelSwitch := context.WithCancel(ctx)
	defer cancelSwitch()
	go func() {
		var s switched
		defer func() { sw <- s }()
		select {
		case <-time.After(half):
		case <-swCtx.Done():
			s.err = context.Cause(swCtx)
			return
		}
		if s.first, s.err = admin.Stop(ctx, first.ID); s.err != nil {
			return
		}
		if s.second, s.err = admin.Start(ctx, capturerun.StartRequest{Out: dir}); s.err != nil {
			return
		}
		l, err := admin.List(ctx)
		s.open, s.err = l.SessionsOpen, err
		if s.err == nil {
			s.totalThen, s.err = gatheredCounter(reg, sessionsTotal)
		}
	}()
	run, runErr := workload.RunShopThrough(ctx, prod, host, port, o.Duration, o.Rate)
	if runErr != nil {
		// No switch once the traffic failed.
		cancelSwitch()
	}
	s := <-sw
	var second capturerun.Status
	if s.err == nil {
		second, s.err = admin.Stop(ctx, s.second.ID)
	}
	stop()
	out := <-done
	if runErr != nil {
		return "", runErr
	}
	if s.err != nil {
		return "", fmt.Errorf("demo: capture: %w", s.err)
	}
	if out.err != nil {
		return "", fmt.Errorf("demo: capture: %w", out.err)
	}
	say("production ran %d transactions", run.Transactions)
	for _, r := range []capturerun.Status{s.first, second} {
		if !r.Complete {
			return "", &IncompleteCaptureError{Out: r.Out, ID: r.ID, Reason: string(r.Reason)}
		}
		say("recording %s: %d sessions (%d recorded from the middle), %d records, %s in %s",
			r.ID, r.Sessions, r.Resumed, r.Records, numfmt.Bytes(r.Bytes), r.Out)
	}
	if total := out.sum.Proxy.SessionsTotal; total == s.totalThen {
		say("no connection was dropped: the proxy's sessions_total was %d at the switch and %d at the end; the %d sessions open at the switch went on into %s",
			s.totalThen, total, s.open, second.ID)
	} else {
		say("%d sessions started after the switch (the proxy's sessions_total was %d at the switch, %d at the end)", total-s.totalThen, s.totalThen, total)
	}
	say("the rehearsal replays %s (%s); %s is kept in %s", second.ID, dir, s.first.ID, firstDir)
	return dir, nil
}

// gatheredCounter is the value of the counter name in reg.
func gatheredCounter(reg *prometheus.Registry, name string) (int64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return int64(mf.GetMetric()[0].GetCounter().GetValue()), nil
		}
	}
	return 0, fmt.Errorf("the proxy has no metric %s", name)
}
