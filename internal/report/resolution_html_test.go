package report

import (
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/goldentest"
)

var (
	summaryRE = regexp.MustCompile(`(?s)<section id="summary">.*?</section>`)
	queriesRE = regexp.MustCompile(`(?s)<section id="queries">.*?</section>`)
)

// TestResolutionHTMLGolden: with the noise measured, the page shows
// what the text does (TestResolutionText): each regression's and each
// query's next-run interval and smallest change told beside its change
// with its interval, in a query's detail too, the run's resolution lines,
// and the sentence of which interval the verdict judges, in the text's
// words; the summary and all-queries sections are in
// testdata/resolution_html.golden (go test -update rewrites it). One run
// a side shows none of it.
func TestResolutionHTMLGolden(t *testing.T) {
	rep := resolvedComparison(t)
	out := renderPage(t, ComparisonPage(rep, ComparisonOptions{}))
	sum, qs := summaryRE.FindString(out), queriesRE.FindString(out)
	if sum == "" || qs == "" {
		t.Fatalf("summary %d bytes, queries %d bytes", len(sum), len(qs))
	}
	goldentest.Check(t, filepath.Join("testdata", "resolution_html.golden"), sum+"\n"+qs+"\n")
	plain := html.UnescapeString(tagRE.ReplaceAllString(sum+qs, " "))
	var text strings.Builder
	if err := WriteComparisonDetails(&text, rep, 10); err != nil {
		t.Fatal(err)
	}
	// The same figures and words as the text's row, lines and legend.
	lines := append(ResolutionLines(rep), ResolvedLegend...)
	wantIn(t, "the page", plain, append(lines, "next run", "can tell", "3.00x (2.80-3.22)", "2.66-3.39", "+12%",
		"the verdict judges the mean's interval, never this one")...)
	flat := strings.Join(strings.Fields(text.String()), " ")
	for _, l := range lines {
		if !strings.Contains(flat, l) {
			t.Errorf("the text lacks the page's line %q", l)
		}
	}
	// A query's detail: the next run and what its rounds can tell in
	// the table of its figures.
	d := queryDetail(rep, rep.Query("slow"))
	if got := strings.Join(d.Table.Head, "|"); got != "|baseline|candidate|C/B (interval)|next run|can tell|floor" {
		t.Errorf("detail head %s", got)
	}
	if got := strings.Join(d.Table.Rows[3], "|"); !strings.HasPrefix(got, "mean|") || !strings.Contains(got, "|2.66-3.39|+12%|") {
		t.Errorf("detail mean row %s", got)
	}

	one := renderPage(t, ComparisonPage(syntheticComparison(t), ComparisonOptions{}))
	for _, w := range []string{"next run", "can tell", "Smallest change these rounds"} {
		if strings.Contains(one, w) {
			t.Errorf("a page of one run a side shows %q", w)
		}
	}
}
