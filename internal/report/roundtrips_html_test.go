package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// keepRoundTrips makes r a replay --target-log: its queries server-side,
// its client round trips 0.3 ms slower per call.
func keepRoundTrips(r *compare.Run) *compare.Run {
	r.Kind, r.LatencySource = results.KindReplay, compare.LatencyServerLog
	if r.Replay == nil {
		r.Replay = &results.Replay{}
	}
	for _, q := range r.Queries {
		c := q
		c.Hist = ""
		c.MeanMS, c.P95MS = c.MeanMS+0.3, c.P95MS+0.3
		c.TotalMS = c.MeanMS * float64(c.TimedCalls)
		r.ClientQueries = append(r.ClientQueries, c)
	}
	return r
}

// TestRoundTripsSection: a replay that kept its client round trips gets a
// section of them, before the table of all queries, saying they are not a
// regression; a comparison or summary without them has none.
func TestRoundTripsSection(t *testing.T) {
	base := func() *compare.Run { return synthRun(t, "analysis", 1, false, synthQueries...) }
	cand := func() *compare.Run { return synthRun(t, "analysis", 2, false, synthQueries...) }
	comparison := func(b, c *compare.Run) *compare.Report {
		rep, err := compare.Compare(b, c, compare.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	tests := []struct {
		name     string
		rep      *compare.Report
		sections string
		tables   []string // round-trip tables
		heading  string   // of the first table
	}{
		{"analysis vs target-log replay", comparison(base(), keepRoundTrips(cand())),
			"summary,effects,distributions,errors,round-trips,queries", []string{"round-trips-candidate"}, "Candidate replay (analysis-2.json): top 6 of 6 queries by server time"},
		// Both sides have round trips: their time per call at each
		// level, side by side, before the round trips.
		{"two target-log replays", comparison(keepRoundTrips(base()), keepRoundTrips(cand())),
			"summary,effects,distributions,errors,levels,round-trips,queries", []string{"round-trips-baseline", "round-trips-candidate"}, "Baseline replay (analysis-1.json)"},
		{"summary of a target-log replay", compare.Summarize(keepRoundTrips(cand())),
			"summary,distributions,round-trips,queries", []string{"round-trips-baseline"}, "Replay (analysis-2.json)"},
		{"analyses", comparison(base(), cand()), "summary,effects,distributions,errors,queries", nil, ""},
		{"summary of an analysis", compare.Summarize(base()), "summary,distributions,queries", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ComparisonPage(tt.rep, ComparisonOptions{})
			var ids []string
			var rt *htmlreport.Section
			for i, s := range p.Sections {
				ids = append(ids, s.ID)
				if s.ID == "round-trips" {
					rt = &p.Sections[i]
				}
			}
			if got := strings.Join(ids, ","); got != tt.sections {
				t.Fatalf("sections %s, want %s", got, tt.sections)
			}
			var buf bytes.Buffer
			if err := htmlreport.Write(&buf, p); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), "Client round trips on the replay"); got != (tt.tables != nil) {
				t.Errorf("page shows the round-trips heading: %v", got)
			}
			if rt == nil {
				return
			}
			var tables []string
			for _, tb := range rt.Tables {
				tables = append(tables, tb.ID)
				if len(tb.Rows) != len(synthQueries) {
					t.Errorf("%s: %d rows, want %d", tb.ID, len(tb.Rows), len(synthQueries))
				}
				for _, r := range tb.Rows {
					// Overhead is 0.3 ms by construction; never coloured
					// as a regression.
					if r.Class != "" || r.Cells[5].Text != "+0.300" || r.Detail == nil || !strings.HasPrefix(r.Cells[6].Title, "") {
						t.Errorf("%s row %s: class %q, overhead %q", tb.ID, r.Cells[6].Title, r.Class, r.Cells[5].Text)
					}
				}
			}
			if strings.Join(tables, ",") != strings.Join(tt.tables, ",") {
				t.Errorf("tables %v, want %v", tables, tt.tables)
			}
			if !strings.HasPrefix(rt.Tables[0].Title, tt.heading) {
				t.Errorf("table title %q, want %q", rt.Tables[0].Title, tt.heading)
			}
			if !strings.Contains(strings.Join(rt.Text, " "), "never a regression") || len(rt.Cards) != len(tt.tables) ||
				rt.Cards[0].Value != "+0.300 ms" || rt.Cards[0].Status != "" {
				t.Errorf("text %q, cards %+v", rt.Text, rt.Cards)
			}
		})
	}
}
