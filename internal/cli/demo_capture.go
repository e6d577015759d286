package cli

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/pgrehearse/pgrehearse/internal/capturerun"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// How the demo takes production's traffic (--capture).
const (
	demoCaptureLog   = "log"
	demoCaptureProxy = "proxy"
)

// captureShop runs the shop's traffic on prod through a capture proxy,
// with prod logging no statement, as a team that cannot log every
// statement would take it, and returns the finalized capture's directory.
func captureShop(ctx context.Context, stdio IO, say func(string, ...any), prod *pgcluster.Cluster, f demoFlags, dir string) (string, error) {
	// A capture refuses a directory that holds one: an earlier demo's.
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	listening := make(chan string, 1)
	capCtx, stop := context.WithCancel(ctx)
	defer stop()
	type outcome struct {
		sum capturerun.Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		sum, err := capturerun.Run(capCtx, capturerun.Config{
			Listen: "127.0.0.1:0", Upstream: prod.DSN(workload.ShopDatabase), Out: dir,
			Warn:      func(s string) { fmt.Fprintf(stdio.Stderr, "demo: capture: %s\n", s) },
			Listening: func(addr, _ string) { listening <- addr },
		})
		done <- outcome{sum, err}
	}()
	var addr string
	select {
	case addr = <-listening:
	case o := <-done:
		return "", fmt.Errorf("demo: capture: %w", o.err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	say("production traffic through pgrehearse capture on %s (production logs no statement): pgbench -M prepared, %d transactions/s for %v", addr, f.rate, f.duration)
	run, runErr := workload.RunShopThrough(ctx, prod, host, port, f.duration, f.rate)
	stop()
	o := <-done
	if runErr != nil {
		return "", runErr
	}
	if o.err != nil {
		return "", fmt.Errorf("demo: capture: %w", o.err)
	}
	m := o.sum.Manifest
	if !m.Complete {
		return "", &exitError{code: ExitIncomplete, err: fmt.Errorf("demo: the capture %s is incomplete: %s", dir, m.Reason)}
	}
	say("production ran %d transactions; the capture holds %d sessions, %d records, %s in %s", run.Transactions, m.Sessions, m.Records, humanBytes(m.Bytes), dir)
	return dir, nil
}
