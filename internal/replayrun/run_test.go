package replayrun

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// capture runs a small workload on a throwaway server that logs every
// statement, and returns its log: a table created, three sessions
// inserting 20 rows each, one failing statement, one reading.
func capture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	pgclustertest.Exec(t, a, "postgres", "CREATE TABLE items (id int PRIMARY KEY, session int)")
	for s := range 3 {
		conn, err := pgconn.Connect(ctx, a.DSN("postgres")+" application_name=shop")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO items VALUES (%d, %d)", s*100+i, s)).ReadAll(); err != nil {
				t.Fatal(err)
			}
		}
		conn.Exec(ctx, "SELECT 1/0").ReadAll() // fails in the original too
		conn.Exec(ctx, "SELECT count(*) FROM items").ReadAll()
		conn.Close(ctx)
	}
	return pgclustertest.StoppedLog(t, a)
}

func rows(t *testing.T, dsn string) string {
	t.Helper()
	conn, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(context.Background(), "SELECT count(*), count(DISTINCT session) FROM items").ReadAll()
	if err != nil {
		return err.Error()
	}
	r := res[0].Rows[0]
	return string(r[0]) + "/" + string(r[1])
}

// TestRunEndToEnd: a replay run as a library, on real servers: the
// pre-flight checks the log's logins and is told first, the observer
// gathers evidence, the target's own log gives server-side durations, the
// findings are named, and the outcome is clean; the result names its
// input and accounts for every line and statement.
func TestRunEndToEnd(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	log := capture(t)
	b := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	pgclustertest.Exec(t, b, "postgres", "CREATE TABLE items (id int PRIMARY KEY, session int)")
	bLogs, err := b.LogFiles("*.log")
	if err != nil || len(bLogs) != 1 {
		t.Fatalf("B's logs %v: %v", bLogs, err)
	}
	var events []string
	oo := observe.Options{Interval: time.Second, SampleInterval: 100 * time.Millisecond}
	cfg := Config{
		Input:     source.Paths{log},
		Selection: source.Selection{Applications: []string{"shop"}},
		Replay:    replay.Options{Target: b.DSN("postgres"), Speed: 0},
		// A pattern, as a quoted --target-log gives it: Run expands it.
		TargetLogs: []string{filepath.Join(filepath.Dir(bLogs[0]), "*.log")},
		Observe:    &oo,
		Findings:   true,
		MaxSkipped: 0.1, MaxErrorRate: 1,
		OnPreflight: func(pf *Preflight) {
			events = append(events, fmt.Sprintf("preflight %d/%d", pf.Accepted(), len(pf.Checks)))
		},
		OnStart: func(*replay.Replayer, *source.Set) { events = append(events, "start") },
		OnEnd:   func() { events = append(events, "end") },
	}
	o, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := o.Result
	if len(o.Reasons) != 0 {
		t.Errorf("reasons %v (target log: %v, findings: %v)", o.Reasons, o.TargetLogErr, o.FindingsErr)
	}
	// The log's login, and the DSN's own (the observer's, the marker's).
	if strings.Join(events, ", ") != "preflight 2/2, start, end" {
		t.Errorf("callbacks %q", events)
	}
	// 60 INSERTs, 3 divisions by zero and 3 counts of the three
	// sessions of the application; not the CREATE TABLE of psql-less
	// tests (application_name not shop).
	if s := res.Statements; s.Total != 66 || s.Executed != 63 || s.Failed != 3 {
		t.Errorf("statements %+v", s)
	}
	if got := rows(t, b.DSN("postgres")); got != "60/3" {
		t.Errorf("target rows %s, want 60/3", got)
	}
	if res.Outcomes.BothFailed != 3 || res.Outcomes.FailedOnlyOnTarget != 0 {
		t.Errorf("outcomes %+v", res.Outcomes)
	}
	if res.LatencySource != results.LatencyServerLog || res.TargetLog == nil || res.TargetLog.ExecutionsMatched != res.TargetLog.Executions {
		t.Errorf("latency source %s, target log %+v", res.LatencySource, res.TargetLog)
	}
	if o.Evidence == nil || len(res.Evidence) == 0 || o.Findings == nil {
		t.Errorf("evidence %v (%d bytes in the result), findings %v", o.Evidence != nil, len(res.Evidence), o.Findings != nil)
	}
	if in := res.Input; in == nil || len(in.Files) != 1 || in.Files[0].Name != log || !in.Known() {
		t.Errorf("input %+v", res.Input)
	}
	if l := res.Lines; l == nil || l.Total == 0 || l.Total != l.Parsed+l.SkippedTotal() {
		t.Errorf("lines %+v", res.Lines)
	}
	if f := res.Filtered; f.Sessions == 0 || f.Statements == 0 {
		t.Errorf("filtered %+v: the application filter left out the test's own sessions", f)
	}
	if res.Part != nil {
		t.Errorf("part %+v of a whole run", res.Part)
	}
}

// TestRunOutcomes: what stands in the way of a clean measurement is a
// value: sessions that cannot connect; nothing measured; a failed
// pre-flight is an error before anything runs; a shard's result names its
// part, and the shards of a dry run merge into the whole, lines once.
func TestRunOutcomes(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	log := capture(t)
	b := pgclustertest.StartT(t, pgcluster.Options{})

	base := Config{Input: source.Paths{log}, Replay: replay.Options{Target: b.DSN("postgres"), Speed: 0}, MaxSkipped: 0.1, MaxErrorRate: 1}
	// What the server says of itself, on this test's cluster.
	checkAskServer(t, b)

	// Logins the target refuses: the pre-flight stops the run.
	cfg := base
	cfg.Replay.UserMap = map[string]string{"postgres": "nobody"}
	if _, err := Run(ctx, cfg); err == nil {
		t.Fatal("a pre-flight against a missing role passed")
	} else if pe, ok := err.(*PreflightError); !ok || !pe.Preflight.Failed() || pe.Preflight.Checks[0].Problem != replay.ProblemNoRole {
		t.Errorf("pre-flight error %#v", err)
	}
	// Without it, the sessions fail to connect: a reason, with the
	// result.
	cfg.SkipPreflight = true
	o, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.First() != ReasonConnectFailures || o.Result.Sessions.ConnectFailed == 0 {
		t.Errorf("reasons %v, sessions %+v", o.Reasons, o.Result.Sessions)
	}

	// A window that holds nothing: nothing measured, said why, and the
	// result marked so that report will not judge it.
	cfg = base
	cfg.Selection.Start = time.Now().Add(time.Hour).UnixMicro()
	cfg.Replay.DryRun, cfg.Replay.Target = true, ""
	if o, err = Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if o.First() != ReasonNothingMeasured || o.Nothing.Reason != source.NothingOutsideWindow ||
		!o.Result.IncompleteBecause(results.IncompleteNothingMeasured) {
		t.Errorf("reasons %v, nothing %v, incomplete %v", o.Reasons, o.Nothing, o.Result.IncompleteReasons)
	}

	// Shards of a dry run: each names its part; merged, they are the
	// whole, the lines read once.
	cfg = base
	cfg.Replay.DryRun, cfg.Replay.Target = true, ""
	whole, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var parts []*results.Result
	for k := range 2 {
		c := cfg
		c.Selection.Shard = source.Shard{K: k, Of: 2}
		o, err := Run(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if p := o.Result.Part; p == nil || p.Of != 2 || len(p.Shards) != 1 || p.Shards[0] != k {
			t.Errorf("shard %d: part %+v", k, p)
		}
		if o.Result.OtherShards == nil || o.Result.OtherShards.ReadEvents != whole.Result.Reader.Events {
			t.Errorf("shard %d: others %+v, the whole read %d events", k, o.Result.OtherShards, whole.Result.Reader.Events)
		}
		parts = append(parts, o.Result)
	}
	m, err := results.MergeAll(parts...)
	if err != nil {
		t.Fatal(err)
	}
	w := whole.Result
	if m.Statements.Total != w.Statements.Total || m.Sessions.Total != w.Sessions.Total || m.Lines.Total != w.Lines.Total ||
		m.Reader.Events != w.Reader.Events || m.Filtered != w.Filtered || m.OtherShards != nil {
		t.Errorf("merged shards: statements %+v sessions %d lines %d events %d filtered %+v others %+v; whole: %+v %d %d %d %+v",
			m.Statements, m.Sessions.Total, m.Lines.Total, m.Reader.Events, m.Filtered, m.OtherShards,
			w.Statements, w.Sessions.Total, w.Lines.Total, w.Reader.Events, w.Filtered)
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
