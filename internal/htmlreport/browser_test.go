package htmlreport

import (
	"bytes"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
)

// TestBrowserPrimitives: in a real browser the page's script draws the
// chart, sorts the table by each column both ways, filters it and opens a
// row's detail (the page's own #selfcheck).
func TestBrowserPrimitives(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, primitivesPage()); err != nil {
		t.Fatal(err)
	}
	path := htmltest.WriteFile(t, "primitives.html", buf.Bytes())
	sc := htmltest.SelfCheck(t, path)
	htmltest.AssertSelfCheck(t, sc, 1, "t")
	for _, tb := range sc.Tables {
		if tb.ID == "t" && (tb.Rows != 3 || tb.Filter == nil) {
			t.Errorf("table %s: %d rows, filter %+v", tb.ID, tb.Rows, tb.Filter)
		}
	}
}
