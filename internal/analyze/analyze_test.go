package analyze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// sliceSource is a Source over events in memory, optionally named and
// with line counts, and optionally failing after its events.
type sliceSource struct {
	name   string
	events []*event.Event
	lines  results.LineCounts
	err    error // returned instead of io.EOF
	next   int
}

func (s *sliceSource) Next() (*event.Event, error) {
	if s.next == len(s.events) {
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	}
	s.next++
	return s.events[s.next-1], nil
}

func (s *sliceSource) Name() string { return s.name }
func (s *sliceSource) SourceCounts() results.SourceCounts {
	l := s.lines
	return results.SourceCounts{Lines: &l}
}

const t0 = 1_714_557_600_000_000 // 2024-05-01T10:00:00Z in µs

func stmt(session string, at int64, q string, d int64) *event.Event {
	return &event.Event{Kind: event.Statement, Session: session, Time: t0 + at, Query: q, Duration: d}
}

func TestAnalyzeCounts(t *testing.T) {
	failed := stmt("s1", 40, "INSERT INTO t VALUES (1)", event.NoDuration)
	failed.Failed, failed.SQLState = true, "23505"
	evs := []*event.Event{
		{Kind: event.Connect, Session: "s1", Time: t0},
		stmt("s1", 10, "SELECT * FROM t WHERE id = 1", 100),
		stmt("s1", 20, "select * from t where id = 2", 300),
		{Kind: event.Prepare, Session: "s2", Time: t0 + 25, Query: "SELECT $1::int", Duration: 5},
		{Kind: event.Execute, Session: "s2", Time: t0 + 30, Query: "SELECT $1::int", Duration: 50},
		{Kind: event.Error, Session: "s1", Time: t0 + 40, SQLState: "23505", Query: "INSERT INTO t VALUES (1)"},
		failed,
		{Kind: event.Error, Session: "s2", Time: t0 + 45},
		stmt("s2", 50, "BEGIN; UPDATE t SET x = 1; COMMIT", 10),
		stmt("s2", 55, "  -- only a comment", 1),
		stmt("s3", 60, "SELEC 1", event.NoDuration),
		{Kind: event.Disconnect, Session: "s1", Time: t0 + 1_000_000},
	}
	evs[10].Failed = true
	src := &sliceSource{name: "a.log", events: evs, lines: results.LineCounts{Total: 20, Parsed: 18, Skipped: map[results.LineSkip]int64{"checkpoint": 2}}}
	res, err := Analyze(context.Background(), []event.Source{src}, Options{Jobs: 2, BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial {
		t.Error("complete analysis marked partial")
	}
	// Calls: 2 selects, 1 execute, 1 failed insert, 3 from the
	// transaction string, 1 unparsed; not the connect, disconnect,
	// prepare, errors or the comment.
	want := results.StatementCounts{Total: 8, Executed: 6, Failed: 2, Unparsed: 1, Empty: 1, Skipped: map[results.SkipReason]int64{}}
	if !reflect.DeepEqual(res.Statements, want) {
		t.Errorf("statements = %+v, want %+v", res.Statements, want)
	}
	var calls, errs int64
	for _, q := range res.Queries {
		calls += q.Calls
		errs += q.Errors
	}
	if calls != res.Statements.Total || errs != res.Statements.Failed {
		t.Errorf("queries hold %d calls, %d errors; statements say %d, %d", calls, errs, res.Statements.Total, res.Statements.Failed)
	}
	if res.Sessions.Total != 3 {
		t.Errorf("sessions = %d, want 3", res.Sessions.Total)
	}
	if got := fmt.Sprint(res.ErrorsBySQLState); got != "map[23505:1 unknown:1]" {
		t.Errorf("errors_by_sqlstate = %s", got)
	}
	if res.ErrorsOutsideStatements != 0 {
		t.Errorf("errors outside statements = %d, want 0 (no event is marked so)", res.ErrorsOutsideStatements)
	}
	if res.FirstTime.String() != "2024-05-01T10:00:00.000000Z" || res.LastTime.String() != "2024-05-01T10:00:01.000000Z" {
		t.Errorf("time span %s .. %s", res.FirstTime, res.LastTime)
	}
	if res.Lines.Total != 20 || res.Lines.Skipped["checkpoint"] != 2 || len(res.Files) != 1 || res.Files[0] != "a.log" {
		t.Errorf("lines %+v files %v", res.Lines, res.Files)
	}
	if res.Events[event.Connect] != 1 || res.Events[event.Prepare] != 1 || res.Events[event.Error] != 2 {
		t.Errorf("events = %v", res.Events)
	}

	byQuery := map[string]int{}
	for i, q := range res.Queries {
		byQuery[q.Query] = i
	}
	sel := res.Queries[byQuery["SELECT * FROM t WHERE id = $1"]]
	if sel.Calls != 2 || sel.TotalMS != 0.4 || sel.MeanMS != 0.2 || sel.TimedCalls != 2 {
		t.Errorf("select row: %+v", sel)
	}
	ins := res.Queries[byQuery["INSERT INTO t VALUES ($1)"]]
	if ins.Calls != 1 || ins.Errors != 1 || ins.TimedCalls != 0 || ins.MeanMS != 0 {
		t.Errorf("failed insert row: %+v", ins)
	}
	if !reflect.DeepEqual(ins.ErrorsBySQLState, map[string]int64{"23505": 1}) {
		t.Errorf("failed insert's errors by SQLSTATE: %v", ins.ErrorsBySQLState)
	}
	// 10 µs for three statements: 4, 3, 3; the error of a failed
	// string would go to COMMIT.
	for q, wantUS := range map[string]float64{"BEGIN": 4, "UPDATE t SET x = $1": 3, "COMMIT": 3} {
		if got := res.Queries[byQuery[q]].TotalMS; got != wantUS/1000 {
			t.Errorf("%s: total_ms %v, want %v", q, got, wantUS/1000)
		}
	}
	if res.Queries[0].Query != "SELECT * FROM t WHERE id = $1" {
		t.Errorf("first query by total time: %q", res.Queries[0].Query)
	}
}

// workload makes a synthetic log's events: sessions running a mix of
// queries with varying literals, some failing, some in one string.
func workload(n int, seed uint64) []*event.Event {
	r := rand.New(rand.NewPCG(seed, 1))
	templates := []string{
		"SELECT * FROM orders WHERE id = %d",
		"SELECT name, email FROM customers WHERE id = %d AND active",
		"UPDATE accounts SET balance = balance - %d WHERE id = 7",
		"INSERT INTO events (kind, payload) VALUES ('click', '%d')",
		"BEGIN; UPDATE stock SET n = n - %d WHERE sku = 1; COMMIT",
		"SELEC %d", // a typo that keeps failing
	}
	evs := make([]*event.Event, 0, n)
	at := int64(0)
	for len(evs) < n {
		session := fmt.Sprintf("s%d", r.IntN(50))
		at += r.Int64N(1000)
		switch x := r.IntN(100); {
		case x < 2:
			evs = append(evs, &event.Event{Kind: event.Connect, Session: session, Time: t0 + at, Duration: event.NoDuration})
		case x < 4:
			evs = append(evs, &event.Event{Kind: event.Disconnect, Session: session, Time: t0 + at, Duration: event.NoDuration})
		default:
			tpl := templates[r.IntN(len(templates))]
			ev := stmt(session, at, fmt.Sprintf(tpl, r.IntN(200)), r.Int64N(5000))
			if r.IntN(3) == 0 {
				ev.Kind = event.Execute
				ev.Query = strings.ReplaceAll(tpl, "%d", "$1")
			}
			if strings.HasPrefix(tpl, "SELEC ") || r.IntN(50) == 0 {
				ev.Failed, ev.Duration = true, event.NoDuration
				evs = append(evs, &event.Event{Kind: event.Error, Session: session, Time: t0 + at, SQLState: "42601"})
			}
			if r.IntN(10) == 0 {
				ev.Duration = event.NoDuration
			}
			evs = append(evs, ev)
		}
	}
	return evs
}

func TestJobsGiveIdenticalResults(t *testing.T) {
	evs := workload(20000, 7)
	run := func(jobs, batch int) string {
		// Two sources, to cover file boundaries inside a batch.
		src := []event.Source{
			&sliceSource{name: "1.log", events: evs[:12345], lines: results.LineCounts{Total: 1, Parsed: 1}},
			&sliceSource{name: "2.log", events: evs[12345:], lines: results.LineCounts{Total: 2, Parsed: 1, Skipped: map[results.LineSkip]int64{"x": 1}}},
		}
		res, err := Analyze(context.Background(), src, Options{Jobs: jobs, BatchSize: batch})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := run(1, 0)
	for _, c := range []struct{ jobs, batch int }{{4, 0}, {2, 7}, {3, 1}} {
		if got := run(c.jobs, c.batch); got != want {
			t.Errorf("-j %d (batch %d) differs from -j 1", c.jobs, c.batch)
		}
	}
	var res map[string]any
	json.Unmarshal([]byte(want), &res)
	for _, key := range []string{"version", "kind", "lines", "statements", "sessions", "errors_by_sqlstate", "files", "first_time", "last_time", "queries"} {
		if _, ok := res[key]; !ok {
			t.Errorf("JSON lacks %q", key)
		}
	}
	q := res["queries"].([]any)[0].(map[string]any)
	for _, key := range []string{"fingerprint", "query", "calls", "errors", "timed_calls", "total_ms", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "hist"} {
		if _, ok := q[key]; !ok {
			t.Errorf("query JSON lacks %q", key)
		}
	}
}

func TestReadErrorGivesPartial(t *testing.T) {
	boom := errors.New("boom")
	src := []event.Source{
		&sliceSource{name: "ok.log", events: workload(100, 1)},
		&sliceSource{name: "bad.log", events: workload(10, 2), err: boom},
		&sliceSource{name: "never.log", events: workload(10, 3)},
	}
	res, err := Analyze(context.Background(), src, Options{Jobs: 2})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "bad.log") {
		t.Fatalf("err = %v, want boom naming bad.log", err)
	}
	if res == nil || !res.Partial || len(res.Files) != 2 {
		t.Fatalf("result %+v, want a partial one over two files", res)
	}
}

// cancelSource cancels the analysis after a number of events, as Ctrl-C
// would, and keeps yielding events.
type cancelSource struct {
	after  int
	cancel func()
	n      int
}

func (s *cancelSource) Next() (*event.Event, error) {
	s.n++
	if s.n == s.after {
		s.cancel()
	}
	return stmt("s", int64(s.n), "SELECT 1", 1), nil
}

func TestCancelGivesPartial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &cancelSource{after: 2500, cancel: cancel}
	res, err := Analyze(ctx, []event.Source{src}, Options{Jobs: 2, BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial {
		t.Error("interrupted analysis not marked partial")
	}
	// Reading stops at the end of the batch in which the cancel came;
	// every event read is counted.
	if res.Statements.Total != 3000 || int64(src.n) != 3000 {
		t.Errorf("counted %d statements of %d read, want 3000", res.Statements.Total, src.n)
	}
}

// BenchmarkAnalyze measures the workers on events in memory. "cold"
// starts each run with an empty fingerprint cache, so the ~1,200 distinct
// texts are parsed (~15 µs each); "warm" reuses the cache, as a long log
// does once its texts have been seen.
func BenchmarkAnalyze(b *testing.B) {
	evs := workload(200_000, 3)
	for _, cache := range []string{"cold", "warm"} {
		for _, jobs := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/j%d", cache, jobs), func(b *testing.B) {
				benchAnalyze(b, evs, jobs, cache == "warm")
			})
		}
	}
}

func benchAnalyze(b *testing.B, evs []*event.Event, jobs int, warm bool) {
	opts := Options{Jobs: jobs}
	if warm {
		opts.Cache = fingerprint.NewCache(0)
		Analyze(context.Background(), []event.Source{&sliceSource{events: evs}}, opts)
	}
	b.ReportAllocs()
	for b.Loop() {
		src := &sliceSource{events: evs}
		if _, err := Analyze(context.Background(), []event.Source{src}, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestOwnSessionsLeftOut: statements of pgrehearse's own connections
// (application_name pgrehearse-*) are not the workload: they are counted
// under Filtered with the window's, and apart, their session too. The
// selection is package source's; the analysis counts what it left out.
func TestOwnSessionsLeftOut(t *testing.T) {
	own := func(at int64, q string) *event.Event {
		ev := stmt("p1", at, q, 10)
		ev.Application = event.OwnApplicationPrefix + "preflight"
		return ev
	}
	app := func(at int64, q, name string) *event.Event {
		ev := stmt("a1", at, q, 10)
		ev.Application = name
		return ev
	}
	evs := []*event.Event{
		{Kind: event.Connect, Session: "p1", Time: t0, Application: event.OwnApplicationPrefix + "preflight"},
		own(1, "SELECT 1"),
		own(2, "SELECT relname FROM pg_class"),
		app(3, "SELECT 1", "web"),
		app(4, "SELECT 2", "pgrehearse"), // not the prefix: the workload's
		app(5, "SELECT 3", event.OwnApplicationPrefix),
		app(2_000_000, "SELECT 4", "web"), // after the window
	}
	sel := source.Selection{End: t0 + 1_000_000}
	src := source.Select(&sliceSource{events: evs}, &sel, source.NewState(), &source.Counts{})
	res, err := Analyze(context.Background(), []event.Source{src}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (results.Filtered{Events: 4, Statements: 3, Sessions: 1, OwnStatements: 2}); res.Filtered != want {
		t.Errorf("filtered = %+v, want %+v", res.Filtered, want)
	}
	if res.Statements.Total != 3 || res.Sessions.Total != 1 {
		t.Errorf("statements %+v, sessions %+v: want the workload's 3 in 1 session", res.Statements, res.Sessions)
	}
	for _, q := range res.Queries {
		if strings.Contains(q.Query, "pg_class") {
			t.Errorf("own query %q analyzed", q.Query)
		}
	}
}

// poisonSource is a sliceSource that takes events back (Recycler) and
// spoils them, as a reader filling them again would.
type poisonSource struct {
	sliceSource
	recycled int
}

func (s *poisonSource) Recycle(evs ...*event.Event) {
	for _, ev := range evs {
		*ev = event.Event{Kind: event.Statement, Session: "poison", Query: "SELECT 'poison'", Time: t0, Duration: 1e9}
		s.recycled++
	}
}

// TestRecycledAfterAnalyzed: a source that recycles gets back only events
// already analyzed: spoiling them then changes nothing in the result.
func TestRecycledAfterAnalyzed(t *testing.T) {
	build := func() []*event.Event {
		var evs []*event.Event
		for i := range 5000 {
			evs = append(evs, stmt(fmt.Sprintf("s%d", i%7), int64(i)*1000, fmt.Sprintf("SELECT %d FROM t%d", i, i%13), int64(i%100)))
		}
		return evs
	}
	want, err := Analyze(context.Background(), []event.Source{&sliceSource{events: build()}}, Options{Jobs: 2, BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	src := &poisonSource{sliceSource: sliceSource{events: build()}}
	got, err := Analyze(context.Background(), []event.Source{src}, Options{Jobs: 2, BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if src.recycled == 0 {
		t.Fatal("no event was recycled")
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("recycling (%d events) changed the result", src.recycled)
	}
}

// TestAnalyzeErrorsOutsideStatements: an Error event no statement reports
// (a Parse never executed, a FATAL) counts in errors by SQLSTATE and
// apart, so that errors add up to failed statements plus those outside;
// a log's Error that pairs with its failed statement does not.
func TestAnalyzeErrorsOutsideStatements(t *testing.T) {
	failed := stmt("s1", 10, "INSERT INTO t VALUES (1)", event.NoDuration)
	failed.Failed, failed.SQLState = true, "23505"
	paired := &event.Event{Kind: event.Error, Session: "s1", Time: t0 + 10, SQLState: "23505", Query: failed.Query}
	paired.SetError("ERROR", "duplicate key value violates unique constraint")
	parse := &event.Event{Kind: event.Error, Session: "s1", Time: t0 + 20, SQLState: "42601"}
	parse.SetError("ERROR", "syntax error at end of input")
	parse.SetOutsideStatement()
	fatal := &event.Event{Kind: event.Error, Session: "s2", Time: t0 + 30, SQLState: "57P01"}
	fatal.SetError("FATAL", "terminating connection due to administrator command")
	fatal.SetOutsideStatement()
	evs := []*event.Event{paired, failed, parse, fatal}
	for _, jobs := range []int{1, 2} {
		src := &sliceSource{name: "a.log", events: evs, lines: results.LineCounts{Total: 4, Parsed: 4}}
		res, err := Analyze(context.Background(), []event.Source{src}, Options{Jobs: jobs, BatchSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		var errs int64
		for _, n := range res.ErrorsBySQLState {
			errs += n
		}
		if res.Statements.Failed != 1 || res.ErrorsOutsideStatements != 2 || errs != res.Statements.Failed+res.ErrorsOutsideStatements {
			t.Errorf("jobs %d: %d errors by SQLSTATE (%v), %d failed, %d outside; want 3 = 1 + 2", jobs, errs, res.ErrorsBySQLState, res.Statements.Failed, res.ErrorsOutsideStatements)
		}
	}
}
