package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// pgbenchQuery is select-only's statement as pg_stat_statements shows it.
const pgbenchQuery = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"

// shortSweep are the options of the tests' sweeps: short steps, which
// measure little but exercise every part.
func shortSweep(t *testing.T, clients ...int) Options {
	return Options{
		Driver:     &Pgbench{Builtin: "select-only", Mode: "simple", Path: testPgbench(t)},
		Clients:    clients,
		Warmup:     time.Second,
		Duration:   2 * time.Second,
		CliffRatio: 0.8,
		Scale:      1,
		Progress:   func(format string, args ...any) { t.Logf(format, args...) },
	}
}

// testPgbench fails the test, saying how to install it, without pgbench.
func testPgbench(t *testing.T) string {
	t.Helper()
	p, err := FindPgbench("")
	if err != nil {
		t.Fatalf("%v (install with: %s)", err, pgcluster.InstallHint)
	}
	return p
}

var trackPlanning = []Config{
	{Name: "on", Settings: map[string]string{"pg_stat_statements.track_planning": "on"}},
	{Name: "off", Settings: map[string]string{"pg_stat_statements.track_planning": "off"}},
}

// The acceptance sweep, in small: select-only on throwaway clusters
// with track_planning on and off, every step measured. Figures are not
// asserted, only what must hold however loaded the machine is.
func TestSweepThrowawayCompare(t *testing.T) {
	opts := shortSweep(t, 1, 2, 4)
	opts.Configs = trackPlanning
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "sweep" || res.Target != "throwaway" || res.Partial || res.Workload.Builtin != "select-only" {
		t.Errorf("header: %+v", res)
	}
	if len(res.Configs) != 2 {
		t.Fatalf("%d configurations, want 2", len(res.Configs))
	}
	for _, c := range res.Configs {
		if got := c.Effective["pg_stat_statements.track_planning"]; got != c.Name {
			t.Errorf("%s: effective track_planning %q", c.Name, got)
		}
		checkSteps(t, c, []int{1, 2, 4}, true)
		for _, s := range c.Steps {
			hot := findHot(s, pgbenchQuery)
			if hot == nil {
				t.Errorf("%s, %d clients: pgbench's query not among the hot queries %+v", c.Name, s.Clients, s.HotQueries)
				continue
			}
			// In the simple protocol every call is planned, and only
			// track_planning counts it.
			if c.Name == "on" && hot.PlansPerS < hot.CallsPerS/2 {
				t.Errorf("on, %d clients: %.0f plans/s for %.0f calls/s", s.Clients, hot.PlansPerS, hot.CallsPerS)
			}
			if c.Name == "off" && hot.PlansPerS != 0 {
				t.Errorf("off, %d clients: %.0f plans/s with track_planning off", s.Clients, hot.PlansPerS)
			}
			if strings.Contains(strings.Join(hotTexts(s), " "), "pg_stat_activity") {
				t.Errorf("%s: the sampler's own query is among the hot queries", c.Name)
			}
		}
	}
	// Configurations alternate: on first at 1 and 4 clients, off first at 2.
	on, off := res.Configs[0].Steps, res.Configs[1].Steps
	if !on[0].Started.Before(off[0].Started) || !off[1].Started.Before(on[1].Started) || !on[2].Started.Before(off[2].Started) {
		t.Errorf("order: on %v %v %v, off %v %v %v", on[0].Started, on[1].Started, on[2].Started,
			off[0].Started, off[1].Started, off[2].Started)
	}
	if len(res.Comparison) != 3 || res.Comparison[0].Baseline != "on" || res.Comparison[2].Ratio["off"] <= 0 {
		t.Errorf("comparison %+v", res.Comparison)
	}

	// The JSON has the documented shape.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kind    string
		Configs []struct {
			Name  string
			Steps []map[string]any
			Peak  map[string]any
			Cliff map[string]any
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Configs {
		for _, s := range c.Steps {
			for _, key := range []string{"clients", "tps", "latency_ms", "server_cpu_s", "cpu_per_tx_ms", "wait_events", "hot_queries"} {
				if _, ok := s[key]; !ok {
					t.Errorf("%s: step without %q: %v", c.Name, key, s)
				}
			}
		}
		if c.Peak["clients"] == nil || c.Cliff["up_to_clients"] != float64(4) {
			t.Errorf("%s: peak %v cliff %v", c.Name, c.Peak, c.Cliff)
		}
	}
	t.Logf("%s", b)
}

// checkSteps checks what every measured step must have.
func checkSteps(t *testing.T, c ConfigRun, clients []int, cpuKnown bool) {
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
	if c.Peak == nil || c.Cliff == nil || c.Cliff.UpTo != clients[len(clients)-1] {
		t.Errorf("%s: peak %+v cliff %+v", c.Name, c.Peak, c.Cliff)
	}
}

func findHot(s Step, query string) *Hot {
	for i := range s.HotQueries {
		if s.HotQueries[i].Query == query {
			return &s.HotQueries[i]
		}
	}
	return nil
}

func hotTexts(s Step) []string {
	var out []string
	for _, h := range s.HotQueries {
		out = append(out, h.Query)
	}
	return out
}

// On a given server, configurations are applied with ALTER SYSTEM and a
// reload, and the server's own settings are back afterwards.
func TestSweepTargetCompare(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "postgres", "CREATE EXTENSION pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	// A value the user had in postgresql.auto.conf must survive.
	for _, sql := range []string{"ALTER SYSTEM SET pg_stat_statements.track_planning = on", "SELECT pg_reload_conf()"} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			t.Fatal(err)
		}
	}
	opts := shortSweep(t, 1, 2)
	opts.Target = c.DSN("postgres")
	opts.Init = true
	opts.Configs = []Config{
		{Name: "off", Settings: map[string]string{"pg_stat_statements.track_planning": "off"}},
		{Name: "jit", Settings: map[string]string{"jit": "off", "work_mem": "8MB"}},
	}
	res, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Target, "port=") || strings.Contains(res.Target, "password") {
		t.Errorf("target %q", res.Target)
	}
	for _, cr := range res.Configs {
		// The target is on this machine: its CPU is known.
		checkSteps(t, cr, []int{1, 2}, true)
	}
	if got := res.Configs[0].Effective["pg_stat_statements.track_planning"]; got != "off" {
		t.Errorf("off: effective %q", got)
	}
	if got := res.Configs[1].Effective; got["jit"] != "off" || got["work_mem"] != "8MB" {
		t.Errorf("jit: effective %v", got)
	}
	// Under "jit", track_planning is the user's on again.
	for _, s := range res.Configs[1].Steps {
		if h := findHot(s, pgbenchQuery); h == nil || h.PlansPerS == 0 {
			t.Errorf("jit, %d clients: the user's track_planning=on was not in force: %+v", s.Clients, h)
		}
	}
	got := settingsNow(t, c.DSN("postgres"), "pg_stat_statements.track_planning", "jit", "work_mem")
	if got["pg_stat_statements.track_planning"] != "on" || got["jit"] != "on" || got["work_mem"] != "4MB" {
		t.Errorf("settings after the sweep: %v", got)
	}
	auto, err := os.ReadFile(filepath.Join(c.DataDir(), "postgresql.auto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(auto), "jit") || strings.Contains(string(auto), "work_mem") {
		t.Errorf("postgresql.auto.conf still holds the sweep's settings:\n%s", auto)
	}
}

// A setting that needs a restart is refused on a target before anything
// runs or changes.
func TestSweepTargetRefusesRestartSettings(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	opts := shortSweep(t, 1)
	opts.Target = c.DSN("postgres")
	opts.Configs = []Config{
		{Name: "small", Settings: map[string]string{"shared_buffers": "16MB"}},
		{Name: "big", Settings: map[string]string{"shared_buffers": "256MB", "pg_stat_statements.track_planning": "on"}},
	}
	res, err := Run(context.Background(), opts)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"shared_buffers: needs a server restart", "pg_stat_statements.track_planning: unknown on the target"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	var refused *RefusedSettingsError
	if !errors.As(err, &refused) || !refused.NeedsRestart() || len(refused.Settings) != 2 {
		t.Errorf("error %T %+v: want the two settings refused, one needing a restart", err, refused)
	}
	if !res.Partial || len(res.Configs[0].Steps) != 0 {
		t.Errorf("steps ran: %+v", res.Configs)
	}
	if got := settingsNow(t, c.DSN("postgres"), "shared_buffers"); got["shared_buffers"] != "128MB" {
		t.Errorf("shared_buffers %v", got)
	}
}

// A remote target's CPU is unknown; what the sweep can see of it is the
// same as of a local one.
func TestLocalPostmaster(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if pid := localPostmaster(ctx, c.DSN("postgres")); pid <= 0 {
		t.Errorf("local cluster through its socket: pid %d", pid)
	}
	tcp := "host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " user=postgres dbname=postgres sslmode=disable"
	if pid := localPostmaster(ctx, tcp); pid <= 0 {
		t.Errorf("local cluster through 127.0.0.1: pid %d", pid)
	}
	for _, host := range []string{"db.example.com", "10.1.2.3"} {
		if pid := localPostmaster(ctx, "host="+host+" port="+strconv.Itoa(c.Port())); pid != 0 {
			t.Errorf("%s taken for this machine: pid %d", host, pid)
		}
	}
}

func settingsNow(t *testing.T, dsn string, names ...string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	out := map[string]string{}
	for _, n := range names {
		var v string
		if err := conn.QueryRow(context.Background(), "SELECT current_setting($1, true)", n).Scan(&v); err != nil {
			t.Fatal(err)
		}
		out[n] = v
	}
	return out
}

// Ctrl-C during a step keeps the complete steps, marks the result partial and stops the
// throwaway cluster.
func TestSweepInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := shortSweep(t, 1, 2, 4)
	logf := opts.Progress
	opts.Progress = func(format string, args ...any) {
		logf(format, args...)
		if strings.Contains(format, "clients:") {
			// In the middle of the second step's window.
			time.AfterFunc(2*time.Second, cancel)
		}
	}
	res, err := Run(ctx, opts)
	if err == nil || ctx.Err() == nil {
		t.Fatalf("err %v", err)
	}
	if !res.Partial || len(res.Configs) != 1 || len(res.Configs[0].Steps) != 1 {
		t.Fatalf("partial %v, configs %+v", res.Partial, res.Configs)
	}
	if p := res.Configs[0].Peak; p == nil || p.Clients != 1 {
		t.Errorf("peak %+v", p)
	}
}
