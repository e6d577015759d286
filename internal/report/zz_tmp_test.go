package report

import (
	"bytes"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"os"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

func TestZZWritePage(t *testing.T) {
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
	os.WriteFile("/tmp/page3.html", []byte(mustPage(t, ComparisonPage(rep, ComparisonOptions{}))), 0o644)
	p := ComparisonPage(rep, ComparisonOptions{})
	var keep []htmlreport.Section
	for _, s := range p.Sections {
		if s.ID == "queries" || s.ID == "errors" {
			keep = append(keep, s)
		}
	}
	p.Sections = keep
	os.WriteFile("/tmp/page3q.html", []byte(mustPage(t, p)), 0o644)
	rep1 := syntheticComparison(t)
	os.WriteFile("/tmp/page1.html", []byte(mustPage(t, ComparisonPage(rep1, ComparisonOptions{}))), 0o644)
}

func mustPage(t *testing.T, p htmlreport.Page) string {
	var buf bytes.Buffer
	if err := htmlreport.Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
