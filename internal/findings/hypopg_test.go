package findings

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// requireHypoPG fails the test, rather than skipping it, unless hypopg's
// library is installed for the cluster's PostgreSQL, then creates the
// extension in each database.
func (r *rig) requireHypoPG(dbs ...string) {
	r.t.Helper()
	bin := r.c.BinDir()
	libdir := filepath.Join(filepath.Dir(bin), "lib")
	if out, err := exec.Command(filepath.Join(bin, "pg_config"), "--pkglibdir").Output(); err == nil {
		libdir = strings.TrimSpace(string(out))
	}
	pkg := "postgresql-<major>-hypopg"
	if v := filepath.Base(filepath.Dir(bin)); v != "" {
		if _, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); err == nil {
			pkg = "postgresql-" + v + "-hypopg"
		}
	}
	so := filepath.Join(libdir, "hypopg.so")
	if _, err := os.Stat(so); err != nil {
		r.t.Fatalf("hypopg is not installed for the PostgreSQL in %s: %v. Run `make extensions` "+
			"(as root it installs the Debian package %s), or install hypopg from https://github.com/HypoPG/hypopg", bin, err, pkg)
	}
	for _, db := range dbs {
		if err := r.c.Exec(r.ctx, db, "CREATE EXTENSION hypopg"); err != nil {
			r.t.Fatalf("CREATE EXTENSION hypopg in %s: %v (%s is present; run `make extensions` to reinstall %s)", db, err, so, pkg)
		}
	}
}

// TestMissingIndexHypoPG checks missing-index's suggestion with hypopg
// installed in the database: an index the planner would use is verified,
// with the plan costs before and after; one it would not use is withdrawn.
// The hypothetical indexes live in the explaining session only: none is
// left behind, and nothing reaches pg_class.
func TestMissingIndexHypoPG(t *testing.T) {
	r := startRig(t, nil)
	cases := []struct {
		db, query string
		arg       func(i int) int
		opts      Options
		cols      string // the suggested index's columns
		used      bool
	}{
		// The job-queue poll: 2 rows of 200,000 qualify, the index on
		// (referenced_at, queued_at) makes it an index scan.
		{db: "used", query: "SELECT id FROM queue_items WHERE referenced_at = $1 AND queued_at IS NULL ORDER BY download_after LIMIT 100",
			arg: func(i int) int { return i * 10 }, cols: "(referenced_at, queued_at)", used: true},
		// A filter that keeps 94% and more of the table: the scan is
		// right. The selectivity gate would drop it before hypopg; it is
		// opened so that hypopg is the judge.
		{db: "most", query: "SELECT sum(length(payload)) FROM queue_items WHERE referenced_at >= $1",
			arg: func(i int) int { return i * 10 }, opts: Options{IndexMaxSelectivity: 1}, cols: "(referenced_at)"},
		// A selective filter on an expression of the column, which an
		// index on the column cannot serve: the gate lets it through
		// (the planner guesses 0.5% of the rows), only hypopg catches it.
		{db: "expr", query: "SELECT id FROM queue_items WHERE referenced_at % 1000 = $1",
			arg: func(i int) int { return i }, cols: "(referenced_at)"},
	}
	for _, c := range cases {
		r.createDB(c.db)
		r.requireHypoPG(c.db)
		r.exec(c.db, queueItems)
	}
	for _, c := range cases {
		t.Run(c.db, func(t *testing.T) {
			seg := r.capture(func() {
				conn := r.connect(c.db)
				for i := range 30 {
					if _, err := conn.Exec(r.ctx, c.query, c.arg(i)); err != nil {
						t.Fatal(err)
					}
				}
			})
			w, obs := analyzeSegment(t, seg, c.db)
			check := r.connect(c.db)
			const countIndexes = "SELECT count(*) FROM pg_class WHERE relkind = 'i'"
			var indexesBefore, indexesAfter, hypo int
			if err := check.QueryRow(r.ctx, countIndexes).Scan(&indexesBefore); err != nil {
				t.Fatal(err)
			}
			conn := r.connect(c.db)
			rep := r.evaluateOn(conn, c.db, Input{Workload: w, Observed: obs}, c.opts)

			// Nothing left behind, in the session or on the server.
			if err := conn.QueryRow(r.ctx, "SELECT count(*) FROM hypopg()").Scan(&hypo); err != nil || hypo != 0 {
				t.Errorf("hypothetical indexes left in the explaining session: %d (%v)", hypo, err)
			}
			if err := check.QueryRow(r.ctx, countIndexes).Scan(&indexesAfter); err != nil || indexesAfter != indexesBefore {
				t.Errorf("pg_class indexes %d before, %d after (%v)", indexesBefore, indexesAfter, err)
			}

			fs := only(rep, IDMissingIndex)
			if len(fs) != 1 || !strings.Contains(fs[0].Subject, c.cols) {
				t.Fatalf("missing-index: %+v\nnot evaluated: %+v", fs, rep.NotEvaluated)
			}
			f := fs[0]
			notes := strings.Join(f.Evidence.Notes, " ")
			before, after := figure(t, f, "hypopg_cost_before"), figure(t, f, "hypopg_cost_after")
			if c.used {
				if !strings.Contains(notes, "verified with hypopg: with the index created hypothetically the plan would use it (") || !strings.Contains(notes, "using <") {
					t.Errorf("not verified: %v", f.Evidence.Notes)
				}
				if after >= before {
					t.Errorf("cost with the hypothetical index %v, not below %v", after, before)
				}
				if f.Severity != Critical || !strings.Contains(f.Recommendation, "CREATE INDEX CONCURRENTLY ON public.queue_items "+c.cols) {
					t.Errorf("verified suggestion: severity %s, recommendation %q", f.Severity, f.Recommendation)
				}
			} else {
				if !strings.Contains(notes, "hypothetical index did not help") {
					t.Errorf("not said that the index would not help: %v", f.Evidence.Notes)
				}
				if after < before {
					t.Errorf("cost with an unused hypothetical index %v, below %v", after, before)
				}
				// The scan is still reported, as info; the index is no
				// longer recommended.
				if f.Severity != Info || !strings.HasPrefix(f.Recommendation, "Do not create") {
					t.Errorf("withdrawn suggestion: severity %s, recommendation %q", f.Severity, f.Recommendation)
				}
			}
			t.Logf("observed: %s: plan cost %s without the index, %s with it hypothetically; severity %s; %s",
				f.Subject, fnum(before), fnum(after), f.Severity, notes)
		})
	}
}

// fakeExplainer plans a sequential scan with a filter, for the tests that
// need no server.
type fakeExplainer struct{ hypothetical int }

func (x *fakeExplainer) Explain(_ context.Context, r catalog.Request) (*catalog.Explained, error) {
	return &catalog.Explained{Mode: "generic", Plan: &plan.Plan{Root: &plan.Node{Type: "Seq Scan", Relation: "t",
		Filter: "(a = $1)", PlanRows: 10, TotalCost: 1000}}}, nil
}

func (x *fakeExplainer) Hypothetical(context.Context, catalog.Request, string) (*catalog.Hypo, error) {
	x.hypothetical++
	return nil, fmt.Errorf("not called without hypopg")
}

// TestMissingIndexWithoutHypoPG: a server without hypopg gets the suggestion
// unverified, with how to install hypopg.
func TestMissingIndexWithoutHypoPG(t *testing.T) {
	for _, c := range []struct{ state, want string }{
		{"missing", "Debian and Ubuntu package postgresql-16-hypopg"},
		{"available", "hypopg is available on the server but not installed in this database; run CREATE EXTENSION hypopg; in database app"},
	} {
		x := &fakeExplainer{}
		cat := &catalog.Catalog{Database: "app", ServerVersion: 160002, HypoPG: c.state,
			Tables: []*catalog.Table{{Schema: "public", Name: "t", Tuples: 1e6, Pages: 10000, Columns: []catalog.Column{{Name: "a", Type: "int"}}}}}
		w := &Workload{Queries: []Query{{Fingerprint: "f1", Query: "SELECT * FROM t WHERE a = $1", Calls: 10, TotalMS: 100}}}
		fs := only(evaluate(t, context.Background(), Input{Workload: w, Catalog: cat, Explainer: x}, Options{}), IDMissingIndex)
		if len(fs) != 1 {
			t.Fatalf("hypopg %s: %+v", c.state, fs)
		}
		if notes := strings.Join(fs[0].Evidence.Notes, " "); !strings.Contains(notes, c.want) || !strings.Contains(notes, "CREATE EXTENSION hypopg") {
			t.Errorf("hypopg %s: notes %q, want %q", c.state, notes, c.want)
		}
		if x.hypothetical != 0 || fs[0].Severity != Critical {
			t.Errorf("hypopg %s: %d hypothetical checks, severity %s", c.state, x.hypothetical, fs[0].Severity)
		}
	}
}

// cancellingExplainer is a Ctrl-C during an EXPLAIN: the context ends and
// the connection with it, as pgx closes a connection whose query is
// cancelled.
type cancellingExplainer struct{ cancel context.CancelFunc }

func (x *cancellingExplainer) Explain(ctx context.Context, _ catalog.Request) (*catalog.Explained, error) {
	x.cancel()
	return nil, fmt.Errorf("explain: %w", context.Cause(ctx))
}

func (x *cancellingExplainer) Hypothetical(ctx context.Context, _ catalog.Request, _ string) (*catalog.Hypo, error) {
	return nil, fmt.Errorf("conn closed")
}

// An evaluation interrupted mid-way says so: its checks that needed the
// server fail as "not evaluated", and a caller that shows the report as
// whole would tell the DBA that nothing was found.
func TestEvaluateInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cat := &catalog.Catalog{Database: "app", ServerVersion: 160002, HypoPG: "missing",
		Tables: []*catalog.Table{{Schema: "public", Name: "t", Tuples: 1e6, Pages: 10000, Columns: []catalog.Column{{Name: "a", Type: "int"}}}}}
	w := &Workload{Queries: []Query{{Fingerprint: "f1", Query: "SELECT * FROM t WHERE a = $1", Calls: 10, TotalMS: 100}}}
	rep, err := Evaluate(ctx, Input{Workload: w, Catalog: cat, Explainer: &cancellingExplainer{cancel}}, Options{})
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want ErrInterrupted and the context's", err)
	}
	if rep == nil || len(rep.NotEvaluated) == 0 || len(only(rep, IDMissingIndex)) != 0 {
		t.Errorf("report %+v: want the missing-index check not evaluated", rep)
	}
}
