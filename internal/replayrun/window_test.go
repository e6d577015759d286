package replayrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// windowLog writes a log of one session that ran a statement every
// 10 ms for 0.5 s, each taking 1 ms there and 40 ms on the target
// (pg_sleep): 2 s of the target's work on a 0.5 s schedule.
func windowLog(t *testing.T) (path, prefix string) {
	t.Helper()
	prefix = "%m [%p] %q%u@%d/%a %c "
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	line := func(at time.Duration, msg string) {
		fmt.Fprintf(&b, "%s [1001] postgres@postgres/shop %x.3e9 %s\n", start.Add(at).Format("2006-01-02 15:04:05.000 MST"), start.Unix(), msg)
	}
	line(0, "LOG:  connection authorized: user=postgres database=postgres application_name=shop")
	for at := 10 * time.Millisecond; at <= 500*time.Millisecond; at += 10 * time.Millisecond {
		line(at+time.Millisecond, "LOG:  duration: 1.000 ms  statement: SELECT pg_sleep(0.04)")
	}
	line(510*time.Millisecond, "LOG:  disconnection: session time: 0:00:00.510 user=postgres database=postgres host=[local]")
	path = filepath.Join(t.TempDir(), "postgresql.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, prefix
}

// A replay that falls behind its schedule, observed: the observer takes
// its pg_stat_statements snapshot at the window's end, so the evidence's
// window and the result's hold the same calls, give or take the one in
// flight then; both fewer than the whole run's.
func TestRunWindowObserved(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
	path, prefix := windowLog(t)
	oo := observe.Options{Interval: time.Hour, SampleInterval: 20 * time.Millisecond}
	cfg := Config{
		Input:  source.Paths{path},
		Source: source.Options{Log: logread.Options{Prefix: prefix}},
		Replay: replay.Options{Target: c.DSN("postgres"), Speed: 1},
		// The observer's sessions are not the workload's.
		Selection: source.Selection{Applications: []string{"shop"}},
		Observe:   &oo,
	}
	o, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, ev := o.Result, o.Evidence
	sleep := fingerprint.Compute("SELECT pg_sleep(0.04)")[0].Fingerprint
	total := res.Query(sleep)
	if res.Window == nil || total == nil || len(res.Window.Queries) != 1 || res.Window.Queries[0].Fingerprint != sleep {
		t.Fatalf("window %+v of %+v", res.Window, total)
	}
	client := res.Window.Queries[0]
	if ev == nil || ev.Statements == nil || ev.Statements.Window == nil {
		t.Fatalf("no window in the evidence: %+v", ev)
	}
	var server *observe.WindowQuery
	for i, q := range ev.Statements.Window.Queries {
		if q.Fingerprint == sleep {
			server = &ev.Statements.Window.Queries[i]
		}
	}
	if server == nil || server.Calls > client.Calls || server.Calls < client.Calls-1 || client.Calls >= total.Calls {
		t.Errorf("calls within the window: %+v at the server, %d round trips, of %d", server, client.Calls, total.Calls)
	}
	if server != nil && server.TotalExecMS < 40*float64(server.Calls) {
		t.Errorf("the window's server time %.1f ms for %d calls of 40 ms", server.TotalExecMS, server.Calls)
	}
}
