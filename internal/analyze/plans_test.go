package analyze

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// TestSamplesAndLoggedPlans: with KeepSamples the result keeps each
// query's slowest and median executions with their values, whatever the
// jobs; without, no value at all. The plans the log holds are kept per
// fingerprint, the shape logged most often, their values removed unless
// samples are kept.
func TestSamplesAndLoggedPlans(t *testing.T) {
	const q = "SELECT name FROM users WHERE email = $1"
	index := "Index Scan using users_email_idx on users  (cost=0.29..8.31 rows=1 width=11)\n  Index Cond: (email = 'secret@example.com'::text)"
	seq := "Seq Scan on users  (cost=0.00..1000.00 rows=1 width=11)\n  Filter: (email = 'secret@example.com'::text)"
	events := func() []*event.Event {
		var evs []*event.Event
		for i := range 300 {
			ev := &event.Event{Kind: event.Execute, Session: "s" + strconv.Itoa(i%7), Time: int64(i) * 1000, Query: q,
				Duration: int64(1000 + i), Database: "shop", Params: []event.Param{{Value: "user" + strconv.Itoa(i) + "@example.com"}}}
			text := index
			if i%10 == 0 {
				text = seq
			}
			ev.AddPlan(event.Plan{Text: "Query Text: " + q + "\n" + text, Format: event.PlanText})
			evs = append(evs, ev)
		}
		return evs
	}
	for _, keep := range []bool{false, true} {
		for _, jobs := range []int{1, 3} {
			res, err := Analyze(context.Background(), []event.Source{&sliceSource{events: events()}}, Options{Jobs: jobs, BatchSize: 16, KeepSamples: keep})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.LoggedPlans) != 1 {
				t.Fatalf("logged plans: %+v", res.LoggedPlans)
			}
			lp := res.LoggedPlans[0]
			if lp.Logged != 300 || lp.Shapes != 2 || lp.Format != "text" || lp.Plan.Root.Index != "users_email_idx" {
				t.Errorf("keep %v jobs %d: logged plan %+v", keep, jobs, lp)
			}
			if strings.Contains(lp.Plan.Root.IndexCond, "secret") != keep {
				t.Errorf("keep %v: index cond %q", keep, lp.Plan.Root.IndexCond)
			}
			if !keep {
				if res.KeptSamples || res.Samples != nil {
					t.Errorf("samples without KeepSamples: %+v", res.Samples)
				}
				continue
			}
			s := res.SamplesOf(lp.Fingerprint)
			if !res.KeptSamples || len(s) != 2 || s[0].DurationMS != 1.299 || *s[0].Params[0] != "user299@example.com" || s[0].Database != "shop" {
				t.Errorf("jobs %d: samples %+v", jobs, s)
			}
			if med := s[1].DurationMS; med < 1.05 || med > 1.25 {
				t.Errorf("jobs %d: median %v", jobs, med)
			}
		}
	}
}
