package report

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
)

// The Plans section renders in a real browser: the statements' table
// sorts and opens on the causes, and both plan trees are laid side by
// side with the changed nodes marked.
func TestPlansInBrowser(t *testing.T) {
	rep := plansReport(t)
	rep.Redact()
	sec := PlansSection(rep, map[string]compare.Status{"aaaa": compare.StatusRegressed, "bbbb": compare.StatusRegressed}, PlanHints{KeepSamples: "--keep-samples"})
	if len(sec.Tables) != 3 {
		t.Fatalf("%d tables: the statements and two pairs of trees", len(sec.Tables))
	}
	path := writePage(t, htmlreport.Page{Title: "plans test", Sections: []htmlreport.Section{sec}})
	sc := htmltest.SelfCheck(t, path)
	htmltest.AssertSelfCheck(t, sc, 0)
	found := false
	for _, tb := range sc.Tables {
		if tb.Rows == len(rep.Outcomes) && tb.DetailShown {
			found = true
		}
	}
	if !found {
		t.Errorf("no statements table with a detail: %+v", sc.Tables)
	}
	dom := string(htmltest.DumpDOM(t, path, ""))
	for _, s := range []string{"Index Scan using customers_email_idx on customers", "Seq Scan on customers", `class="bad"`,
		"index customers_email_idx on customers does not exist on the candidate"} {
		if !strings.Contains(dom, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	htmltest.ScreenshotLogged(t, path, "1400,1400")
}
