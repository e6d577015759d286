package explain

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestVersionsExplain explains one lookup with values (custom plans,
// analyzed) and without (generic plans: GENERIC_PLAN from 16, a
// prepared statement before) with the control and the candidate on the
// same major, for each of pgcluster.Majors, and from 13 to 18: the same
// data and indexes make the same plan on every pair, without a problem,
// whatever each version's EXPLAIN adds (18: buffers by default,
// fractional rows, "Index Searches"); each snapshot reads the
// statistics target set on a column and the extended statistics'
// definition (attstattarget is NULL by default from 17).
func TestVersionsExplain(t *testing.T) {
	var pairs [][2]int
	for _, m := range pgcluster.Majors {
		pairs = append(pairs, [2]int{m, m})
	}
	pairs = append(pairs, [2]int{13, 18})
	for _, pr := range pairs {
		t.Run(fmt.Sprintf("%d-%d", pr[0], pr[1]), func(t *testing.T) {
			// Each version on servers of its own: the versions run side by side.
			t.Parallel()
			p := &pair{t: t, ctx: context.Background()}
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); p.ctl = pgclustertest.StartVersion(t, pr[0], nil) }()
			go func() { defer wg.Done(); p.cand = pgclustertest.StartVersion(t, pr[1], nil) }()
			wg.Wait()
			if p.ctl == nil || p.cand == nil {
				t.FailNow()
			}
			p.both("postgres", shopSQL+"CREATE INDEX customers_email_idx ON customers (email);"+
				"ALTER TABLE customers ALTER COLUMN email SET STATISTICS 500; CREATE STATISTICS customers_s (ndistinct) ON id, email FROM customers;")
			p.both("postgres", "VACUUM ANALYZE")
			q := "SELECT id, name FROM customers WHERE email = $1"
			withValues := Statement{Fingerprint: "lookup", Query: q, Samples: []Sample{
				{Role: SampleSlowest, Query: q, Params: []*string{str("user42@example.com")}}}}
			generic := Statement{Fingerprint: "lookup", Query: q}
			rep := p.run(Options{Analyze: true}, withValues, generic)
			for i, o := range rep.Outcomes {
				if o.Verdict != SamePlan || len(o.Problems) != 0 || len(o.Unchecked) != 0 {
					m := o.Main()
					if m != nil {
						t.Logf("control:   %s\ncandidate: %s", m.Control.Plan.Shape(), m.Candidate.Plan.Shape())
					}
					t.Errorf("outcome %d: %s, problems %+v, unchecked %+v", i, o.Verdict, o.Problems, o.Unchecked)
				}
			}
			// 18 moved these out of the category they had: both
			// snapshots still hold them, to compare.
			for side, snaps := range map[Side]map[string]*Snapshot{Control: rep.Control, Candidate: rep.Candidate} {
				for db, s := range snaps {
					for _, name := range []string{"max_parallel_workers_per_gather", "effective_io_concurrency"} {
						if _, ok := s.Settings[name]; !ok {
							t.Errorf("the %s's snapshot of %s (%s) lacks %s", side, db, s.VersionText, name)
						}
					}
					// The statistics targets set and the extended
					// statistics' definitions, whatever the version.
					if r := s.Relations["customers"]; r == nil || len(r.StatisticsTargets) != 1 || r.StatisticsTarget("email") != 500 ||
						len(r.ExtStats) != 1 || r.ExtStats[0].Def != "CREATE STATISTICS public.customers_s (ndistinct) ON id, email FROM customers" ||
						r.ExtStats[0].Schema != "public" || !r.ExtStats[0].Built {
						t.Errorf("the %s's snapshot of customers (%s): %+v", side, s.VersionText, r)
					}
				}
			}
			if t.Failed() {
				return
			}
			e := rep.Outcomes[0].Explained[0]
			if !e.Control.Plan.Analyzed || !e.Candidate.Plan.Analyzed {
				t.Errorf("with values: analyzed %v/%v", e.Control.Plan.Analyzed, e.Candidate.Plan.Analyzed)
			}
			if g := rep.Outcomes[1]; !g.Generic || g.Explained[0].Control.Mode != ModeGeneric || g.Explained[0].Candidate.Mode != ModeGeneric {
				t.Errorf("without values: generic %v, %+v", g.Generic, g.Explained[0])
			}
		})
	}
}
