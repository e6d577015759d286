package cli

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capturerun"
)

// TestDrainNotices: the proxy's drain is told on standard error as it
// begins (how many connections, until when) and as it ends (how many
// closed by themselves, how many cut, why), not left to look like a hang
// (issue 57 item 6). capturerun's TestShutdownDrains checks the figures.
func TestDrainNotices(t *testing.T) {
	var errb bytes.Buffer
	var cfg capturerun.Config
	var ready atomic.Bool
	// The capture command sets them.
	captureNotices(context.Background(), IO{Stderr: &errb}, &captureFlags{upstream: "host=db", drain: 30 * time.Second}, &cfg, &ready)
	if cfg.Draining == nil || cfg.Drained == nil {
		t.Fatal("the capture command does not tell the drain")
	}
	until := time.Date(2026, 11, 26, 23, 59, 30, 0, time.UTC)
	cfg.Draining(capturerun.DrainStart{Open: 3, Until: until})
	cfg.Drained(capturerun.DrainEnd{Closed: 2, Cut: 1, Ended: capturerun.DrainTimedOut, Took: 30 * time.Second})
	cfg.Draining(capturerun.DrainStart{Open: 1, Until: until})
	cfg.Drained(capturerun.DrainEnd{Closed: 1, Ended: capturerun.DrainAllClosed, Took: 1234 * time.Millisecond})
	cfg.Drained(capturerun.DrainEnd{Cut: 4, Ended: capturerun.DrainCutShort, Took: time.Second})
	got := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	want := []string{
		"pgrehearse: capture: draining: 3 connections open, relayed until they close or until 23:59:30 UTC (--drain 30s)",
		"pgrehearse: capture: drain ended after 30s (--drain passed): 2 closed by themselves, 1 cut by the proxy",
		"pgrehearse: capture: draining: 1 connection open,",
		"pgrehearse: capture: drain ended after 1.2s (every connection closed): 1 closed by themselves, 0 cut by the proxy",
		"pgrehearse: capture: drain ended after 1s (a second Ctrl-C or SIGTERM): 0 closed by themselves, 4 cut by the proxy",
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), errb.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("line %d: %q\nwant it to start %q", i+1, got[i], w)
		}
	}
}
