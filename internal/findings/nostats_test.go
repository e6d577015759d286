package findings

import (
	"context"
	"strings"
	"testing"
)

// TestNoStatistics: on a real server (autovacuum off, so that nothing
// analyzes behind the test), no-statistics names the big table the
// workload reads while it has no column statistics, then while an
// extended statistics object made after its ANALYZE is not computed,
// and nothing once ANALYZE has run; the small table it also reads and
// the big one it does not touch are never named.
func TestNoStatistics(t *testing.T) {
	r := startRig(t, map[string]string{"autovacuum": "off"})
	r.createDB("nostats")
	r.exec("nostats", `CREATE TABLE big (id int, pad text);
		INSERT INTO big SELECT g, repeat('x', 60) FROM generate_series(1, 120000) g;
		CREATE TABLE small (id int);
		INSERT INTO small SELECT generate_series(1, 10);
		CREATE TABLE untouched AS SELECT * FROM big`)
	w := &Workload{Queries: []Query{
		{Fingerprint: "b", Query: "SELECT pad FROM big WHERE id = $1", Calls: 100, TotalMS: 900},
		{Fingerprint: "s", Query: "SELECT id FROM small WHERE id = $1", Calls: 100, TotalMS: 10},
		{Fingerprint: "j", Query: "SELECT count(*) FROM big JOIN small USING (id)", Calls: 3, TotalMS: 30},
	}}
	for _, step := range []struct {
		name, sql string
		// want is the reason big is named for, "" for no finding.
		want string
	}{
		{name: "never analyzed", want: "no column statistics"},
		{name: "extended statistics made after ANALYZE", sql: "ANALYZE big; CREATE STATISTICS big_st (ndistinct) ON id, pad FROM big",
			want: "extended statistics not computed: big_st"},
		{name: "analyzed", sql: "ANALYZE big"},
	} {
		if step.sql != "" {
			r.exec("nostats", step.sql)
		}
		rep := r.evaluate("nostats", Input{Workload: w}, Options{})
		got := only(rep, IDNoStatistics)
		if step.want == "" {
			if len(got) != 0 {
				t.Errorf("%s: %d no-statistics findings, want none: %+v", step.name, len(got), got)
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d no-statistics findings, want 1", step.name, len(got))
		}
		f := got[0]
		if n := figure(t, f, "tables_without_statistics"); n != 1 {
			t.Errorf("%s: %g tables without statistics, want 1 (big)", step.name, n)
		}
		rows := f.Evidence.Tables[0].Rows
		if len(rows) != 1 || rows[0][0] != "public.big" || !strings.HasPrefix(rows[0][2], step.want) {
			t.Errorf("%s: rows %v, want public.big with %q", step.name, rows, step.want)
		}
		if !strings.Contains(f.Summary, "Until ANALYZE") || strings.Contains(f.Summary, "small") || strings.Contains(f.Summary, "untouched") {
			t.Errorf("%s: summary %q", step.name, f.Summary)
		}
		if len(f.Evidence.Queries) != 2 || f.Evidence.Queries[0].Fingerprint != "b" {
			t.Errorf("%s: queries %+v, want b then j (the statements that touch big, by time)", step.name, f.Evidence.Queries)
		}
	}
	// No server: listed as not evaluated, for want of it.
	rep := evaluate(t, context.Background(), Input{Workload: w}, Options{})
	found := false
	for _, s := range rep.NotEvaluated {
		found = found || s.ID == IDNoStatistics && s.Lacks == LackServer
	}
	if !found {
		t.Errorf("without a server: not evaluated %+v lacks no-statistics", rep.NotEvaluated)
	}
}
