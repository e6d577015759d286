package sweep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
	"github.com/pgrehearse/pgrehearse/internal/sweep/sweeptest"
)

var trackPlanning = []sweep.Config{
	{Name: "on", Settings: map[string]string{"pg_stat_statements.track_planning": "on"}},
	{Name: "off", Settings: map[string]string{"pg_stat_statements.track_planning": "off"}},
}

// The acceptance sweep, in small: select-only on throwaway clusters
// with track_planning on and off, every step measured. Figures are not
// asserted, only what must hold however loaded the machine is.
//
// It asks for one step per client count, which measures no noise: the
// comparison's ratios then carry no interval and no "~", and no knee or
// cliff is called (sweep.Judge).
func TestSweepThrowawayCompare(t *testing.T) {
	opts := sweeptest.Options(t, 1, 2, 4)
	opts.Configs = trackPlanning
	opts.Repeat = 1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := sweep.Run(ctx, opts)
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
		sweeptest.CheckSteps(t, c, []int{1, 2, 4}, true)
		for _, s := range c.Steps {
			hot := sweeptest.FindHot(s, sweeptest.PgbenchQuery)
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
			if strings.Contains(strings.Join(sweeptest.HotTexts(s), " "), "pg_stat_activity") {
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
	if !res.NoiseUnmeasured || res.Plan.Repeat != 0 {
		t.Errorf("one step each: noise unmeasured %v, plan %+v", res.NoiseUnmeasured, res.Plan)
	}
	for _, c := range res.Comparison {
		if c.Change != nil {
			t.Errorf("%d clients: a change judged against unmeasured noise: %+v", c.Clients, c.Change)
		}
	}
	for _, c := range res.Configs {
		if c.Knee != nil || c.Cliff != nil {
			t.Errorf("%s: knee %+v, cliff %+v judged against unmeasured noise", c.Name, c.Knee, c.Cliff)
		}
	}

	// The JSON has the documented shape.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kind            string
		NoiseUnmeasured bool `json:"noise_unmeasured"`
		Configs         []struct {
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
		if c.Peak["clients"] == nil || c.Cliff != nil {
			t.Errorf("%s: peak %v cliff %v", c.Name, c.Peak, c.Cliff)
		}
	}
	if !doc.NoiseUnmeasured {
		t.Errorf("the JSON does not say the noise was not measured: %s", b)
	}
	t.Logf("%s", b)
}

// On a given server, configurations are applied with ALTER SYSTEM and a
// reload, and the server's own settings are back afterwards.
func TestSweepTargetCompare(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
	// A value the user had in postgresql.auto.conf must survive.
	for _, sql := range []string{"ALTER SYSTEM SET pg_stat_statements.track_planning = on", "SELECT pg_reload_conf()"} {
		pgclustertest.Exec(t, c, "postgres", sql)
	}
	opts := sweeptest.Options(t, 1, 2)
	opts.Target = c.DSN("postgres")
	opts.Init = true
	opts.Repeat = 1 // settings, not statistics, are tested here
	opts.Configs = []sweep.Config{
		{Name: "off", Settings: map[string]string{"pg_stat_statements.track_planning": "off"}},
		{Name: "jit", Settings: map[string]string{"jit": "off", "work_mem": "8MB"}},
	}
	res, err := sweep.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Target, "port=") || strings.Contains(res.Target, "password") {
		t.Errorf("target %q", res.Target)
	}
	for _, cr := range res.Configs {
		// The target is on this machine: its CPU is known.
		sweeptest.CheckSteps(t, cr, []int{1, 2}, true)
	}
	if got := res.Configs[0].Effective["pg_stat_statements.track_planning"]; got != "off" {
		t.Errorf("off: effective %q", got)
	}
	if got := res.Configs[1].Effective; got["jit"] != "off" || got["work_mem"] != "8MB" {
		t.Errorf("jit: effective %v", got)
	}
	// Under "jit", track_planning is the user's on again.
	for _, s := range res.Configs[1].Steps {
		if h := sweeptest.FindHot(s, sweeptest.PgbenchQuery); h == nil || h.PlansPerS == 0 {
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
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	opts := sweeptest.Options(t, 1)
	opts.Target = c.DSN("postgres")
	opts.Configs = []sweep.Config{
		{Name: "small", Settings: map[string]string{"shared_buffers": "16MB"}},
		{Name: "big", Settings: map[string]string{"shared_buffers": "256MB", "pg_stat_statements.track_planning": "on"}},
	}
	res, err := sweep.Run(context.Background(), opts)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"shared_buffers: needs a server restart", "pg_stat_statements.track_planning: unknown on the target"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	var refused *sweep.RefusedSettingsError
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

// A role short of any privilege the sweep needs to apply the settings
// and put the DBA's back is refused before anything changes. Before, a
// role allowed ALTER SYSTEM but not pg_file_settings and pg_reload_conf
// had its configuration written, then the DBA's work_mem reset.
func TestSweepTargetRefusesWithoutPrivileges(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	for _, sql := range []string{"ALTER SYSTEM SET work_mem = '7MB'", "SELECT pg_reload_conf()"} {
		if err := c.Exec(context.Background(), "postgres", sql); err != nil {
			t.Fatal(err)
		}
	}
	const (
		alter    = "GRANT ALTER SYSTEM ON PARAMETER work_mem TO %s"
		reload   = "GRANT EXECUTE ON FUNCTION pg_reload_conf() TO %s"
		fileRead = "GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO %s; GRANT SELECT ON pg_file_settings TO %s"
	)
	for i, tc := range []struct {
		grants []string
		want   string
	}{
		{[]string{alter}, "lacks EXECUTE on pg_reload_conf()"},
		{[]string{reload, fileRead}, "lacks ALTER SYSTEM on work_mem"},
		{[]string{alter, reload}, "read pg_file_settings"},
	} {
		role := fmt.Sprintf("sweeper%d", i)
		if err := c.Exec(context.Background(), "postgres", "CREATE ROLE "+role+" LOGIN"); err != nil {
			t.Fatal(err)
		}
		for _, g := range tc.grants {
			for _, sql := range strings.Split(strings.ReplaceAll(g, "%s", role), "; ") {
				if err := c.Exec(context.Background(), "postgres", sql); err != nil {
					t.Fatal(err)
				}
			}
		}
		opts := sweeptest.Options(t, 1)
		opts.Target = c.DSN("postgres") + " user=" + role
		opts.Configs = []sweep.Config{{Name: "big", Settings: map[string]string{"work_mem": "64MB"}}}
		res, err := sweep.Run(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Errorf("%s: error %v: want %q and nothing changed", role, err, tc.want)
			continue
		}
		if !res.Partial || len(res.Configs[0].Steps) != 0 {
			t.Errorf("%s: steps ran: %+v", role, res.Configs)
		}
		auto, err := os.ReadFile(filepath.Join(c.DataDir(), "postgresql.auto.conf"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(auto), "work_mem = '7MB'") {
			t.Errorf("%s: the DBA's work_mem is gone from postgresql.auto.conf:\n%s", role, auto)
		}
		if got := settingsNow(t, c.DSN("postgres"), "work_mem"); got["work_mem"] != "7MB" {
			t.Errorf("%s: work_mem %v", role, got)
		}
	}
}

// On a target without pg_stat_statements the steps have no hot queries,
// and each says why instead of showing an empty list as if nothing ran.
func TestSweepTargetWithoutStatements(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	opts := sweeptest.Options(t, 1)
	opts.Target = c.DSN("postgres")
	opts.Init = true
	progress := recordProgress(t, &opts)
	res, err := sweep.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Configs[0].Steps; len(s) != 1 || len(s[0].HotQueries) != 0 {
		t.Fatalf("steps %+v", s)
	}
	if all := progress(); !strings.Contains(all, "no hot queries: ") {
		t.Errorf("no step said why it has no hot queries:\n%s", all)
	}
}

// A role that is not a superuser may not keep the sampler's statements
// out of pg_stat_statements (pg_stat_statements.track = none): they are
// counted there, about 10 calls/s, and must still not show as the
// workload's hot queries; the step says why it could not untrack them.
func TestSweepTargetSamplerNotHotWithoutSuperuser(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The role owns its database, so that it may create pgbench's
	// tables there; the extension takes a superuser.
	for _, s := range []struct{ db, sql string }{
		{"postgres", "CREATE ROLE sweeper LOGIN"},
		{"postgres", "CREATE DATABASE sweep OWNER sweeper"},
		{"sweep", "CREATE EXTENSION pg_stat_statements"},
	} {
		pgclustertest.Exec(t, c, s.db, s.sql)
	}
	opts := sweeptest.Options(t, 1, 2)
	opts.Target = c.DSN("sweep") + " user=sweeper"
	opts.Init = true
	// Room for every statement that ran in the window.
	opts.TopQueries = 50
	progress := recordProgress(t, &opts)
	// While the sweep runs, the application names of the role's
	// sessions: the sampler's must be the tool's own, which an
	// observer leaves out of what it measures.
	watcher := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer watcher.Close(ctx)
	names := map[string]bool{}
	watch, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			rows, _ := watcher.Query(watch, "SELECT DISTINCT application_name FROM pg_stat_activity WHERE usename = 'sweeper'")
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if watch.Err() != nil {
				watched <- nil
				return
			}
			if err != nil {
				watched <- err
				return
			}
			for _, n := range got {
				names[n] = true
			}
			select {
			case <-watch.Done():
				watched <- nil
				return
			case <-tick.C:
			}
		}
	}()
	res, err := sweep.Run(ctx, opts)
	stopWatch()
	if werr := <-watched; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !names[sweep.ApplicationName] {
		t.Errorf("the role's sessions during the sweep were named %v: none %q", names, sweep.ApplicationName)
	}
	s := res.Configs[0].Steps
	if len(s) != 2 {
		t.Fatalf("steps %+v", s)
	}
	for _, st := range s {
		if sweeptest.FindHot(st, sweeptest.PgbenchQuery) == nil {
			t.Errorf("%d clients: pgbench's query not among the hot queries %+v", st.Clients, st.HotQueries)
		}
		// The sampler's statements: its start (on pg_database), its
		// pg_stat_activity samples and its pg_stat_statements reads,
		// each tagged by observe.
		for _, h := range st.HotQueries {
			for _, own := range []string{"pgrehearse-observe", "pg_database", "pg_stat_activity", "pg_stat_statements"} {
				if strings.Contains(h.Query, own) {
					t.Errorf("%d clients: the sampler's own statement is among the hot queries: %+v", st.Clients, h)
					break
				}
			}
		}
	}
	// Said once, not once a step.
	const want = "role sweeper is not a superuser"
	if all := progress(); strings.Count(all, want) != 1 || !strings.Contains(all, "left out of the hot queries") {
		t.Errorf("not said once that the sampler's statements are counted and left out (%q):\n%s", want, all)
	}
}

// recordProgress makes opts.Progress keep the lines it logs, and returns
// them so far, one a line.
func recordProgress(t *testing.T, opts *sweep.Options) func() string {
	var mu sync.Mutex
	var lines []string
	opts.Progress = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
		t.Logf(format, args...)
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
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
	functionalCase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := sweeptest.Options(t, 1, 2, 4)
	logf := opts.Progress
	opts.Progress = func(format string, args ...any) {
		logf(format, args...)
		if strings.Contains(format, "clients:") {
			// In the middle of the second step's window.
			time.AfterFunc(2*time.Second, cancel)
		}
	}
	res, err := sweep.Run(ctx, opts)
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
