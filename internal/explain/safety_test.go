package explain

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// TestCannotExplain lists every statement that cannot be explained with
// its reason, on each side, and never drops one. A statement whose
// normalized text the servers refuse (a parameter whose type cannot be
// inferred, "interval $1") and of which no execution is known has no
// sample, the same on both sides.
func TestCannotExplain(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, nil, nil)
	p.both("postgres", shopSQL)
	stmts := []Statement{
		{Fingerprint: "ddl", Query: "CREATE INDEX ON orders (total)"},
		{Fingerprint: "temp", Query: "SELECT * FROM tmp_import WHERE id = $1"},
		{Fingerprint: "several", Query: "SELECT 1; SELECT 2"},
		{Fingerprint: "garbage", Query: "SELEC wrong"},
		{Fingerprint: "untyped", Query: "SELECT id FROM orders WHERE $1 IS NULL"},
		{Fingerprint: "interval", Query: "SELECT id FROM orders WHERE id < $1 AND now() > now() - interval $2"},
		{Fingerprint: "fine", Query: "SELECT id FROM customers WHERE email = $1"},
	}
	rep := p.run(Options{Analyze: true}, stmts...)
	want := []ProblemKind{ProblemUtility, ProblemRelationMissing, ProblemSeveral, ProblemUnparsable, ProblemNoSample, ProblemNoSample, ""}
	for i, o := range rep.Outcomes {
		if o.Fingerprint != stmts[i].Fingerprint {
			t.Fatalf("outcome %d is %s", i, o.Fingerprint)
		}
		if want[i] == "" {
			if o.Verdict != SamePlan || len(o.Problems) != 0 {
				t.Errorf("%s: %s %+v", o.Fingerprint, o.Verdict, o.Problems)
			}
			continue
		}
		if o.Verdict != NotCompared || len(o.Problems) != 2 {
			t.Errorf("%s: %s %+v", o.Fingerprint, o.Verdict, o.Problems)
			continue
		}
		for j, pr := range o.Problems {
			if pr.Kind != want[i] || pr.Side != []Side{Control, Candidate}[j] {
				t.Errorf("%s: problem %+v, want %s", o.Fingerprint, pr, want[i])
			}
		}
		if want[i] == ProblemRelationMissing && o.Problems[0].Relation != "tmp_import" {
			t.Errorf("missing relation: %+v", o.Problems[0])
		}
	}
	if o := rep.Outcomes[5]; o.Problems[0].Message != o.Problems[1].Message || !strings.Contains(o.Problems[0].Message, "syntax error") {
		t.Errorf("interval: problems %+v, want one refusal, the same on both sides", o.Problems)
	}
	// With an execution from the log, it is explained as it ran, never
	// analyzed (its values are not to be kept).
	example := &Sample{Role: SampleExample, Query: "SELECT id FROM orders WHERE id < 10 AND now() > now() - interval '1 day'"}
	rep = p.run(Options{Analyze: true, Examples: func(fp string) *Sample {
		if fp == "interval" {
			return example
		}
		return nil
	}}, stmts[4], stmts[5])
	if o := rep.Outcomes[0]; len(o.Problems) != 2 || o.Problems[0].Kind != ProblemNoSample {
		t.Errorf("untyped, without an example: %+v", o.Problems)
	}
	if o := rep.Outcomes[1]; len(o.Problems) != 0 || len(o.Explained) != 1 || o.Explained[0].Sample != SampleExample || o.Generic ||
		o.Explained[0].Candidate == nil || o.Explained[0].Candidate.NotAnalyzed != SkipExample {
		t.Errorf("interval, with an example: %s %+v %+v", o.Verdict, o.Problems, o.Explained)
	}
	// A server that cannot be reached: each statement says so.
	rep = p.runWith(Options{ControlDSN: p.ctl.DSN("postgres"), CandidateDSN: "host=/nonexistent port=1 user=x dbname=y connect_timeout=2"}, stmts[6])
	if o := rep.Outcomes[0]; o.Verdict != NotCompared || len(o.Problems) != 1 || o.Problems[0].Kind != ProblemConnect || o.Problems[0].Side != Candidate {
		t.Errorf("unreachable candidate: %s %+v", o.Verdict, o.Problems)
	}
	rep = p.runWith(Options{CandidateDSN: p.cand.DSN("postgres")}, stmts[6])
	if o := rep.Outcomes[0]; o.Verdict != NotCompared || len(o.Problems) != 1 || o.Problems[0].Kind != ProblemNoConnection || o.Problems[0].Side != Control {
		t.Errorf("no control: %s %+v", o.Verdict, o.Problems)
	}
}

// TestNeverExecutes: with ANALYZE allowed, writes, row locks and
// volatile functions are explained without running; the values a sample
// carries reach no error message.
func TestNeverExecutes(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, nil, nil)
	p.both("postgres", shopSQL+`CREATE TABLE audit (n int);
CREATE FUNCTION touch(bigint) RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT $1';`)
	upd := "UPDATE orders SET total = total + $1 WHERE id = $2"
	lock := "SELECT id FROM orders WHERE id = $1 FOR UPDATE"
	vol := "SELECT touch(id) FROM orders WHERE id = $1"
	adv := "SELECT pg_advisory_lock($1)"
	sample := func(q string, vals ...string) []Sample {
		var ps []*string
		for _, v := range vals {
			ps = append(ps, str(v))
		}
		return []Sample{{Role: SampleSlowest, Query: q, Params: ps}}
	}
	bad := "not-a-number-secret@example.com"
	rep := p.run(Options{Analyze: true},
		Statement{Fingerprint: "upd", Database: "postgres", Query: upd, Samples: sample(upd, "1000", "7")},
		Statement{Fingerprint: "lock", Database: "postgres", Query: lock, Samples: sample(lock, "7")},
		Statement{Fingerprint: "vol", Database: "postgres", Query: vol, Samples: sample(vol, "7")},
		Statement{Fingerprint: "adv", Database: "postgres", Query: adv, Samples: sample(adv, "42")},
		Statement{Fingerprint: "badvalue", Database: "postgres", Query: "SELECT total FROM orders WHERE id = $1", Samples: sample("SELECT total FROM orders WHERE id = $1", bad)},
	)
	want := []AnalyzeSkip{SkipNotSelect, SkipNotSelect, SkipVolatile, SkipVolatile}
	for i, o := range rep.Outcomes[:4] {
		if o.Verdict != SamePlan {
			t.Fatalf("%s: %s %+v", o.Fingerprint, o.Verdict, o.Problems)
		}
		for _, sp := range []*SidePlan{o.Explained[0].Control, o.Explained[0].Candidate} {
			if sp.Plan.Analyzed || sp.NotAnalyzed != want[i] {
				t.Errorf("%s: analyzed %v (%s)", o.Fingerprint, sp.Plan.Analyzed, sp.NotAnalyzed)
			}
		}
	}
	if f := rep.Outcomes[2].Explained[0].Control.VolatileFunction; f != "touch" {
		t.Errorf("volatile function %q", f)
	}
	// Nothing ran: the order kept its total, no advisory lock is held.
	ctx := context.Background()
	for _, c := range []string{p.ctl.DSN("postgres"), p.cand.DSN("postgres")} {
		conn, err := pgx.Connect(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var total string
		var locks int
		if err := conn.QueryRow(ctx, "SELECT total::text, (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory') FROM orders WHERE id = 7").Scan(&total, &locks); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		if total != "7.99" || locks != 0 {
			t.Errorf("the explains changed something: total %s, %d advisory locks", total, locks)
		}
	}
	o := rep.Outcomes[4]
	if o.Verdict != NotCompared || len(o.Problems) != 2 || o.Problems[0].Kind != ProblemError {
		t.Fatalf("bad value: %s %+v", o.Verdict, o.Problems)
	}
	for _, pr := range o.Problems {
		if strings.Contains(pr.Message, bad) {
			t.Errorf("a parameter value in a message: %q", pr.Message)
		}
	}
}

// TestAutoExplainBaseline: production's plans come from its log
// (auto_explain, in its text and JSON formats), with no connection to
// production: the candidate, without the index, is compared with them.
func TestAutoExplainBaseline(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, map[string]string{
		"session_preload_libraries":     "auto_explain",
		"auto_explain.log_min_duration": "0",
		"auto_explain.log_analyze":      "on",
		"auto_explain.log_buffers":      "on",
	}, nil)
	p.both("postgres", shopSQL+"CREATE INDEX customers_email_idx ON customers (email);")
	p.both("postgres", "VACUUM ANALYZE")
	p.exec(p.cand, "postgres", "DROP INDEX customers_email_idx")
	q := "SELECT id, name FROM customers WHERE email = $1"
	ctx := context.Background()
	for _, format := range []string{"text", "json"} {
		conn, err := pgx.Connect(ctx, p.ctl.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "SET auto_explain.log_format = "+format); err != nil {
			t.Fatal(err)
		}
		var id int64
		var name string
		if err := conn.QueryRow(ctx, q, "user42@example.com").Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
	}
	entries := autoExplainEntries(readAll(t, p.ctl.ServerLog()), "FROM customers WHERE email")
	if len(entries) != 2 {
		t.Fatalf("%d plans of the lookup in the log", len(entries))
	}
	for i, e := range entries {
		logged, err := plan.ParseAutoExplain(e)
		if err != nil {
			t.Fatalf("entry %d: %v\n%s", i, err, e)
		}
		rep := p.runWith(Options{CandidateDSN: p.cand.DSN("postgres"), Analyze: true},
			Statement{Fingerprint: "lookup", Database: "postgres", Query: q, Logged: logged})
		o := rep.Outcomes[0]
		if o.Verdict != PlanChanged || len(o.Problems) != 0 {
			t.Fatalf("entry %d: %s %+v", i, o.Verdict, o.Problems)
		}
		m := o.Main()
		if m.Control.Mode != ModeLogged || !m.Control.Plan.Analyzed || m.Candidate.Mode != ModeGeneric {
			t.Errorf("entry %d: modes %s %s", i, m.Control.Mode, m.Candidate.Mode)
		}
		c, a, b := first(t, &o)
		if c.Kind != plan.Replaced || label(a) != "Index Scan using customers_email_idx on customers" || label(b) != "Seq Scan on customers" {
			t.Errorf("entry %d: %s %q -> %q", i, c.Kind, label(a), label(b))
		}
		// No hypopg on the candidate, and no control to read the
		// index's definition from: not verified.
		if len(o.Causes) == 0 || o.Causes[0].Kind != CauseIndexMissing || o.Causes[0].Index != "customers_email_idx" || o.Causes[0].Verified {
			t.Errorf("entry %d: causes %+v", i, o.Causes)
		}
		if len(rep.Control) != 0 {
			t.Errorf("a control snapshot without a control connection")
		}
	}
}

// autoExplainEntries returns the auto_explain messages of a stderr log
// whose query text contains marker: the lines after "plan:", each led by
// a tab, as a log reader hands them on.
func autoExplainEntries(log, marker string) []string {
	start := regexp.MustCompile(`^\d{4}-\d\d-\d\d `)
	var out []string
	var cur *strings.Builder
	flush := func() {
		if cur != nil && strings.Contains(cur.String(), marker) {
			out = append(out, cur.String())
		}
		cur = nil
	}
	for _, line := range strings.Split(log, "\n") {
		if start.MatchString(line) {
			flush()
			if strings.HasSuffix(line, "plan:") {
				cur = &strings.Builder{}
			}
			continue
		}
		if cur != nil {
			cur.WriteString(line + "\n")
		}
	}
	flush()
	return out
}

// TestOwnStatementsUntracked: explain's catalog reads and EXPLAINs do
// not reach pg_stat_statements (a superuser's session untracks itself),
// where a finding would take them for the workload's.
func TestOwnStatementsUntracked(t *testing.T) {
	t.Parallel() // its own pair of servers
	pgss := map[string]string{"shared_preload_libraries": "pg_stat_statements"}
	p := startPair(t, pgss, pgss)
	p.both("postgres", shopSQL+"CREATE EXTENSION pg_stat_statements;")
	p.both("postgres", "SELECT pg_stat_statements_reset()")
	q := "SELECT total FROM orders WHERE id = $1"
	rep := p.run(Options{Analyze: true}, Statement{Fingerprint: "q", Database: "postgres", Query: q,
		Samples: []Sample{{Role: SampleSlowest, Query: q, Params: []*string{str("7")}}}})
	if rep.Outcomes[0].Verdict != SamePlan || !rep.Outcomes[0].Explained[0].Candidate.Plan.Analyzed {
		t.Fatalf("not explained: %+v", rep.Outcomes[0])
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.cand.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT query FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'")
	if err != nil {
		t.Fatal(err)
	}
	seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seen {
		// The probe whether the role may untrack is all that remains.
		if s != "SELECT current_setting($1) = $2" {
			t.Errorf("pg_stat_statements tracked explain's own %q", s)
		}
	}
}
