package report

import (
	"bytes"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/goldentest"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// verdictComparison is TestVerdictFirst's comparison: one query three
// times slower, breaking mean>+50%, with the plans of its lookup (whose
// index the candidate lacks).
func verdictComparison(t *testing.T) (*compare.Report, *explain.Report) {
	t.Helper()
	rep := slowerComparison(t, nil, nil)
	plans := plansReport(t)
	plans.Outcomes[0].Fingerprint = "slow" // the lookup whose index is missing
	return rep, plans
}

// slowerComparison compares a replay of serverRows with one whose query
// "slow" is three times slower, under mean>+50%; baseExtra and candExtra
// add to each replay's result (its lag, for one).
func slowerComparison(t *testing.T, baseExtra, candExtra map[string]any) *compare.Report {
	t.Helper()
	base := replayRun(t, "base.json", baseExtra, serverRows, nil)
	slower := append([]map[string]any{row("slow", 20, 30, 40)}, serverRows[0], serverRows[2], serverRows[3], serverRows[4])
	cand := replayRun(t, "cand.json", candExtra, slower, nil)
	rules := rulesOf(t, "mean>+50%")
	rep, err := compare.Compare(base, cand, compare.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

var (
	verdictBoxRE = regexp.MustCompile(`(?s)<div class="verdict [^"]*" id="verdict">.*?</div>`)
	fixesRE      = regexp.MustCompile(`(?s)<section id="fixes">.*?</section>`)
	tagRE        = regexp.MustCompile(`<[^>]+>`)
)

// TestVerdictFirstHTML: the page reads from the top as the text does
// (issue 44): its verdict box, before any section, says what the text's
// verdict block says, line for line from the same VerdictBlock (the
// verdict line, the rule broken by which query, the top regression's
// cause and fix), and the details (the summary, the fixes) come after
// it.
func TestVerdictFirstHTML(t *testing.T) {
	rep, plans := verdictComparison(t)
	out := renderPage(t, ComparisonPage(rep, ComparisonOptions{Plans: plans, Fixes: triedFixes()}))
	loc := verdictBoxRE.FindStringIndex(out)
	if loc == nil {
		t.Fatal("no verdict box in the page")
	}
	box := html.UnescapeString(out[loc[0]:loc[1]])
	for _, details := range []string{`<section id="summary">`, `<section id="fixes">`, `<section id="queries">`} {
		at := strings.Index(out, details)
		if at < 0 || at < loc[1] {
			t.Errorf("%s at %d, want after the verdict box (ends at %d)", details, at, loc[1])
		}
	}
	if first := strings.Index(out, "<section"); first < loc[1] {
		t.Errorf("a section (at %d) comes before the verdict box's end (%d)", first, loc[1])
	}

	// The box says each line of the text's verdict block.
	var text strings.Builder
	if err := WriteVerdict(&text, rep, plans); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("text verdict of %d lines, want 4:\n%s", len(lines), text.String())
	}
	for i, line := range lines {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "top regression "):
			line = "Top regression " + strings.TrimPrefix(line, "top regression ")
		case strings.HasPrefix(line, "fix: "):
			line = "Fix: " + strings.TrimPrefix(line, "fix: ")
		}
		if !strings.Contains(box, ">"+line+"<") {
			t.Errorf("verdict line %d %q is not an element of the page's verdict box:\n%s", i+1, line, box)
		}
	}
	if !strings.Contains(box, `class="verdict-focus">Top regression slow "SELECT slow": plan changed`) ||
		!strings.Contains(box, `class="verdict-action">Fix: create index customers_email_idx`) {
		t.Errorf("the top regression's cause and fix are not in the box:\n%s", box)
	}
	// Issue 57: and what the fix rounds found of it, in the fixes
	// section's words (one source of "verified"); a fix not tried
	// is said not tried.
	if want := `class="verdict-action">Fix rounds: index-customers_email_idx: fix verified (2 rounds): within the control's noise<`; !strings.Contains(box, want) {
		t.Errorf("the box lacks the fix's outcome %q:\n%s", want, box)
	}
	notTried := triedFixes()
	notTried[0].Status, notTried[0].Rounds = fixes.NotTried, 0
	for _, tried := range [][]fixes.Outcome{nil, notTried} {
		box := html.UnescapeString(verdictBoxRE.FindString(renderPage(t, ComparisonPage(rep, ComparisonOptions{Plans: plans, Fixes: tried}))))
		if !strings.Contains(box, `class="verdict-action">Fix rounds: `) || strings.Contains(box, "verified") {
			t.Errorf("a fix not tried (%d outcomes): the box says\n%s", len(tried), box)
		}
	}

	// Without plans, no top regression is named, as in the text.
	out = renderPage(t, ComparisonPage(rep, ComparisonOptions{}))
	if box := verdictBoxRE.FindString(out); box == "" || strings.Contains(box, "Top regression") || strings.Contains(box, "Fix:") {
		t.Errorf("verdict box without plans:\n%s", box)
	}
	if strings.Contains(out, `id="fixes"`) {
		t.Error("a page without fixes has a fixes section")
	}
}

// TestVerdictHTMLBrokenCapped: the box lists the rules broken as the
// text does, at most verdictBrokenMax, the others named in one line.
func TestVerdictHTMLBrokenCapped(t *testing.T) {
	rep, _ := verdictComparison(t)
	for range verdictBrokenMax + 2 {
		rep.Verdict.Broken = append(rep.Verdict.Broken, rep.Verdict.Broken[0])
	}
	v := ComparisonPage(rep, ComparisonOptions{}).Verdict
	if len(v.Items) != verdictBrokenMax+1 || v.Items[verdictBrokenMax] != "and 3 more: mean>+50% slow, mean>+50% slow, mean>+50% slow" {
		t.Errorf("verdict items: %q", v.Items)
	}
}

// TestFixesSection: rehearse's fixes on the page say what its text says
// of them, from the same typed outcomes: each verdict with the SQL
// applied (or refused, with the server's error), the regression with
// the fix against the control with its interval beside the figure
// without, and the other queries that regressed with the fix only.
func TestFixesSection(t *testing.T) {
	s := FixesSection(triedFixes())
	if s.ID != "fixes" || s.Title != "Does the fix work" || len(s.Tables) != 3 {
		t.Fatalf("section %s %q with %d tables", s.ID, s.Title, len(s.Tables))
	}
	cells := func(r htmlreport.Row) []string {
		var out []string
		for _, c := range r.Cells {
			out = append(out, c.Text)
		}
		return out
	}
	verdicts := s.Tables[0]
	want := [][]string{
		{"index-customers_email_idx", "fix verified (2 rounds): within the control's noise", "CREATE INDEX customers_email_idx ON public.customers USING btree (email)", "2"},
		{"setting-random_page_cost", "fix partial: 62% of the regression recovered (2 rounds); another cause remains", `ALTER DATABASE "shop" SET "random_page_cost" = '4'`, "none"},
		{"index-customers_key", `not tried: the server refused it: ERROR: could not create unique index "customers_key" (SQLSTATE 23505)`, "not applied: CREATE UNIQUE INDEX customers_key ON customers (name)", "-"},
		{"setting-shared_buffers", "not tried: it needs a restart of the server", `not applied: ALTER SYSTEM SET "shared_buffers" = '1GB'`, "-"},
		{"analyze-orders", "no effect (2 rounds)", `ANALYZE "orders"`, "none"},
	}
	if len(verdicts.Rows) != len(want) {
		t.Fatalf("%d fixes in the table, want %d", len(verdicts.Rows), len(want))
	}
	for i, w := range want {
		if got := cells(verdicts.Rows[i]); strings.Join(got, " | ") != strings.Join(w, " | ") {
			t.Errorf("fix %d:\n got %q\nwant %q", i+1, got, w)
		}
	}
	if c := []string{verdicts.Rows[0].Class, verdicts.Rows[2].Class, verdicts.Rows[4].Class}; strings.Join(c, ",") != "good,muted,bad" {
		t.Errorf("row classes verified, not tried, no effect: %q", c)
	}
	// The detail holds the text's lines.
	var text bytes.Buffer
	if err := WriteFixes(&text, triedFixes()); err != nil {
		t.Fatal(err)
	}
	for _, n := range verdicts.Rows[0].Detail.Notes {
		if !strings.Contains(text.String(), "    "+n+"\n") {
			t.Errorf("detail note %q is not a line of the text:\n%s", n, text.String())
		}
	}

	queries := s.Tables[1]
	wantQ := [][]string{
		{"index-customers_email_idx", "mean", "~ 1.020x (0.90-1.20)", "40.00x (30.00-55.00)", "within noise", "+5.20 s", "SELECT id FROM customers WHERE email = $1"},
		{"setting-random_page_cost", "p95", "3.10x (2.60-3.70)", "8.20x (7.10-9.50)", "+338 ms", "+900 ms", "SELECT * FROM orders WHERE customer_id = $1"},
	}
	if len(queries.Rows) != len(wantQ) {
		t.Fatalf("%d regressions with and without a fix, want %d: %+v", len(queries.Rows), len(wantQ), queries.Rows)
	}
	for i, w := range wantQ {
		if got := cells(queries.Rows[i]); strings.Join(got, " | ") != strings.Join(w, " | ") {
			t.Errorf("regression %d:\n got %q\nwant %q", i+1, got, w)
		}
	}
	if c := queries.Rows[0].Cells[2].Class; c != "ci good" {
		t.Errorf("a verified fix's figure is classed %q", c)
	}

	costs := s.Tables[2]
	if len(costs.Rows) != 2 || strings.Join(cells(costs.Rows[0]), " | ") != "index-customers_email_idx | slower | 1.40x | +30.0 ms | UPDATE customers SET email = $1 WHERE id = $2" ||
		strings.Join(cells(costs.Rows[1]), " | ") != "index-customers_email_idx | slower; it does not touch customers, which the fix changes, yet it is slower beyond the rounds' noise at the family's level | 11.17x (2.10-40.00) | +192 ms | UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2" {
		t.Errorf("costs: %+v", costs.Rows)
	}
	notes := strings.Join(s.Notes, "\n")
	wantIn(t, "notes", notes,
		"index-customers_email_idx: writes customers: INSERT INTO customers VALUES ($1, $2): mean 1.30x (1.20-1.50) against the candidate without the fix, +0.020 ms per call, slower beyond noise",
		"analyze-orders: no query of the traffic writes orders: what the fix costs its writes is not measured here",
		"index-customers_email_idx: within noise, not a regression: UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE …: slower 5.55x (1.26-24.43) against the control with the fix",
	)
}

// TestVerdictFixesHTMLGolden: the page's verdict box and its fixes
// section as HTML, in testdata/verdict_fixes_html.golden (go test
// -update rewrites it).
func TestVerdictFixesHTMLGolden(t *testing.T) {
	rep, plans := verdictComparison(t)
	out := renderPage(t, ComparisonPage(rep, ComparisonOptions{Plans: plans, Fixes: triedFixes()}))
	box, fx := verdictBoxRE.FindString(out), fixesRE.FindString(out)
	if box == "" || fx == "" {
		t.Fatalf("verdict box %d bytes, fixes section %d bytes", len(box), len(fx))
	}
	got := box + "\n" + fx + "\n"
	golden := filepath.Join("testdata", "verdict_fixes_html.golden")
	goldentest.Check(t, golden, got)
	// Every figure the golden shows is text a person reads.
	if plain := tagRE.ReplaceAllString(fx, " "); !strings.Contains(html.UnescapeString(plain), "~ 1.020x (0.90-1.20)") {
		t.Error("the fixes section lacks the verified fix's ratio with its interval")
	}
}

// TestPageCountedOrNot: on the page a query is either a regression,
// which may break a rule, or slower while the server was busier and not
// counted, never both (issue 44 read a rule "broken by 4 queries" beside
// "4 more queries ... not counted"). Beside a dominant regression, a
// query 1.5x slower is not counted; with a rule it breaks, it is a
// regression, named in the verdict box and the worst regressions, and
// not in the table of those not counted.
func TestPageCountedOrNot(t *testing.T) {
	base, cand := busierRuns(t)
	const slowed = "b2c3d4e5f6071829"
	for _, tc := range []struct {
		rule    string
		counted bool
	}{{"", false}, {"mean>+20%", true}} {
		t.Run("rule "+tc.rule, func(t *testing.T) {
			var rules []compare.Rule
			if tc.rule != "" {
				var err error
				if rules, err = judge.ParsePairRules([]string{tc.rule}); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := compare.Runs(base, cand, compare.Options{Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			p := ComparisonPage(rep, ComparisonOptions{})
			inBox := strings.Contains(strings.Join(p.Verdict.Items, "\n"), "broken by "+slowed)
			inTable := func(id string) bool {
				for _, tb := range p.Sections[0].Tables {
					if tb.ID != id {
						continue
					}
					for _, r := range tb.Rows {
						if strings.HasPrefix(r.Cells[len(r.Cells)-1].Title, slowed) {
							// A row not counted is not red either.
							if red := strings.Contains(r.Cells[2].Class, "bad"); red != (id == "worst") {
								t.Errorf("%s in table %s: its figure's class %q", slowed, id, r.Cells[2].Class)
							}
							return true
						}
					}
				}
				return false
			}
			worst, busier := inTable("worst"), inTable("busier")
			if inBox != tc.counted || worst != tc.counted || busier == tc.counted {
				t.Errorf("%s: in the verdict box %v, the worst regressions %v, not counted %v; want counted %v\nverdict %q",
					slowed, inBox, worst, busier, tc.counted, p.Verdict.Items)
			}
			notCounted := strings.Contains(p.Verdict.Line, "not counted")
			if notCounted == tc.counted {
				t.Errorf("verdict line says not counted %v, want %v: %s", notCounted, !tc.counted, p.Verdict.Line)
			}
		})
	}
}
