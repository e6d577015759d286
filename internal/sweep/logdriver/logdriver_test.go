package logdriver

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
	"github.com/pgrehearse/pgrehearse/internal/sweep/sweeptest"
)

func TestFit(t *testing.T) {
	functionalCase(t)
	for _, tc := range []struct{ lanes, clients, used, mult int }{
		{4, 1, 1, 1}, {4, 2, 2, 1}, {4, 4, 4, 1}, {4, 6, 3, 2}, {4, 7, 4, 2}, {4, 8, 4, 2}, {4, 9, 3, 3},
		{1, 5, 1, 5}, {0, 3, 1, 3}, {10, 32, 8, 4},
	} {
		used, mult := Fit(tc.lanes, tc.clients)
		if used != tc.used || mult != tc.mult {
			t.Errorf("Fit(%d lanes, %d clients) = %d lanes x %d, want %d x %d", tc.lanes, tc.clients, used, mult, tc.used, tc.mult)
		}
		if p := used * mult; p < tc.clients || p >= tc.clients+mult {
			t.Errorf("Fit(%d, %d): %d sessions", tc.lanes, tc.clients, p)
		}
	}
}

func TestTxEnds(t *testing.T) {
	functionalCase(t)
	items := func(q string) []fingerprint.Item { return fingerprint.Compute(q) }
	for _, tc := range []struct {
		q     string
		inTx  bool
		ends  int
		after bool
	}{
		{"SELECT 1", false, 1, false},
		{"SELECT 1", true, 0, true},
		{"BEGIN", false, 0, true},
		{"START TRANSACTION ISOLATION LEVEL SERIALIZABLE", false, 0, true},
		{"END", true, 1, false},
		{"COMMIT", true, 1, false},
		{"ROLLBACK", true, 1, false},
		{"ABORT", true, 1, false},
		{"COMMIT AND CHAIN", true, 1, true},
		{"ROLLBACK TO SAVEPOINT a", true, 0, true},
		{"COMMIT", false, 0, false}, // a warning, no transaction
		{"COMMIT PREPARED 'x'", false, 1, false},
		{"PREPARE TRANSACTION 'x'", true, 1, false},
		{"SELECT 1; SELECT 2", false, 1, false}, // one implicit transaction
		{"BEGIN; UPDATE t SET a = 1; COMMIT", false, 1, false},
		{"BEGIN; UPDATE t SET a = 1", false, 0, true},
		{"COMMIT; SELECT 1", true, 2, false},
	} {
		ends, after := txEnds(items(tc.q), tc.q, tc.inTx)
		if ends != tc.ends || after != tc.after {
			t.Errorf("%q in a block %v: %d ends, in a block after %v; want %d, %v", tc.q, tc.inTx, ends, after, tc.ends, tc.after)
		}
	}
}

// sliceSource yields events, then io.EOF.
type sliceSource []*event.Event

func (s *sliceSource) Next() (*event.Event, error) {
	if len(*s) == 0 {
		return nil, io.EOF
	}
	ev := (*s)[0]
	*s = (*s)[1:]
	return ev, nil
}

// Lanes: sessions that follow each other in the log share a lane,
// overlapping ones do not, one never disconnected holds its lane to the
// end, and the busiest lane comes first.
func TestScanLogLanes(t *testing.T) {
	functionalCase(t)
	ev := func(s string, k event.Kind, q string) *event.Event {
		return &event.Event{Kind: k, Session: s, Query: q, User: "u", Database: "d"}
	}
	src := sliceSource{
		// a: a short look before the clients begin; b and c run
		// together; d follows a; e never disconnects, and f comes
		// after it.
		ev("a", event.Connect, ""), ev("a", event.Statement, "SELECT 1"), ev("a", event.Disconnect, ""),
		ev("e", event.Connect, ""),
		ev("b", event.Connect, ""), ev("c", event.Connect, ""),
		ev("b", event.Statement, "BEGIN"), ev("b", event.Statement, "UPDATE t SET a = 1"), ev("b", event.Statement, "END"),
		ev("c", event.Statement, "SELECT 2"), ev("c", event.Statement, "SELECT 3"),
		ev("d", event.Connect, ""), ev("d", event.Statement, "SELECT 4"),
		ev("b", event.Disconnect, ""), ev("c", event.Disconnect, ""), ev("d", event.Disconnect, ""),
		ev("f", event.Connect, ""), ev("f", event.Disconnect, ""),
	}
	p, err := scanLog(&src)
	if err != nil {
		t.Fatal(err)
	}
	if p.sessions != 6 || p.allLanes != 4 || p.lanes != 4 || p.statements != 7 || p.transactions != 5 {
		t.Errorf("sessions %d lanes %d (%d working) statements %d transactions %d; want 6, 4 (4), 7, 5", p.sessions, p.allLanes, p.lanes, p.statements, p.transactions)
	}
	// e takes a's lane, free when it connects; d finds none free; f
	// takes the lowest lane freed by then, b's. By statements: b+f (3),
	// c (2), a+e (1), d (1).
	if want := map[string]int{"a": 2, "e": 2, "b": 0, "f": 0, "c": 1, "d": 3}; !maps.Equal(p.lane, want) {
		t.Errorf("lanes %v, want %v", p.lane, want)
	}
	// A lane of 1 statement among lanes of 100 does not work.
	work := map[string]*span{"x": {id: "x", stmts: 100}, "y": {id: "y", stmts: 40}, "z": {id: "z", stmts: 1}, "w": {id: "w"}}
	lanes := map[string]int{"w": 0, "z": 1, "y": 2, "x": 3}
	if n := busiestFirst(work, lanes, 4); n != 2 || lanes["x"] != 0 || lanes["y"] != 1 {
		t.Errorf("%d working lanes: %v", n, lanes)
	}
	if got := p.per[fingerprint.Compute("END")[0].Fingerprint]; got.txEnds != 1 || got.stmts != 1 {
		t.Errorf("END: %+v", got)
	}
	if got := p.per[fingerprint.Compute("BEGIN")[0].Fingerprint]; got.txEnds != 0 {
		t.Errorf("BEGIN: %+v", got)
	}
}

// captureLog is the CSV log of pgbench's simple-update (transactions of
// 5 statements) in the extended protocol (sweeptest.PgbenchLog).
func captureLog(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return sweeptest.PgbenchLog(ctx, t, "simple-update", "extended")
}

// The log workload: a captured pgbench log swept over 1, 2 and 4
// clients on a throwaway cluster initialized with pgbench -i, its sessions
// multiplied to reach 4.
func TestSweepLogThrowaway(t *testing.T) {
	if os.Getenv("PGREHEARSE_LONG") == "" {
		// internal/cli's TestSweepLogCommand runs a log's sweep on a
		// throwaway cluster end to end in make test.
		t.Skip("a second case of a log's sweep on a throwaway cluster, which make test-long runs (PGREHEARSE_LONG=1)")
	}
	bin := sweeptest.Pgbench(t)
	path := captureLog(t)
	drv := &Log{Path: path, PgbenchInit: true, PgbenchPath: bin, Scale: 1}
	if err := drv.Prepare(); err != nil {
		t.Fatal(err)
	}
	info := drv.Info()
	t.Logf("log: %+v", info)
	if info.LogConcurrency != 2 || info.LogStatements == 0 || info.LogTransactions == 0 || info.LogTransactions > info.LogStatements/4 {
		t.Fatalf("log read as %+v; want 2 clients and simple-update transactions of 5 statements", info)
	}
	opts := sweeptest.Options(t, 1, 2, 4)
	opts.Driver = drv
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := sweep.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload.Kind != "log" || res.Workload.Log != path || res.Workload.Scale != 1 || res.Target != "throwaway" {
		t.Errorf("workload %+v on %s", res.Workload, res.Target)
	}
	c := res.Configs[0]
	sweeptest.CheckSteps(t, c, []int{1, 2, 4}, true)
	for _, s := range c.Steps {
		sl := s.Sessions
		if sl == nil {
			t.Fatalf("%d clients: no sessions", s.Clients)
		}
		t.Logf("%d clients: %.0f TPS, %.0f statements/s, p95 %.3f ms, failed %d, sessions %+v", s.Clients, s.TPS, s.StatementsPerS, s.Latency.P95, s.Failed, *sl)
		if sl.Planned != s.Clients {
			t.Errorf("%d clients: %d sessions planned (%d lanes x %d)", s.Clients, sl.Planned, sl.LanesUsed, sl.Multiply)
		}
		// Open sessions: never more than planned, and on average more
		// than half of them: at speed 0 a session that has less work
		// than the others ends first, and passes start afresh.
		if sl.MaxOpen < s.Clients || sl.MaxOpen > sl.Planned || sl.MeanOpen < 0.5*float64(s.Clients) {
			t.Errorf("%d clients: open sessions mean %.1f max %d", s.Clients, sl.MeanOpen, sl.MaxOpen)
		}
		// simple-update: 5 statements a transaction (BEGIN .. END).
		if r := s.StatementsPerS / s.TPS; r < 4.5 || r > 5.5 {
			t.Errorf("%d clients: %.2f statements a transaction, want 5", s.Clients, r)
		}
		if s.SamplingRate != 1 {
			t.Errorf("%d clients: sampling rate %v", s.Clients, s.SamplingRate)
		}
		// Seven statements of equal calls: which five are on top varies.
		if !strings.Contains(strings.Join(sweeptest.HotTexts(s), "\n"), "UPDATE pgbench_") {
			t.Errorf("%d clients: the log's update is not among the hot queries %v", s.Clients, sweeptest.HotTexts(s))
		}
	}

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Workload map[string]any
		Configs  []struct{ Steps []map[string]any }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"kind", "log", "log_sessions", "log_concurrency", "log_statements", "log_transactions"} {
		if _, ok := doc.Workload[key]; !ok {
			t.Errorf("workload without %q: %v", key, doc.Workload)
		}
	}
	for _, s := range doc.Configs[0].Steps {
		for _, key := range []string{"clients", "tps", "statements_per_s", "sessions", "latency_ms", "server_cpu_s", "wait_events", "hot_queries"} {
			if _, ok := s[key]; !ok {
				t.Errorf("step without %q: %v", key, s)
			}
		}
	}
	var text strings.Builder
	if err := report.WriteSweep(&text, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if !strings.Contains(text.String(), "log "+filepath.Base(path)) {
		t.Errorf("text does not name the log:\n%s", text.String())
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
