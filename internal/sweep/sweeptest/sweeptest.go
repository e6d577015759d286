// Package sweeptest holds what the tests of sweep and of its drivers
// share: short sweep options on pgbench, and the checks every measured
// step must pass. It is for tests only (it imports testing); nothing in
// the binary imports it.
package sweeptest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// PgbenchQuery is select-only's statement as pg_stat_statements shows it.
const PgbenchQuery = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"

// Options are the options of the tests' sweeps: short steps, which
// measure little but exercise every part, on pgbench select-only.
func Options(t *testing.T, clients ...int) sweep.Options {
	return sweep.Options{
		Driver:     &sweep.Pgbench{Builtin: "select-only", Mode: "simple", Path: Pgbench(t)},
		Clients:    clients,
		Warmup:     time.Second,
		Duration:   2 * time.Second,
		CliffRatio: 0.8,
		Scale:      1,
		Progress:   func(format string, args ...any) { t.Logf(format, args...) },
	}
}

// Pgbench fails the test, saying how to install it, without pgbench.
func Pgbench(t *testing.T) string {
	t.Helper()
	p, err := sweep.FindPgbench("")
	if err != nil {
		t.Fatalf("%v (install with: %s)", err, pgcluster.InstallHint)
	}
	return p
}

// PgbenchLog runs pgbench's builtin script (-b) in mode (-M) with two
// clients for a second on a throwaway cluster that logs everything, and
// returns its CSV log. pgbench -i runs with logging off, so the log holds
// the clients' sessions only (and pgbench's own first look at the
// tables).
func PgbenchLog(ctx context.Context, t *testing.T, builtin, mode string) string {
	t.Helper()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	quiet := []string{"PGOPTIONS=-c log_min_duration_statement=-1 -c log_connections=off -c log_disconnections=off"}
	if out, err := c.PgbenchEnv(ctx, quiet, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	if out, err := c.Pgbench(ctx, "-n", "-b", builtin, "-M", mode, "-c", "2", "-j", "2", "-T", "1", "postgres"); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	return pgclustertest.LogFile(t, c, "*.csv")
}

// CheckSteps checks what every measured step must have, and the peak and
// the cliff, when judged, of their configuration.
func CheckSteps(t *testing.T, c sweep.ConfigRun, clients []int, cpuKnown bool) {
	t.Helper()
	if len(c.Steps) != len(clients) {
		t.Fatalf("%s: %d steps, want %d", c.Name, len(c.Steps), len(clients))
	}
	for i, s := range c.Steps {
		where := c.Name + ", " + strconv.Itoa(s.Clients) + " clients"
		if s.Clients != clients[i] || s.Threads < 1 || s.Threads > s.Clients {
			t.Errorf("%s: clients %d threads %d", where, s.Clients, s.Threads)
		}
		if s.TPS <= 0 || s.Transactions <= 0 || s.WindowS < 1 || s.WindowS > 2 || s.PgbenchTPS <= 0 {
			t.Errorf("%s: tps %v transactions %d window %vs pgbench %v", where, s.TPS, s.Transactions, s.WindowS, s.PgbenchTPS)
		}
		l := s.Latency
		if s.LatencySamples <= 0 || !(0 < l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max) || l.Mean <= 0 {
			t.Errorf("%s: latency %+v from %d samples", where, l, s.LatencySamples)
		}
		if cpuKnown {
			if s.ServerCPUS == nil || *s.ServerCPUS <= 0 || s.CPUPerTxMS == nil || *s.CPUPerTxMS <= 0 {
				t.Errorf("%s: server CPU %v, per transaction %v", where, s.ServerCPUS, s.CPUPerTxMS)
			}
		} else if s.ServerCPUS != nil {
			t.Errorf("%s: server CPU %v, want unknown", where, *s.ServerCPUS)
		}
		// The sampler runs about 20 rounds in 2 s; a loaded machine may
		// delay some, but not all.
		if s.WaitSamples < 5 || len(s.WaitEvents) == 0 {
			t.Errorf("%s: %d sampling rounds, wait events %+v", where, s.WaitSamples, s.WaitEvents)
		}
		total := 0
		for _, w := range s.WaitEvents {
			total += w.Samples
			if w.Type == "" || w.Event == "" || w.Samples <= 0 {
				t.Errorf("%s: wait event %+v", where, w)
			}
		}
		// Each round sees at most every client (the sampler excludes
		// itself).
		if total > s.WaitSamples*s.Clients {
			t.Errorf("%s: %d backend samples in %d rounds of %d clients", where, total, s.WaitSamples, s.Clients)
		}
	}
	// A comparison of one step each judges no cliff (sweep.Judge); its
	// tests say so.
	if c.Peak == nil || c.Cliff != nil && c.Cliff.UpTo != clients[len(clients)-1] {
		t.Errorf("%s: peak %+v cliff %+v", c.Name, c.Peak, c.Cliff)
	}
}

// FindHot returns the step's hot query whose text is query, or nil.
func FindHot(s sweep.Step, query string) *sweep.Hot {
	for i := range s.HotQueries {
		if s.HotQueries[i].Query == query {
			return &s.HotQueries[i]
		}
	}
	return nil
}

// HotTexts are the texts of the step's hot queries.
func HotTexts(s sweep.Step) []string {
	var out []string
	for _, h := range s.HotQueries {
		out = append(out, h.Query)
	}
	return out
}
