// Package htmltest opens pgrehearse's HTML pages in headless Chromium for
// tests: the DOM after the page's scripts ran, and a screenshot for a
// person to look at. It is for tests only.
package htmltest

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Chromium is the browser the tests use, from Debian's chromium package.
const Chromium = "/usr/bin/chromium"

// flags keep a headless Chromium off this machine's closed network and
// away from any profile but a fresh one.
var flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars", "--virtual-time-budget=5000"}

func run(t testing.TB, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		t.Fatalf("headless Chromium is needed at %s to test the HTML pages; install it with:\n  apt-get update && apt-get install -y chromium\n(make test does so as root)", Chromium)
	}
	profile, err := os.MkdirTemp("", "pgrehearse-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Chromium, append(append(append([]string{}, flags...), "--user-data-dir="+profile), args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.Bytes())
	}
	return out
}

// DumpDOM returns the DOM of the page at path once its scripts ran;
// fragment, when not empty, is added to the URL ("selfcheck" runs the
// pages' self-checks).
func DumpDOM(t testing.TB, path, fragment string) []byte {
	t.Helper()
	url := "file://" + path
	if fragment != "" {
		url += "#" + fragment
	}
	return run(t, "--dump-dom", url)
}

// Screenshot saves a picture of the page at path, width × height pixels,
// in a directory left behind for a person to look at, and returns its path.
func Screenshot(t testing.TB, path, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgrehearse-screenshot-")
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, filepath.Base(path)+".png")
	run(t, "--window-size="+size, "--screenshot="+png, "file://"+path)
	return png
}

// Check is what a page's own self-check (its URL ending in #selfcheck)
// found: the charts drawn and what every sortable table did.
type Check struct {
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
	// ViewportWidth and PageWidth are the window's width and the page's
	// (wider when it scrolls sideways); Overflows the tables whose box
	// scrolls sideways.
	ViewportWidth int `json:"viewport_width"`
	PageWidth     int `json:"page_width"`
	Overflows     []struct {
		Table       string `json:"table"`
		ScrollWidth int    `json:"scroll_width"`
		ClientWidth int    `json:"client_width"`
	} `json:"overflows"`
}

var selfCheckRE = regexp.MustCompile(`(?s)<pre id="selfcheck"[^>]*>(.*?)</pre>`)

// SelfCheck opens the page at path in headless Chromium with #selfcheck
// and returns what the page's own check found.
func SelfCheck(t testing.TB, path string) Check {
	t.Helper()
	return SelfCheckAt(t, path, "")
}

// SelfCheckAt is SelfCheck in a window of size ("1280,900"; "" for
// Chromium's default), to check what fits the page at that width.
func SelfCheckAt(t testing.TB, path, size string) Check {
	t.Helper()
	url := "file://" + path + "#selfcheck"
	args := []string{"--dump-dom", url}
	if size != "" {
		args = append([]string{"--window-size=" + size}, args...)
	}
	dom := run(t, args...)
	m := selfCheckRE.FindSubmatch(dom)
	if m == nil || len(bytes.TrimSpace(m[1])) == 0 {
		t.Fatalf("the page wrote no self-check; dumped DOM ends:\n%s", dom[max(0, len(dom)-2000):])
	}
	t.Logf("self-check: %s", html.UnescapeString(string(m[1])))
	var sc Check
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &sc); err != nil {
		t.Fatalf("self-check is not JSON: %v\n%s", err, m[1])
	}
	return sc
}

// AssertSelfCheck checks that the page's script ran, that its wantCharts
// charts all drew, and that every sortable table with rows sorts, filters
// and shows details; wantTables must be among the tables checked.
func AssertSelfCheck(t testing.TB, sc Check, wantCharts int, wantTables ...string) {
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

// WriteFile writes a rendered page into the test's temporary directory
// and returns its path.
func WriteFile(t testing.TB, name string, page []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ScreenshotLogged saves a picture of the page for a person to look at,
// checks that it holds something, and logs its path.
func ScreenshotLogged(t testing.TB, path, size string) {
	t.Helper()
	png := Screenshot(t, path, size)
	st, err := os.Stat(png)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %v)", png, err, st)
	}
	t.Logf("screenshot: %s (HTML: %s)", png, path)
}

// AssertOffline checks that a written page loads nothing from outside
// (no remote script, style or link) and that its three inline scripts
// (options, library, page) are the only ones: a query or a cell holding
// "</script" must not have closed one early.
func AssertOffline(t testing.TB, page string) {
	t.Helper()
	for _, bad := range []string{`src="http`, `href="http`, `src="//`, "<link ", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page loads something from outside: %q", bad)
		}
	}
	if n := strings.Count(strings.ToLower(page), "</script"); n != 3 {
		t.Errorf("%d </script> in the page, want 3: a text or the library closed a script early", n)
	}
}
