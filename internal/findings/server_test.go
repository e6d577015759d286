package findings

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/analyze"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// rig is a throwaway cluster logging like workload.LogSettings, whose log
// is cut into the segments that each workload wrote.
type rig struct {
	t      *testing.T
	ctx    context.Context
	c      *pgcluster.Cluster
	marker atomic.Int64
}

func startRig(t *testing.T, extra map[string]string) *rig {
	t.Helper()
	settings := workload.LogSettings()
	maps.Copy(settings, extra)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: settings})
	return &rig{t: t, ctx: context.Background(), c: c}
}

func (r *rig) exec(db, sql string) {
	r.t.Helper()
	if err := r.c.Exec(r.ctx, db, sql); err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
}

func (r *rig) createDB(names ...string) {
	for _, n := range names {
		r.exec("postgres", "CREATE DATABASE "+n)
	}
}

func (r *rig) connect(db string) *pgx.Conn {
	r.t.Helper()
	conn, err := pgx.Connect(r.ctx, r.c.DSN(db))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// waitSetting waits until a new session of db sees a setting at value,
// as one does once the postmaster has reloaded its configuration.
func (r *rig) waitSetting(db, name, value string) {
	r.t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		conn, err := pgx.Connect(r.ctx, r.c.DSN(db))
		if err != nil {
			r.t.Fatal(err)
		}
		err = conn.QueryRow(r.ctx, "SELECT current_setting($1)", name).Scan(&got)
		conn.Close(r.ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		if got == value {
			return
		}
	}
	r.t.Fatalf("%s is still %q after 30 s, want %q", name, got, value)
}

func (r *rig) csvLog() string {
	r.t.Helper()
	files, err := r.c.LogFiles("*.csv")
	if err != nil || len(files) != 1 {
		r.t.Fatalf("csv log files %v: %v", files, err)
	}
	return files[0]
}

// capture runs f and returns the part of the csv log it wrote, complete:
// it ends with a marker statement sent after f, waited for in the file.
func (r *rig) capture(f func()) []byte {
	r.t.Helper()
	path := r.csvLog()
	fi, err := os.Stat(path)
	if err != nil {
		r.t.Fatal(err)
	}
	start := fi.Size()
	f()
	marker := fmt.Sprintf("pgrehearse-end-of-segment-%d", r.marker.Add(1))
	r.exec("postgres", "SELECT '"+marker+"'")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			r.t.Fatal(err)
		}
		seg := b[start:]
		if i := bytes.Index(seg, []byte(marker)); i >= 0 {
			if j := bytes.IndexByte(seg[i:], '\n'); j >= 0 {
				return seg[:i+j+1]
			}
		}
	}
	r.t.Fatalf("marker %s never reached the log", marker)
	return nil
}

// analyzeSegment analyzes a log segment with the real reader, keeping the
// events of database db only ("" for all), and observes them.
func analyzeSegment(t *testing.T, seg []byte, db string) (*Workload, *Observed) {
	t.Helper()
	rd, err := logread.NewReader(bytes.NewReader(seg), "segment.csv", logread.Options{Format: logread.Format("csvlog")})
	if err != nil {
		t.Fatal(err)
	}
	obs := NewEventSampler(nil)
	res, err := analyze.Analyze(context.Background(), []event.Source{&segSource{r: rd, db: db, obs: obs}}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res.Source = "segment " + db
	return FromResult(res), obs.Result()
}

type segSource struct {
	r   *logread.Reader
	db  string
	obs *EventSampler
}

func (s *segSource) Next() (*event.Event, error) {
	for {
		ev, err := s.r.Next()
		if err != nil {
			return nil, err
		}
		if s.db != "" && ev.Database != s.db {
			continue
		}
		s.obs.Add(ev)
		return ev, nil
	}
}

func (s *segSource) SourceCounts() results.SourceCounts {
	c := s.r.Counters()
	l := results.LineCounts{Total: c.Total, Parsed: c.Parsed, Skipped: map[results.LineSkip]int64{}}
	for k, v := range c.Skipped {
		l.Skipped[results.LineSkip(k)] = v
	}
	return results.SourceCounts{Lines: &l}
}

// evaluate evaluates the findings of a workload on database db, with the
// catalog and EXPLAIN of that database.
func (r *rig) evaluate(db string, in Input, opts Options) *Report {
	r.t.Helper()
	return r.evaluateOn(r.connect(db), db, in, opts)
}

// evaluateOn is evaluate on a given connection to db.
func (r *rig) evaluateOn(conn *pgx.Conn, db string, in Input, opts Options) *Report {
	r.t.Helper()
	cat, err := catalog.Load(r.ctx, conn, catalog.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	in.Catalog = cat
	in.Explainer = &catalog.Explainer{Conn: conn}
	rep := evaluate(r.t, r.ctx, in, opts)
	b, _ := json.MarshalIndent(rep, "", "  ")
	r.t.Logf("findings on %s:\n%s", db, b)
	return rep
}

// evaluate is Evaluate for a test that does not interrupt it.
func evaluate(t *testing.T, ctx context.Context, in Input, opts Options) *Report {
	t.Helper()
	rep, err := Evaluate(ctx, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func only(rep *Report, id string) []Finding {
	var out []Finding
	for _, f := range rep.Findings {
		if f.ID == id {
			out = append(out, f)
		}
	}
	return out
}

func figure(t *testing.T, f Finding, name string) float64 {
	t.Helper()
	x, ok := f.Figure(name)
	if !ok {
		t.Fatalf("%s %s: no figure %s", f.ID, f.Subject, name)
	}
	return x.Value
}

// parallel runs f in n goroutines, each with its own connection to db.
func (r *rig) parallel(db string, n int, f func(i int, conn *pgx.Conn) error) {
	r.t.Helper()
	errs := make(chan error, n)
	for i := range n {
		conn := r.connect(db)
		go func() { errs <- f(i, conn) }()
	}
	var all []error
	for range n {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		r.t.Fatal(err)
	}
}

func TestBatchInserts(t *testing.T) {
	r := startRig(t, nil)
	r.createDB("trig", "ctl")
	for _, db := range []string{"trig", "ctl"} {
		ddl := "CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind int, body text);" +
			"CREATE INDEX events_body ON events (lower(body));"
		for k := range 12 {
			ddl += fmt.Sprintf("CREATE INDEX events_kind_%d ON events (id) WHERE kind = %d;", k, k)
		}
		r.exec(db, ddl)
	}
	const rows = 1200
	trig := r.capture(func() {
		r.parallel("trig", 2, func(i int, conn *pgx.Conn) error {
			for j := range rows / 2 {
				if _, err := conn.Exec(r.ctx, "INSERT INTO events (kind, body) VALUES ($1, $2)", j%12, fmt.Sprintf("event %d/%d", i, j)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	ctl := r.capture(func() {
		r.parallel("ctl", 2, func(i int, conn *pgx.Conn) error {
			for j := 0; j < rows/2; j += 100 {
				var b strings.Builder
				b.WriteString("INSERT INTO events (kind, body) VALUES ")
				for k := range 100 {
					if k > 0 {
						b.WriteString(", ")
					}
					fmt.Fprintf(&b, "(%d, 'event %d/%d')", (j+k)%12, i, j+k)
				}
				if _, err := conn.Exec(r.ctx, b.String()); err != nil {
					return err
				}
			}
			return nil
		})
	})

	w, obs := analyzeSegment(t, trig, "trig")
	fs := only(r.evaluate("trig", Input{Workload: w, Observed: obs}, Options{}), IDBatchInserts)
	if len(fs) != 1 || fs[0].Subject != "events" {
		t.Fatalf("batch-inserts on single-row inserts: %+v", fs)
	}
	f := fs[0]
	if n := figure(t, f, "single_row_inserts"); n != rows {
		t.Errorf("single_row_inserts = %v, want %d", n, rows)
	}
	if n := figure(t, f, "sessions"); n != 2 {
		t.Errorf("sessions = %v, want 2", n)
	}
	if p, e := figure(t, f, "partial_indexes"), figure(t, f, "expression_indexes"); p != 12 || e != 1 {
		t.Errorf("partial/expression indexes = %v/%v, want 12/1", p, e)
	}
	if f.Severity != Critical {
		t.Errorf("severity %s, want critical with 13 partial and expression indexes", f.Severity)
	}
	t.Logf("observed: %s single-row inserts/s from %v sessions, %.1f%% of the time",
		fnum(figure(t, f, "inserts_per_s")), figure(t, f, "sessions"), figure(t, f, "share_of_total_time_pct"))
	// One line says how to measure what batching saves: its fix's, no
	// note besides (issue 48).
	if f.Fix == nil || !strings.Contains(f.Fix.Untried, "measure what it saves on this traffic with pgrehearse rehearse --batch-inserts 50") {
		t.Errorf("fix %+v, want how to measure what batching saves", f.Fix)
	}
	for _, n := range f.Evidence.Notes {
		if strings.Contains(n, "batch") {
			t.Errorf("a note besides the fix's line: %q", n)
		}
	}
	// What rounds with and without batching measured, said in the
	// summary with its interval.
	m := &BatchMeasure{Max: 50, Rounds: 3, Tables: []string{"events"},
		Time: Factor{Ratio: 9, Low: 8.1, High: 10.2, Level: 0.9}, WAL: &Factor{Ratio: 1.25, Low: 1.2, High: 1.3}}
	fs = only(r.evaluate("trig", Input{Workload: w, Observed: obs, Batched: m}, Options{}), IDBatchInserts)
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "batches of 50 cut the target's time per row into events by 9x (8.1–10.2) and the WAL per row by 1.2x (1.2–1.3)") {
		t.Errorf("batch-inserts with a measure: %+v", fs)
	} else if figure(t, fs[0], "batch_time_per_row_factor_low") != 8.1 {
		t.Errorf("figures %+v", fs[0].Evidence.Figures)
	} else if fs[0].Fix == nil || fs[0].Fix.Untried != untriedBatchMeasured {
		t.Errorf("the measured finding's fix line %+v, want it to say where it was measured, not how to", fs[0].Fix)
	}

	w, obs = analyzeSegment(t, ctl, "ctl")
	if fs := only(r.evaluate("ctl", Input{Workload: w, Observed: obs}, Options{}), IDBatchInserts); len(fs) != 0 {
		t.Errorf("batch-inserts on multi-row inserts: %+v", fs)
	}
}

func TestMissingIndex(t *testing.T) {
	r := startRig(t, nil)
	r.createDB("trig", "ctl")
	for _, db := range []string{"trig", "ctl"} {
		r.exec(db, queueItems)
	}
	r.exec("ctl", "CREATE INDEX ON queue_items (referenced_at, queued_at); ANALYZE queue_items")
	const poll = "SELECT id FROM queue_items WHERE referenced_at = $1 AND queued_at IS NULL ORDER BY download_after LIMIT 100"
	run := func(db string) []byte {
		return r.capture(func() {
			conn := r.connect(db)
			for i := range 30 {
				if _, err := conn.Exec(r.ctx, poll, i*10); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	trig, ctl := run("trig"), run("ctl")

	w, obs := analyzeSegment(t, trig, "trig")
	rep := r.evaluate("trig", Input{Workload: w, Observed: obs}, Options{})
	fs := only(rep, IDMissingIndex)
	if len(fs) != 1 {
		t.Fatalf("missing-index without the index: %+v\nnot evaluated: %+v", fs, rep.NotEvaluated)
	}
	f := fs[0]
	if !strings.Contains(f.Recommendation, "(referenced_at, queued_at)") {
		t.Errorf("recommendation does not name the filter columns: %s", f.Recommendation)
	}
	// The suggested index is a fix that rehearse's fix rounds try on a
	// copy, where nothing else runs: built at once.
	if f.Fix == nil || !strings.HasPrefix(f.Fix.SQL, "CREATE INDEX ON ") || !strings.HasSuffix(f.Fix.SQL, "(referenced_at, queued_at)") ||
		f.Fix.Relation == "" || f.Fix.Untried != "" {
		t.Errorf("the finding's fix: %+v", f.Fix)
	}
	if rows := f.Evidence.Tables[0].Rows[0]; !strings.Contains(rows[4], "logged parameter values") {
		t.Errorf("plan not made with the logged parameters: %v", rows)
	}
	// hypopg is packaged on the machine (make extensions) but not
	// created in this database: the finding says how to, and does not
	// verify.
	if notes := strings.Join(f.Evidence.Notes, " "); !strings.Contains(notes, "CREATE EXTENSION hypopg; in database trig") {
		t.Errorf("hypopg not created in the database, not stated with the command to run: %v", f.Evidence.Notes)
	}
	if _, ok := f.Figure("hypopg_cost_after"); ok {
		t.Errorf("verified without hypopg in the database: %+v", f.Evidence)
	}
	t.Logf("observed: %s on a table of %s rows; plan: %v", f.Subject, fnum(figure(t, f, "table_rows")), f.Evidence.Tables[0].Rows[0])

	w, obs = analyzeSegment(t, ctl, "ctl")
	if fs := only(r.evaluate("ctl", Input{Workload: w, Observed: obs}, Options{}), IDMissingIndex); len(fs) != 0 {
		t.Errorf("missing-index with the index: %+v", fs)
	}
}

// The normalized text of "BETWEEN 5 AND 5 + 100" (the demo's pgbench
// script) is "BETWEEN $1 AND $2 + $3", whose $2 + $3 the server cannot
// type: its generic plan cannot be prepared. The logged statement plans;
// without it (a replay's results keep no statement) the check says why
// in words, not only with the server's "operator is not unique: unknown
// + unknown".
func TestMissingIndexUntypedParameters(t *testing.T) {
	r := startRig(t, nil)
	r.createDB("untyped")
	r.exec("untyped", "CREATE TABLE orders (id int PRIMARY KEY, customer_id int); INSERT INTO orders SELECT g, g % 1000 FROM generate_series(1, 50000) g; ANALYZE orders")
	seg := r.capture(func() {
		conn := r.connect("untyped")
		for i := range 5 {
			if _, err := conn.Exec(r.ctx, fmt.Sprintf("SELECT count(*) FROM orders WHERE customer_id BETWEEN %d AND %d + 100", i, i), pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatal(err)
			}
		}
	})
	w, obs := analyzeSegment(t, seg, "untyped")
	skipped := func(in Input) string {
		for _, s := range r.evaluate("untyped", in, Options{}).NotEvaluated {
			if s.ID == IDMissingIndex {
				return s.Reason
			}
		}
		return ""
	}
	if why := skipped(Input{Workload: w, Observed: obs}); why != "" {
		t.Errorf("the logged statement not explained: %s", why)
	}
	why := skipped(Input{Workload: w})
	const want = "not explained: no sample: the server cannot infer the types of its parameters from the normalized query alone (as in $2 + $3, where the log had two constants), so its generic plan cannot be prepared"
	if !strings.Contains(why, want) || !strings.Contains(why, "SQLSTATE 42725") {
		t.Errorf("missing-index not evaluated because %q; want %q and the server's error", why, want)
	}
	t.Logf("not evaluated: %s", why)

	// A replay's result keeps no statement, but with --keep-samples it
	// keeps the slowest execution, which plans as the log's does.
	// The segment may also hold the set-up's statements, logged late.
	fp := fingerprintOf(t, w, "BETWEEN")
	res := &results.Result{Samples: []results.QuerySamples{{Fingerprint: fp, Samples: []results.Sample{
		{Role: results.SampleMedian, Query: "SELECT count(*) FROM orders WHERE customer_id BETWEEN 2 AND 2 + 100", DurationMS: 1},
		{Role: results.SampleSlowest, Query: "SELECT count(*) FROM orders WHERE customer_id BETWEEN 3 AND 3 + 100", DurationMS: 2},
	}}}}
	if why := skipped(Input{Workload: w, Observed: ObservedFromResult(res)}); why != "" {
		t.Errorf("not explained with the result's sample: %s", why)
	}
	if ObservedFromResult(&results.Result{}) != nil {
		t.Errorf("observed from a result without samples")
	}
}

// TestMissingIndexExplainsRealStatements (issue 45): a statement whose
// normalized text the server refuses ("interval $2": a constant where a
// parameter cannot stand) is explained as it ran: with its logged
// execution, or, when the input kept none (a replay's result without
// samples), with an execution read from its logs (Input.Examples), whose
// values the finding then does not show; with neither, it is "not
// explained: no sample", once, never the server's syntax error alone.
func TestMissingIndexExplainsRealStatements(t *testing.T) {
	r := startRig(t, nil)
	r.createDB("ivl")
	r.exec("ivl", `CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind int NOT NULL, due timestamptz NOT NULL);
		INSERT INTO events (kind, due) SELECT g % 1000, now() - g * interval '1 second' FROM generate_series(1, 200000) g;
		ANALYZE events`)
	seg := r.capture(func() {
		conn := r.connect("ivl")
		for i := range 5 {
			q := fmt.Sprintf("SELECT count(*) FROM events WHERE kind = %d AND due < now() + random() * interval '%d minutes'", i, i+1)
			if _, err := conn.Exec(r.ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatal(err)
			}
		}
	})
	w, obs := analyzeSegment(t, seg, "ivl")
	fp := fingerprintOf(t, w, "interval $")
	// skips are missing-index's reasons not to evaluate fp.
	skips := func(rep *Report) []string {
		var out []string
		for _, s := range rep.NotEvaluated {
			if s.ID == IDMissingIndex && strings.Contains(s.Reason, fp) {
				out = append(out, s.Reason)
			}
		}
		return out
	}
	found := func(rep *Report) *Finding {
		for _, f := range only(rep, IDMissingIndex) {
			if strings.HasPrefix(f.Subject, "public.events") {
				return &f
			}
		}
		return nil
	}

	// The logged execution.
	rep := r.evaluate("ivl", Input{Workload: w, Observed: obs}, Options{})
	if f := found(rep); f == nil || len(skips(rep)) != 0 {
		t.Errorf("with the logged execution: finding %+v, not evaluated %v", f, skips(rep))
	} else if how := f.Evidence.Tables[0].Rows[0][4]; how != "EXPLAIN of the logged statement" {
		t.Errorf("planned by %q, want the logged statement", how)
	}

	// Nothing kept, nothing read: no sample, once.
	rep = r.evaluate("ivl", Input{Workload: w}, Options{})
	if sk := skips(rep); len(sk) != 1 || !strings.Contains(sk[0], "query "+fp+" not explained: no sample: its normalized text does not prepare") {
		t.Errorf("without a sample: not evaluated %q, want once \"not explained: no sample\"", sk)
	}
	if f := found(rep); f != nil {
		t.Errorf("a finding without a plan: %+v", f)
	}

	// An execution read from the logs: planned, its values not shown.
	asked := 0
	examples := func(f string) *results.Sample {
		asked++
		if f != fp {
			return nil
		}
		return &results.Sample{Role: results.SampleExample, Database: "ivl",
			Query: "SELECT count(*) FROM events WHERE kind = 8 AND due < now() + random() * interval '7 minutes'"}
	}
	rep = r.evaluate("ivl", Input{Workload: w, Examples: examples}, Options{})
	f := found(rep)
	if f == nil || len(skips(rep)) != 0 || asked == 0 {
		t.Fatalf("with an example: finding %+v, not evaluated %v, examples asked %d times", f, skips(rep), asked)
	}
	row := strings.Join(f.Evidence.Tables[0].Rows[0], " | ")
	if strings.Contains(row, "00:07:00") || strings.Contains(row, "= 8") || !strings.Contains(row, "kind") {
		t.Errorf("the example's plan shows its values (or no filter): %s", row)
	}
	t.Logf("with an example: %s", row)
}

func TestPlanningHeavy(t *testing.T) {
	r := startRig(t, map[string]string{"pg_stat_statements.track_planning": "on"})
	r.createDB("trig", "ctl")
	const tables = 12
	for _, db := range []string{"trig", "ctl"} {
		ddl := "CREATE EXTENSION pg_stat_statements;"
		for i := 1; i <= tables; i++ {
			ddl += fmt.Sprintf("CREATE TABLE t%d (id int PRIMARY KEY, ref int);", i)
		}
		r.exec(db, ddl)
	}
	join := "SELECT count(*) FROM t1"
	for i := 2; i <= tables; i++ {
		join += fmt.Sprintf(" JOIN t%d ON t%d.id = t%d.ref", i, i, i-1)
	}
	join += " WHERE t1.id = %d"
	// The control calls its lookup more often: its first, cold plan
	// reads the catalogs of a database with 12 fresh tables, which on a
	// loaded machine took a millisecond and, over 20 calls, put the mean
	// over the threshold; that is the cold cache, not a heavy plan.
	run := func(db, query string, calls int) []byte {
		return r.capture(func() {
			// One session, so that caches are warm after the first
			// call; the simple protocol, so that every call is planned.
			conn := r.connect(db)
			// The planner searches every join order of up to 12 tables,
			// as a reporting query tuned for plan quality would.
			if _, err := conn.Exec(r.ctx, "SET join_collapse_limit = 12"); err != nil {
				t.Fatal(err)
			}
			for i := range calls {
				if _, err := conn.Exec(r.ctx, fmt.Sprintf(query, i), pgx.QueryExecModeSimpleProtocol); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	trig := run("trig", join, 20)
	ctl := run("ctl", "SELECT id FROM t1 WHERE id = %d", 400)

	w, _ := analyzeSegment(t, trig, "trig")
	fs := only(r.evaluate("trig", Input{Workload: w}, Options{}), IDPlanningHeavy)
	if len(fs) != 1 || !strings.Contains(fs[0].Evidence.Queries[0].Query, "JOIN t12") {
		t.Fatalf("planning-heavy on a %d-table join: %+v", tables, fs)
	}
	t.Logf("observed: planning %.0f%% of the join's time, %.3f ms per plan", figure(t, fs[0], "plan_share_pct"), figure(t, fs[0], "mean_plan_ms"))

	w, _ = analyzeSegment(t, ctl, "ctl")
	if fs := only(r.evaluate("ctl", Input{Workload: w}, Options{}), IDPlanningHeavy); len(fs) != 0 {
		t.Errorf("planning-heavy on a primary key lookup: %+v", fs)
	}

	// With track_planning off, planning time is invisible: say so.
	r.exec("postgres", "ALTER SYSTEM SET pg_stat_statements.track_planning = off")
	r.exec("postgres", "SELECT pg_reload_conf()")
	r.waitSetting("trig", "pg_stat_statements.track_planning", "off")
	fs = only(r.evaluate("trig", Input{Workload: w}, Options{}), IDPlanningHeavy)
	if len(fs) != 1 || fs[0].Subject != "pg_stat_statements.track_planning" || fs[0].Severity != Warning {
		t.Errorf("track_planning off: %+v", fs)
	}
	// Turning it on changes what is measured: no fix round can verify it.
	if len(fs) == 1 && (fs[0].Fix == nil || fs[0].Fix.SQL != "" || !strings.Contains(fs[0].Fix.Untried, "changes what is measured")) {
		t.Errorf("track_planning off: its fix %+v, want one that says it cannot be tried", fs[0].Fix)
	}
}

func TestHotQueryID(t *testing.T) {
	r := startRig(t, nil)
	if _, err := r.c.Pgbench(r.ctx, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatal(err)
	}
	// A fixed rate, so that the control cannot reach the normal model's
	// limit however fast the machine.
	seg := r.capture(func() {
		if _, err := r.c.Pgbench(r.ctx, "-n", "-S", "-c", "2", "-j", "2", "-R", "400", "-T", "3", "postgres"); err != nil {
			t.Fatal(err)
		}
	})
	w, _ := analyzeSegment(t, seg, "postgres")
	in := Input{Workload: w, ServerCPUs: 2, CPUSource: "test"}

	low := r.evaluate("postgres", in, Options{HotCallsPerCore: 50})
	fs := only(low, IDHotQueryID)
	if len(fs) != 1 || fs[0].Severity != Critical || !strings.Contains(fs[0].Evidence.Queries[0].Query, "pgbench_accounts") {
		t.Fatalf("hot-queryid with K = 50: %+v", fs)
	}
	f := fs[0]
	if k := figure(t, f, "k_calls_per_core"); k != 50 {
		t.Errorf("model K = %v, want the injected 50", k)
	}
	if lim := figure(t, f, "limit_calls_per_s"); lim != 100 {
		t.Errorf("limit = %v, want 50 x 2 cores = 100", lim)
	}
	t.Logf("observed: %.0f calls/s at peak, %.0f on average, %.1fx the limit", figure(t, f, "peak_calls_per_s"), figure(t, f, "avg_calls_per_s"), figure(t, f, "ratio_to_limit"))

	if fs := only(r.evaluate("postgres", in, Options{}), IDHotQueryID); len(fs) != 0 {
		t.Errorf("hot-queryid with the normal K at 400 calls/s: %+v", fs)
	}
}

// uuid returns a random UUID: version 4, or version 7 (the time in ms in
// the first 48 bits, so consecutive ones ascend).
func uuid(version int, ms int64) string {
	var b [16]byte
	rand.Read(b[:])
	if version == 7 {
		var t [8]byte
		binary.BigEndian.PutUint64(t[:], uint64(ms))
		copy(b[:6], t[2:])
	}
	b[6] = b[6]&0x0f | byte(version)<<4
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func TestRandomKeys(t *testing.T) {
	r := startRig(t, nil)
	r.createDB("v4", "v7", "identity", "hashes")
	r.exec("v4", "CREATE TABLE items (id uuid PRIMARY KEY, body text)")
	r.exec("v7", "CREATE TABLE items (id uuid PRIMARY KEY, body text)")
	r.exec("identity", "CREATE TABLE items (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text)")
	r.exec("hashes", "CREATE TABLE items (id bytea PRIMARY KEY, body text)")
	const rows = 1500
	start := time.Now().UnixMilli()
	insert := func(db string) []byte {
		return r.capture(func() {
			conn := r.connect(db)
			for i := range rows {
				var err error
				body := fmt.Sprintf("item %d", i)
				switch db {
				case "v4":
					_, err = conn.Exec(r.ctx, "INSERT INTO items (id, body) VALUES ($1, $2)", uuid(4, 0), body)
				case "v7":
					_, err = conn.Exec(r.ctx, "INSERT INTO items (id, body) VALUES ($1, $2)", uuid(7, start+int64(i)), body)
				case "hashes":
					var h [32]byte
					rand.Read(h[:])
					_, err = conn.Exec(r.ctx, "INSERT INTO items (id, body) VALUES ($1, $2)", h[:], body)
				default:
					_, err = conn.Exec(r.ctx, "INSERT INTO items (body) VALUES ($1)", body)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			r.exec(db, "ANALYZE items")
		})
	}
	opts := Options{KeyMinRows: 1000} // "large" made small for a test
	for _, c := range []struct {
		db   string
		want Severity // "" for no finding
		what string
	}{
		{"v4", Critical, "UUIDv4"},
		{"hashes", Critical, "hash-like"},
		{"v7", "", ""},
		{"identity", "", ""},
	} {
		t.Run(c.db, func(t *testing.T) {
			seg := insert(c.db)
			w, obs := analyzeSegment(t, seg, c.db)
			fs := only(r.evaluate(c.db, Input{Workload: w, Observed: obs}, opts), IDRandomKeys)
			if c.want == "" {
				if len(fs) != 0 {
					t.Errorf("random-keys on %s keys: %+v", c.db, fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Severity != c.want || !strings.Contains(fs[0].Summary, c.what) {
				t.Fatalf("random-keys on %s keys: %+v", c.db, fs)
			}
			if fx := fs[0].Fix; fx == nil || fx.SQL != "" || !strings.Contains(fx.Untried, "the application's keys") {
				t.Errorf("random-keys' fix %+v, want one that says it cannot be tried on a copy", fx)
			}
			if n := figure(t, fs[0], "values_sampled"); n < 500 {
				t.Errorf("only %v logged values judged", n)
			}
			t.Logf("observed: %s; %v", fs[0].Summary, fs[0].Evidence.Notes)
		})
	}
}

func TestQueueWithoutSkipLocked(t *testing.T) {
	r := startRig(t, map[string]string{"log_lock_waits": "on", "deadlock_timeout": "10ms"})
	r.createDB("trig", "ctl")
	for _, db := range []string{"trig", "ctl"} {
		r.exec(db, `CREATE TABLE jobs (id int PRIMARY KEY, done boolean NOT NULL DEFAULT false);
			INSERT INTO jobs (id) SELECT generate_series(1, 5000)`)
	}
	poll := func(db, lock string) []byte {
		return r.capture(func() {
			stop := time.Now().Add(2 * time.Second)
			r.parallel(db, 4, func(_ int, conn *pgx.Conn) error {
				for time.Now().Before(stop) {
					tx, err := conn.Begin(r.ctx)
					if err != nil {
						return err
					}
					rows, err := tx.Query(r.ctx, "SELECT id FROM jobs WHERE NOT done ORDER BY id LIMIT 5 "+lock)
					if err != nil {
						return err
					}
					ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
					if err != nil {
						return err
					}
					if _, err := tx.Exec(r.ctx, "SELECT pg_sleep(0.02)"); err != nil {
						return err
					}
					if _, err := tx.Exec(r.ctx, "UPDATE jobs SET done = true WHERE id = ANY($1)", ids); err != nil {
						return err
					}
					if err := tx.Commit(r.ctx); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	trig := poll("trig", "FOR UPDATE")
	ctl := poll("ctl", "FOR UPDATE SKIP LOCKED")

	w, _ := analyzeSegment(t, trig, "trig")
	fs := only(evaluate(r.t, r.ctx, Input{Workload: w}, Options{}), IDQueue)
	if len(fs) != 1 || fs[0].Severity != Warning {
		t.Fatalf("queue poll with FOR UPDATE and lock waits: %+v (lock wait lines %d)", fs, w.LockWaitLines)
	}
	t.Logf("observed: %s", fs[0].Summary)

	w, _ = analyzeSegment(t, ctl, "ctl")
	if fs := only(evaluate(r.t, r.ctx, Input{Workload: w}, Options{}), IDQueue); len(fs) != 0 {
		t.Errorf("queue poll with SKIP LOCKED: %+v", fs)
	}
	t.Logf("control: %d lock-wait log lines with SKIP LOCKED", w.LockWaitLines)
}

func TestErrors(t *testing.T) {
	r := startRig(t, nil)
	r.createDB("base", "target")
	r.exec("base", "CREATE TABLE orders (id int PRIMARY KEY, qty int)")
	// The target's schema differs: a constraint the baseline lacks.
	r.exec("target", "CREATE TABLE orders (id int PRIMARY KEY, qty int CHECK (qty < 150))")
	run := func(db string) []byte {
		return r.capture(func() {
			conn := r.connect(db)
			for i := range 200 {
				// Failures are expected on the target.
				conn.Exec(r.ctx, "INSERT INTO orders (id, qty) VALUES ($1, $2)", i, i)
			}
		})
	}
	base, _ := analyzeSegment(t, run("base"), "base")
	target, _ := analyzeSegment(t, run("target"), "target")

	if fs := only(evaluate(r.t, r.ctx, Input{Workload: base}, Options{}), IDErrors); len(fs) != 0 {
		t.Errorf("errors on a workload without errors: %+v", fs)
	}
	fs := only(evaluate(r.t, r.ctx, Input{Workload: target, Baseline: base}, Options{}), IDErrors)
	if len(fs) != 2 {
		t.Fatalf("errors on the target: %+v", fs)
	}
	rate, only := fs[0], fs[1]
	if rate.Subject != "error rate" {
		rate, only = only, rate
	}
	if rate.Severity != Critical || figure(t, rate, "failed_statements") != 50 || rate.Evidence.Tables[0].Rows[0][0] != "23514" {
		t.Errorf("error rate: %+v", rate)
	}
	if only.Subject != "failed only on target" || len(only.Evidence.Queries) != 1 ||
		!strings.Contains(only.Evidence.Queries[0].Query, "INSERT INTO orders") {
		t.Errorf("failed only on target: %+v", only)
	}
	t.Logf("observed: %s; %s", rate.Summary, only.Summary)
	// The SQLSTATE is named, for the text and the page to show
	// (internal/report's TestWriteFindings).
	if row := rate.Evidence.Tables[0].Rows[0]; row[1] != "check_violation" {
		t.Errorf("error rate table row %q, want the name check_violation", row)
	}
}

// queueItems is a queue of 200,000 items, polled by the items
// referenced and not queued yet, in the order they may be downloaded.
const queueItems = `CREATE TABLE queue_items (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		download_after timestamptz NOT NULL,
		queued_at timestamptz,
		referenced_at int,
		payload text);
	INSERT INTO queue_items (download_after, queued_at, referenced_at, payload)
		SELECT now() - g * interval '1 second', CASE WHEN g % 10 = 0 THEN NULL ELSE now() END, g % 5000, 'payload ' || g
		FROM generate_series(1, 200000) g;
	ANALYZE queue_items`

// fingerprintOf is the fingerprint of w's last query whose text holds
// part; it fails t when none does.
func fingerprintOf(t *testing.T, w *Workload, part string) string {
	t.Helper()
	var fp string
	for _, q := range w.Queries {
		if strings.Contains(q.Query, part) {
			fp = q.Fingerprint
		}
	}
	if fp == "" {
		t.Fatalf("no query with %q among %+v", part, w.Queries)
	}
	return fp
}
