package htmlreport

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
)

type selfCheck struct {
	Library string `json:"library"`
	Charts  []struct {
		ID       string `json:"id"`
		Canvases int    `json:"canvases"`
		SVG      int    `json:"svg"`
		Ink      int    `json:"ink"`
	} `json:"charts"`
	ChartsRendered int `json:"charts_rendered"`
	Tables         []struct {
		ID       string `json:"id"`
		Rows     int    `json:"rows"`
		SortedOK bool   `json:"sorted_ok"`
		Checks   []struct {
			Label  string   `json:"label"`
			First  string   `json:"first"`
			OK     bool     `json:"ok"`
			Values []string `json:"values"` // the column's cells after the first click
		} `json:"checks"`
		Filter *struct {
			Word       string `json:"word"`
			Shown      int    `json:"shown"`
			FirstShown bool   `json:"first_shown"`
		} `json:"filter"`
		DetailShown bool `json:"detail_shown"`
	} `json:"tables"`
	Errors []string `json:"errors"`
}

var selfCheckRE = regexp.MustCompile(`(?s)<pre id="selfcheck"[^>]*>(.*?)</pre>`)

// CheckInBrowser opens the page at path in headless Chromium with
// #selfcheck and returns what the page's own check found.
func checkInBrowser(t *testing.T, path string) selfCheck {
	t.Helper()
	dom := htmltest.DumpDOM(t, path, "selfcheck")
	m := selfCheckRE.FindSubmatch(dom)
	if m == nil || len(bytes.TrimSpace(m[1])) == 0 {
		t.Fatalf("the page wrote no self-check; dumped DOM ends:\n%s", tail(dom, 2000))
	}
	t.Logf("self-check: %s", html.UnescapeString(string(m[1])))
	var sc selfCheck
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &sc); err != nil {
		t.Fatalf("self-check is not JSON: %v\n%s", err, m[1])
	}
	return sc
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// assertSelfCheck checks that every chart drew and every table sorts,
// filters and shows details.
func assertSelfCheck(t *testing.T, sc selfCheck, wantCharts int, wantTables ...string) {
	t.Helper()
	if len(sc.Errors) > 0 {
		t.Fatalf("the page's script failed: %v", sc.Errors)
	}
	if sc.Library == "" {
		t.Error("ECharts did not load")
	}
	if len(sc.Charts) != wantCharts || sc.ChartsRendered != wantCharts {
		t.Errorf("%d charts, %d rendered; want %d", len(sc.Charts), sc.ChartsRendered, wantCharts)
	}
	for _, c := range sc.Charts {
		if c.Ink == 0 && c.SVG == 0 {
			t.Errorf("chart %s is blank (%d canvases)", c.ID, c.Canvases)
		}
	}
	seen := map[string]bool{}
	for _, tb := range sc.Tables {
		seen[tb.ID] = true
		if tb.Rows == 0 {
			continue
		}
		if !tb.SortedOK {
			t.Errorf("table %s does not sort: %+v", tb.ID, tb.Checks)
		}
		if tb.Filter != nil && (!tb.Filter.FirstShown || tb.Filter.Shown == 0) {
			t.Errorf("table %s: filtering on %q hid its own row: %+v", tb.ID, tb.Filter.Word, tb.Filter)
		}
		if !tb.DetailShown {
			t.Errorf("table %s: a click on a row showed no detail", tb.ID)
		}
	}
	for _, id := range wantTables {
		if !seen[id] {
			t.Errorf("sortable table %s missing from the self-check", id)
		}
	}
}

// screenshot saves a picture of the page for a person to look at, and
// logs its path.
func screenshot(t *testing.T, path string) {
	t.Helper()
	png := htmltest.Screenshot(t, path, "1400,2000")
	st, err := os.Stat(png)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %v)", png, err, st)
	}
	t.Logf("screenshot: %s (HTML: %s)", png, path)
}

func TestBrowserComparison(t *testing.T) {
	rep := syntheticComparison(t)
	page := ComparisonPage(rep, ComparisonOptions{Footer: "browser test"})
	path := writePage(t, page)

	sc := checkInBrowser(t, path)
	charts := 0
	for _, s := range page.Sections {
		charts += len(s.Charts)
	}
	if charts < 4 {
		t.Fatalf("the synthetic comparison has %d charts; want distributions and a timeline", charts)
	}
	assertSelfCheck(t, sc, charts, "queries-table")
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
	screenshot(t, path)
}

func TestBrowserSummary(t *testing.T) {
	rep := syntheticSummary(t)
	page := ComparisonPage(rep, ComparisonOptions{})
	path := writePage(t, page)
	charts := 0
	for _, s := range page.Sections {
		charts += len(s.Charts)
	}
	assertSelfCheck(t, checkInBrowser(t, path), charts, "queries-table")
}

func writePage(t *testing.T, p Page) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
