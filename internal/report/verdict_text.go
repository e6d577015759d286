package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
)

// verdictBrokenMax is how many broken rules the verdict block lists one
// by one; the others are named by fingerprint.
const verdictBrokenMax = 10

// VerdictBlock is what a comparison's verdict says before its details:
// the text's first lines (WriteVerdict) and the page's verdict box
// (ComparisonPage) are written from this one value, so that the two
// never say different things.
type VerdictBlock struct {
	// Line is the verdict line (VerdictLine), which names the top
	// regression with its figures.
	Line string
	// Broken are the rules broken, each with the query that broke it
	// (BrokenLine), at most verdictBrokenMax of them; More names the
	// others by rule and fingerprint ("and 3 more: ..."), "" when none.
	Broken []string
	More   string
	// Undecided are the rules queries may break that the rounds could
	// not tell (UndecidedLine), at most verdictBrokenMax of them.
	Undecided []string
	// Top is the top regression's plans, cause and fix; nil when its
	// plans were not explained (or there is no regression).
	Top *TopRegression
}

// TopRegression is the top regression's plans in the verdict: what
// changed in them with its cause, and the fix that the cause points to.
type TopRegression struct {
	// Query names it: its fingerprint and its text on one line.
	Query string
	// Plan is PlanLine's: the plans' change and their cause.
	Plan string
	// Fix is FixText of its first cause; "" when the cause is the change
	// itself or the data, where the fix is a decision.
	Fix string
	// Tried is what the fix rounds found of the fix for it
	// (TopFixWords, the fixes section's words), set by WithFixes; ""
	// before any fix round ran (the text's verdict block, written
	// first).
	Tried string
}

// WithFixes sets the top regression's Tried from the fixes rehearse
// tried (nil: none), so that the page's verdict says the fix's outcome in
// the words of the fixes section, the one source of "verified" (issue
// 57: the banner said "not verified" beside "fix verified (2 rounds)").
func (vb *VerdictBlock) WithFixes(rep *compare.Report, tried []fixes.Outcome) {
	if vb.Top == nil || vb.Top.Fix == "" {
		return
	}
	vb.Top.Tried = TopFixWords(tried, rep.Verdict.Worst)
}

// TopFixWords are the fix rounds' verdict on the fix tried for the
// regression of fingerprint fp, in the fixes section's words ("fix
// verified (3 rounds): within the control's noise"), or that none was
// tried; a fix reverting the change speaks of the cause.
func TopFixWords(tried []fixes.Outcome, fp string) string {
	for _, o := range tried {
		if slices.Contains(o.Fingerprints, fp) && o.Origin != fixes.OriginTry {
			return "Fix rounds: " + o.Name + ": " + fixVerdictWords(o)
		}
	}
	return "Fix rounds: not tried"
}

// NewVerdictBlock is rep's verdict block; plans may be nil (not
// explained).
func NewVerdictBlock(rep *compare.Report, plans *explain.Report) VerdictBlock {
	vb := VerdictBlock{Line: VerdictLine(rep)}
	if rep.Candidate == nil {
		return vb
	}
	broken := rep.Verdict.Broken
	for i, b := range broken {
		if i == verdictBrokenMax {
			fps := make([]string, 0, len(broken)-i)
			for _, x := range broken[i:] {
				fps = append(fps, x.Rule+" "+x.Fingerprint)
			}
			vb.More = fmt.Sprintf("and %d more: %s", len(broken)-i, strings.Join(fps, ", "))
			break
		}
		vb.Broken = append(vb.Broken, BrokenLine(rep, b))
	}
	for i, u := range rep.Verdict.Undecided {
		if i == verdictBrokenMax {
			vb.Undecided = append(vb.Undecided, fmt.Sprintf("and %d more", len(rep.Verdict.Undecided)-i))
			break
		}
		vb.Undecided = append(vb.Undecided, UndecidedLine(rep, u))
	}
	// The verdict line names the top regression with its figures; its
	// plans add the cause, and the cause the fix.
	q := rep.Query(rep.Verdict.Worst)
	if q == nil || !flagged(q.Status) {
		return vb
	}
	o := outcomeOf(plans, q.Fingerprint)
	if o == nil {
		return vb
	}
	vb.Top = &TopRegression{Query: queryName(rep, q.Fingerprint), Plan: PlanLine(o, q.Status)}
	if len(o.Causes) > 0 {
		vb.Top.Fix = FixText(o.Causes[0])
	}
	return vb
}

// WriteVerdict writes the block a comparison's text starts with, so that
// a reader gets the answer from the top (issue 44 counted some 130 lines
// before the FAIL line): the verdict line (which names the top regression
// with its figures), each rule broken with the query that broke it, and,
// when plans holds the top regression's plans, their change, its cause
// and the fix that the cause points to (NewVerdictBlock). plans may be
// nil (not explained). The details follow it
// (WriteComparisonDetails, the plans, the findings).
func WriteVerdict(w io.Writer, rep *compare.Report, plans *explain.Report) error {
	vb := NewVerdictBlock(rep, plans)
	ew := &errWriter{w: w}
	ew.printf("%s\n", vb.Line)
	for _, b := range vb.Broken {
		ew.printf("  %s\n", b)
	}
	if vb.More != "" {
		ew.printf("  %s\n", vb.More)
	}
	for _, u := range vb.Undecided {
		ew.printf("  %s\n", u)
	}
	if line := undecidedReach(rep); line != "" {
		ew.printf("  %s\n", line)
	}
	if t := vb.Top; t != nil {
		ew.printf("  top regression %s: %s\n", t.Query, t.Plan)
		if t.Fix != "" {
			ew.printf("    fix: %s\n", t.Fix)
		}
	}
	return ew.err
}

// outcomeOf is fp's plans in rep, nil when they were not explained.
func outcomeOf(rep *explain.Report, fp string) *explain.Outcome {
	if rep == nil {
		return nil
	}
	for i := range rep.Outcomes {
		if rep.Outcomes[i].Fingerprint == fp {
			return &rep.Outcomes[i]
		}
	}
	return nil
}

// FixText is what a cause points to doing, in a few words: "create it on
// the candidate: CREATE INDEX ...", "run ANALYZE customers on the
// candidate". It is "" for a cause that is the change itself or the data
// (another version, other row counts, an index only the candidate has):
// there the fix is a decision, not a command.
func FixText(c explain.Cause) string {
	switch c.Kind {
	case explain.CauseIndexMissing:
		if c.Control != "" {
			return "create index " + c.Index + " on the " + string(c.Side) + " as on the other side: " + c.Control
		}
		return "create index " + c.Index + " on " + c.Relation + " on the " + string(c.Side)
	case explain.CauseIndexInvalid:
		return "rebuild it on the " + string(c.Side) + ": REINDEX INDEX " + c.Index
	case explain.CauseIndexDiffers:
		return "define index " + c.Index + " on the candidate as on the control: " + c.Control
	case explain.CauseNeverAnalyzed, explain.CauseStaleStatistics:
		return "run ANALYZE " + c.Relation + " on the " + string(c.Side)
	case explain.CauseExtendedStatistics:
		if c.Side == explain.Control {
			// The candidate has statistics the control lacks, and a
			// regression is the candidate's: creating them on the
			// control would make it as slow. What can bring the
			// candidate back is to drop them there (the fix round
			// confirms it), if the queries they were made for allow.
			return "drop the extended statistics " + c.Setting + " on the candidate, as the control has none, if the queries they were made for allow: DROP STATISTICS " + c.Setting
		}
		return "create the extended statistics " + c.Setting + " on the " + string(c.Side) + " as on the " + string(otherSide(c.Side)) +
			", then ANALYZE " + c.Relation
	case explain.CauseStatisticsTarget:
		return "set the statistics target of " + c.Relation + "." + strings.Join(c.Columns, ", ") + " on the candidate to the control's (" +
			c.Control + "), then ANALYZE " + c.Relation
	case explain.CauseSetting:
		if c.Verified {
			return "set " + c.Setting + " to " + c.Control + " on the candidate, the control's value"
		}
		// The plans could not confirm it (planning again with it):
		// not the fix rounds' verdict, which WithFixes says.
		return "try " + c.Setting + " = " + c.Control + " on the candidate, the control's value (the plans could not confirm it)"
	case explain.CauseIndexStopsHOT:
		return "drop index " + c.Index + ", or leave the columns this statement sets out of it, if the reads it serves allow: its updates can then be HOT"
	}
	return ""
}

// undecidedReach says, under undecided rules on the mean or the p95, the
// tightest rule on each that an identical candidate would pass with
// these rounds (compare.Resolution): what a rule must allow for the
// rehearsal to pass it at all. "" without undecided rules or the noise
// measured.
func undecidedReach(rep *compare.Report) string {
	r := rep.Resolution
	if r == nil || len(rep.Verdict.Undecided) == 0 {
		return ""
	}
	var parts []string
	for _, m := range []compare.Metric{compare.MetricMean, compare.MetricP95} {
		f, by := r.MeanClears, r.MeanClearsBy
		if m == compare.MetricP95 {
			f, by = r.P95Clears, r.P95ClearsBy
		}
		if f <= 1 || !slices.ContainsFunc(rep.Verdict.Undecided, func(u compare.Undecided) bool { return u.Metric == m }) {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s>+%s (needed by %s)", m, clearsPct(f), by))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("with these rounds an identical candidate would pass %s %.0f%% of the time", strings.Join(parts, ", "), 100*r.Power)
}
