package report

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
)

func TestBrowserComparison(t *testing.T) {
	rep := syntheticComparison(t)
	page := ComparisonPage(rep, ComparisonOptions{Footer: "browser test"})
	path := writePage(t, page)

	sc := htmltest.SelfCheck(t, path)
	charts := chartCount(page)
	if charts < 4 {
		t.Fatalf("the synthetic comparison has %d charts; want distributions and a timeline", charts)
	}
	htmltest.AssertSelfCheck(t, sc, charts, "queries-table")
	for _, tb := range sc.Tables {
		if tb.ID != "queries-table" {
			continue
		}
		if tb.Rows != len(rep.Queries) {
			t.Errorf("queries table has %d rows, want %d", tb.Rows, len(rep.Queries))
		}
		// Checked here too, not only by the page's own code: the first
		// click on "calls C" sorts largest first.
		for _, c := range tb.Checks {
			if c.Label != "calls C" {
				continue
			}
			var got []int
			for _, v := range c.Values {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("calls C cell %q: %v", v, err)
				}
				got = append(got, n)
			}
			if c.First != "descending" || len(got) != len(rep.Queries) || !slices.IsSortedFunc(got, func(a, b int) int { return b - a }) {
				t.Errorf("after a click on calls C (%s): %v", c.First, got)
			}
		}
	}
	htmltest.ScreenshotLogged(t, path, "1400,2000")
}

func TestBrowserSummary(t *testing.T) {
	rep := syntheticSummary(t)
	page := ComparisonPage(rep, ComparisonOptions{})
	path := writePage(t, page)
	charts := chartCount(page)
	htmltest.AssertSelfCheck(t, htmltest.SelfCheck(t, path), charts, "queries-table")
}

// TestBrowserRoundTrips: the round-trips table sorts and shows a row's
// detail in a browser.
func TestBrowserRoundTrips(t *testing.T) {
	b := synthRun(t, "analysis", 1, false, synthQueries...)
	c := keepRoundTrips(synthRun(t, "analysis", 2, false, synthQueries...))
	rep, err := compare.Compare(b, c, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := ComparisonPage(rep, ComparisonOptions{})
	charts := chartCount(page)
	htmltest.AssertSelfCheck(t, htmltest.SelfCheck(t, writePage(t, page)), charts, "queries-table", "round-trips-candidate")
}

// chartCount is how many charts page p draws.
func chartCount(p htmlreport.Page) int {
	n := 0
	for _, s := range p.Sections {
		n += len(s.Charts)
	}
	return n
}

func writePage(t *testing.T, p htmlreport.Page) string {
	t.Helper()
	return htmltest.WriteFile(t, "report.html", []byte(renderPage(t, p)))
}

// The evidence sections render in a real browser: every chart draws,
// every table sorts and opens a detail (the page's own #selfcheck).
func TestEvidenceInBrowser(t *testing.T) {
	page := htmlreport.Page{Title: "observe test", Sections: EvidenceSections(syntheticEvidence(), "", Hints{})}
	path := writePage(t, page)
	sc := htmltest.SelfCheck(t, path)
	if len(sc.Errors) > 0 || sc.Library == "" {
		t.Fatalf("script errors %v, library %q", sc.Errors, sc.Library)
	}
	if len(sc.Charts) != 3 || sc.ChartsRendered != 3 {
		t.Errorf("%d charts, %d rendered; want 3", len(sc.Charts), sc.ChartsRendered)
	}
	for _, c := range sc.Charts {
		if c.Ink == 0 && c.SVG == 0 {
			t.Errorf("chart %s is blank", c.ID)
		}
	}
	if len(sc.Tables) != 2 {
		t.Errorf("%d tables, want 2", len(sc.Tables))
	}
	for _, tb := range sc.Tables {
		if tb.Rows != 2 || !tb.SortedOK || !tb.DetailShown {
			t.Errorf("table %+v", tb)
		}
	}
	// A picture for a person to look at, left behind.
	png := htmltest.Screenshot(t, path, "1400,2600")
	t.Logf("screenshot: %s", png)
}

// The sweep's page draws its chart and its tables work in a real browser.
func TestSweepInBrowser(t *testing.T) {
	sc := htmltest.SelfCheck(t, writePage(t, SweepPage(syntheticSweep())))
	if len(sc.Errors) > 0 || sc.Library == "" || sc.ChartsRendered != 1 {
		t.Errorf("self-check: library %q, %d charts rendered, errors %v", sc.Library, sc.ChartsRendered, sc.Errors)
	}
	var ids []string
	for _, tb := range sc.Tables {
		ids = append(ids, tb.ID)
		if tb.Rows != 4 || !tb.SortedOK || !tb.DetailShown {
			t.Errorf("table %+v", tb)
		}
	}
	if got := strings.Join(ids, " "); got != "sweep-compare sweep-steps-on sweep-steps-off" {
		t.Errorf("tables %s", got)
	}
}

// TestBrowserRunsFit: a comparison of three runs a side (figures with
// their ±, changes with their intervals) draws every chart, error bars
// included, and its tables fit a 1280-pixel window without scrolling
// sideways.
func TestBrowserRunsFit(t *testing.T) {
	var base, cand []*compare.Run
	for i := range 3 {
		base = append(base, synthRun(t, "analysis", uint64(1+2*i), true, synthQueries...))
		c := append([]synthQuery(nil), synthQueries...)
		c[2].meanUS = 40000
		cand = append(cand, synthRun(t, "analysis", uint64(2+2*i), true, c...))
	}
	rep, err := compare.Runs(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := ComparisonPage(rep, ComparisonOptions{})
	path := writePage(t, page)
	charts := chartCount(page)
	sc := htmltest.SelfCheckAt(t, path, "1280,1000")
	htmltest.AssertSelfCheck(t, sc, charts, "queries-table")
	if sc.PageWidth > sc.ViewportWidth || len(sc.Overflows) > 0 {
		t.Errorf("at 1280 px: page %d px wide in a %d px window; tables scrolling sideways: %+v", sc.PageWidth, sc.ViewportWidth, sc.Overflows)
	}
	htmltest.ScreenshotLogged(t, path, "1280,2400")
}

// TestBrowserVerdictAndFixes: a rehearsal's page with the top
// regression's plans and the fixes tried draws and works in a real
// browser, its verdict box comes before every section, and at 1,400
// pixels the fixes' tables fit without scrolling sideways.
func TestBrowserVerdictAndFixes(t *testing.T) {
	rep, plans := verdictComparison(t)
	page := ComparisonPage(rep, ComparisonOptions{Plans: plans, Fixes: triedFixes()})
	path := writePage(t, page)
	charts := chartCount(page)
	sc := htmltest.SelfCheckAt(t, path, "1400,1000")
	htmltest.AssertSelfCheck(t, sc, charts, "queries-table")
	for _, o := range sc.Overflows {
		if strings.HasPrefix(o.Table, "fix") {
			t.Errorf("at 1400 px the fixes' table %s scrolls sideways: %d px in %d", o.Table, o.ScrollWidth, o.ClientWidth)
		}
	}
	dom := string(htmltest.DumpDOM(t, path, ""))
	box, fixes := strings.Index(dom, `id="verdict"`), strings.Index(dom, `<section id="fixes">`)
	if box < 0 || fixes < 0 || box > strings.Index(dom, "<section") || !strings.Contains(dom, "Fix: create index customers_email_idx") {
		t.Errorf("verdict box at %d, fixes at %d, first section at %d", box, fixes, strings.Index(dom, "<section"))
	}
	htmltest.ScreenshotLogged(t, path, "1400,2400")
}
