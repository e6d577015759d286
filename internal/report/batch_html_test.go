package report

import (
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/goldentest"
)

var batchRE = regexp.MustCompile(`(?s)<section id="batch-inserts">.*?</section>`)

// batchMeasure is a measure of batches of 50 into events: the time per
// row cut 9x, the WAL per row 1.3x.
func batchMeasure() *findings.BatchMeasure {
	return &findings.BatchMeasure{Max: 50, Rounds: 3, Tables: []string{"events"},
		Time: findings.Factor{Ratio: 9, Low: 8.1, High: 10.2, Level: 0.95},
		WAL:  &findings.Factor{Ratio: 1.3, Low: 1.2, High: 1.4, Level: 0.95}}
}

// TestBatchHTMLGolden: rehearse --batch-inserts' page says what batching
// the INSERTs saved per row, time and WAL, each factor with its interval,
// as the text does (issue 48), in testdata/batch_html.golden (go test
// -update rewrites it); the section comes after the fixes, and a page
// without the measure has none.
func TestBatchHTMLGolden(t *testing.T) {
	rep, plans := verdictComparison(t)
	out := renderPage(t, ComparisonPage(rep, ComparisonOptions{Plans: plans, Fixes: triedFixes(), Batched: batchMeasure()}))
	sec := batchRE.FindString(out)
	if sec == "" {
		t.Fatal("the page has no batch-inserts section")
	}
	if fx := strings.Index(out, `<section id="fixes">`); fx < 0 || fx > strings.Index(out, sec) {
		t.Error("the batched INSERTs do not come after the fixes")
	}
	got := sec + "\n"
	golden := filepath.Join("testdata", "batch_html.golden")
	goldentest.Check(t, golden, got)
	plain := html.UnescapeString(tagRE.ReplaceAllString(sec, " "))
	wantIn(t, "the section", plain, "time per row: batches of 50 would cut it by 9x (8.1–10.2) (95% interval)", "WAL per row: batches of 50 would cut it by 1.3x (1.2–1.4)")
	if out := renderPage(t, ComparisonPage(rep, ComparisonOptions{Plans: plans})); strings.Contains(out, `id="batch-inserts"`) {
		t.Error("a page without a batch measure has a batch-inserts section")
	}
}

// TestBatchCutWords: a factor is called a cut only when its whole
// interval is one; one whose interval holds 1 is no change told from
// noise, and one below 1 a rise, never "cut by 0.8x".
func TestBatchCutWords(t *testing.T) {
	for _, tc := range []struct {
		f    findings.Factor
		want string
	}{
		{findings.Factor{Ratio: 9, Low: 8.1, High: 10.2}, "cut it by 9x (8.1–10.2)"},
		{findings.Factor{Ratio: 1.1, Low: 0.9, High: 1.3}, "change it by no more than noise: ~ 1.1x (0.9–1.3)"},
		{findings.Factor{Ratio: 0.8, Low: 0.7, High: 0.9}, "raise it: 0.8x (0.7–0.9) (below 1, the batched rows cost more)"},
	} {
		if got := batchCutWords(tc.f); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
		sec := BatchSection(&findings.BatchMeasure{Max: 10, Rounds: 2, Tables: []string{"t"}, Time: tc.f})
		if !strings.Contains(sec.Notes[0], tc.want) {
			t.Errorf("%+v: the section says %q, want %q", tc.f, sec.Notes[0], tc.want)
		}
		if sec.Cards[1].Value != "not measured" {
			t.Errorf("WAL card without a WAL measure: %+v", sec.Cards[1])
		}
	}
}
