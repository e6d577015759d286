package htmlreport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
)

// primitivesPage uses every primitive once: a verdict, cards, notes, a
// chart, and a sortable, filterable table whose rows open a detail, one of
// them holding HTML that must stay text.
func primitivesPage() Page {
	return Page{Title: "primitives", Subtitle: "every part once", Footer: "page test",
		Verdict: &Verdict{Status: "fail", Line: "FAIL: a rule is broken", Items: []string{"p95>+20% broken by q2"}},
		Sections: []Section{{ID: "one", Title: "One section",
			Text:  []string{"A paragraph."},
			Cards: []Card{{Label: "calls", Value: "1,200", Sub: "in 60 s"}, {Label: "failed", Value: "3", Status: "bad"}},
			Notes: []string{"a note"},
			Charts: []Chart{{Title: "calls per second", Option: json.RawMessage(
				`{"xAxis":{"type":"value"},"yAxis":{"type":"value"},"series":[{"type":"line","data":[[0,1],[1,3],[2,2]]}]}`)}},
			Tables: []Table{{ID: "t", Title: "Queries", Sortable: true, Filter: true,
				Columns: []Column{{Label: "query"}, {Label: "calls", Numeric: true}},
				Rows: []Row{
					{Cells: []Cell{Text("SELECT 1"), Num("10", 10)}, Detail: &Detail{Title: "q1", Code: "SELECT 1"}},
					{Cells: []Cell{Text("SELECT '</script><b>not bold</b>'"), Num("30", 30)}, Class: "bad",
						Detail: &Detail{Title: "q2", Table: &SimpleTable{Head: []string{"", "value"}, Rows: [][]string{{"mean", "1 ms"}}}, Notes: []string{"slow"}}},
					{Cells: []Cell{Text("UPDATE t SET x = 1"), Num("20", 20)}, Detail: &Detail{Title: "q3"}},
				}}},
		}},
	}
}

func TestWriteSelfContainedPrimitives(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, primitivesPage()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	htmltest.AssertOffline(t, out)
	if !strings.Contains(out, "&lt;/script&gt;&lt;b&gt;not bold") {
		t.Error("a cell holding HTML is not escaped")
	}
	for _, want := range []string{`class="verdict verdict-fail"`, "FAIL: a rule is broken", `class="card card-bad"`, `id="chart1"`, `id="t"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestLibraryCannotCloseItsScript(t *testing.T) {
	lib, err := files.ReadFile("assets/echarts.common.min.js")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ToLower(lib), []byte("</script")) || bytes.Contains(lib, []byte("<!--")) {
		t.Error("the chart library holds </script or <!--, which would end or confuse its inline script element")
	}
}

func TestWriteRejects(t *testing.T) {
	tests := []struct {
		name string
		page Page
		want string
	}{
		{"bad option", Page{Sections: []Section{{Charts: []Chart{{Option: json.RawMessage(`{`)}}}}}, "not valid JSON"},
		{"duplicate id", Page{Sections: []Section{{Charts: []Chart{{ID: "x", Option: json.RawMessage(`{}`)}, {ID: "x", Option: json.RawMessage(`{}`)}}}}}, "used twice"},
	}
	for _, tt := range tests {
		err := Write(&bytes.Buffer{}, tt.page)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
}
