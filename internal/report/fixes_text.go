package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
)

// fixQueryWidth is how much of a query's text a fix's line shows.
const fixQueryWidth = 60

// WriteFixes writes the fixes tried on the candidate and each one's
// verdict: the SQL applied, each regression it is for with and without
// it against the control, the other queries it made regress, and what
// it changed on the writes of its relation, beyond noise or not. Nothing
// when no fix was tried.
func WriteFixes(w io.Writer, tried []fixes.Outcome) error {
	if len(tried) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nFixes tried on the candidate (each in rounds of its own from the reset state, the whole traffic replayed, in turn with the control's rounds it is judged against):\n")
	for _, f := range tried {
		fmt.Fprintf(w, "  %s\n", fixVerdictText(f))
		if f.Status == fixes.NotTried {
			if f.SQL != "" {
				fmt.Fprintf(w, "    not applied: %s\n", oneLine(f.SQL))
			}
			continue
		}
		fmt.Fprintf(w, "    applied: %s\n", oneLine(f.SQL))
		if len(f.ControlRounds) > 0 {
			fmt.Fprintf(w, "    judged against the control's %s %s, run in turn with the fix's\n",
				plural(len(f.ControlRounds), "round", "rounds"), fixRounds(f.ControlRounds))
		}
		for _, line := range fixFigureLines(f) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	return nil
}

// fixRounds is "3, 7": the rounds' numbers, as in the rehearsal's
// index.
func fixRounds(seqs []int) string {
	ids := make([]int64, len(seqs))
	for i, s := range seqs {
		ids[i] = int64(s)
	}
	return joinIDs(ids)
}

// fixVerdictText is a fix's verdict line: its name, then
// fixVerdictWords.
func fixVerdictText(f fixes.Outcome) string {
	return f.Name + ": " + fixVerdictWords(f)
}

// fixVerdictWords is a fix's verdict in words, with the rounds it rests
// on: "fix verified (2 rounds): within the control's noise", "not tried:
// the server refused it: ERROR: ...". A fix that reverts the change
// itself is a verdict on the cause.
func fixVerdictWords(f fixes.Outcome) string {
	rounds := strconv.Itoa(f.Rounds) + " " + plural(f.Rounds, "round", "rounds")
	if f.Reverts() {
		switch f.Status {
		case fixes.Verified:
			return fmt.Sprintf("reverts the change: confirms the cause (%s): within the control's noise", rounds)
		case fixes.Partial:
			return fmt.Sprintf("reverts the change: a partial cause: %.0f%% of the regression recovered (%s); another cause remains", f.RecoveredPct, rounds)
		case fixes.NoEffect:
			return fmt.Sprintf("reverts the change: no effect (%s): the cause is not confirmed", rounds)
		}
	}
	switch f.Status {
	case fixes.Verified:
		return fmt.Sprintf("fix verified (%s): within the control's noise", rounds)
	case fixes.Partial:
		return fmt.Sprintf("fix partial: %.0f%% of the regression recovered (%s); another cause remains", f.RecoveredPct, rounds)
	case fixes.NoEffect:
		return fmt.Sprintf("no effect (%s)", rounds)
	case fixes.Tried:
		return fmt.Sprintf("tried (%s): no regression to judge it on against the control", rounds)
	}
	if f.Untried != "" {
		return "not tried: " + f.Untried
	}
	if f.NotApplied != "" {
		return "not tried: the server refused it: " + oneLine(f.NotApplied)
	}
	return "not tried: no fix round finished"
}

// fixFigureLines are a tried fix's figures in words, a line each: each
// regression it is for with and without it against the control, the
// other queries that regressed with it only (or that none did), and what
// it cost the queries that write its relation.
func fixFigureLines(f fixes.Outcome) []string {
	var out []string
	for _, q := range f.Queries {
		if q.WorkMetric != "" {
			// A work regression: its work, not its time.
			out = append(out, fmt.Sprintf("%s: %s per call %s against the control with the fix (%s without)",
				shorten(oneLine(DisplayQuery(q.Query)), fixQueryWidth), WorkMetricName(q.WorkMetric), fmtWorkEffect(q.WorkWith), fmtWorkEffect(q.WorkBefore)))
			continue
		}
		line := fmt.Sprintf("%s: %s against the control with the fix (%s without); %s with it, %s per run without",
			shorten(oneLine(DisplayQuery(q.Query)), fixQueryWidth), fmtEffect(q.With), fmtEffect(q.Before),
			addedWith(q), fmtSignedTotal(q.AddedMSBefore))
		out = append(out, line+fixQueryDeltaWords(q))
	}
	for _, c := range f.Costs {
		figure := fmtFactor(c.Factor)
		if c.Effect != nil {
			figure = fmtEffect(c.Effect)
		}
		line := fmt.Sprintf("regressed with the fix only: %s: %s, %s %s per run",
			shorten(oneLine(DisplayQuery(c.Query)), fixQueryWidth), fixCostWords(c), figure, fmtSignedTotal(c.AddedMS))
		if c.Elsewhere {
			line += "; " + elsewhereCostWords(f.Relation)
		}
		out = append(out, line)
	}
	if len(f.Costs) == 0 {
		out = append(out, "no other query regressed with the fix")
	}
	out = append(out, fixWithinNoiseLines(f)...)
	if f.JudgedByChanges() {
		out = append(out, fixChangeLines(f.Changes)...)
	}
	return append(out, fixWritesLines(f)...)
}

// elsewhereCostWords say of a cost of a fix on a query that does not
// touch the fix's relation (fixes.Cost.Elsewhere) why it is a cost all
// the same: the judge (judge.Fix) keeps such a query a cost only when the
// comparison is certain of it beyond the rounds' noise at the family's
// level.
func elsewhereCostWords(rel string) string {
	return "it does not touch " + rel + ", which the fix changes, yet it is slower beyond the rounds' noise at the family's level"
}

// fixWithinNoiseLines are the queries the fix does not touch that the
// comparison with the control called slower with the fix, too few rounds
// a side to tell that from the machine's noise between rounds
// (fixes.Outcome.WithinNoise): context, said not to be a regression.
func fixWithinNoiseLines(f fixes.Outcome) []string {
	var out []string
	for _, c := range f.WithinNoise {
		figure := fmtFactor(c.Factor)
		if c.Effect != nil {
			figure = fmtEffect(c.Effect)
		}
		out = append(out, fmt.Sprintf("within noise, not a regression: %s: %s %s against the control with the fix, %s per run; it does not touch %s, which the fix changes, and %s",
			shorten(oneLine(DisplayQuery(c.Query)), fixQueryWidth), fixCostWords(c), figure, fmtSignedTotal(c.AddedMS), f.Relation, withinNoiseWhy(f)))
	}
	return out
}

// withinNoiseWhy says why a fix's comparison with the control does not
// reach the family's level: its rounds, fewer than the three a side that
// measure the rounds' noise, or its results' lack of histograms.
func withinNoiseWhy(f fixes.Outcome) string {
	if n := min(f.Rounds, len(f.ControlRounds)); n > 0 && n < fixes.DefaultRounds {
		return fmt.Sprintf("%d %s a side cannot tell that from the machine's noise between rounds", n, plural(n, "round", "rounds"))
	}
	return "the comparison cannot tell that from the machine's noise between rounds"
}

// addedWith is the time a regression adds per run against the control
// with the fix. A query no longer flagged adds none by the verdict's
// reckoning (judge.Fix counts 0): not a measured +0, which its ratio
// with its interval beside it (~ 2.05x) would contradict, but within the
// control's noise.
func addedWith(q fixes.Query) string {
	if q.NoneAdded() {
		return "no time added per run beyond the control's noise"
	}
	return fmtSignedTotal(q.AddedMSWith) + " per run added"
}

// fixQueryDeltaWords say, for a regression the comparison with the
// control still flags with the fix, what the fix did to it against the
// candidate without it (the direct comparison the verdict rests on), and
// the figure that remains of a query verified on the one that
// regressed; "" for a query no longer flagged.
func fixQueryDeltaWords(q fixes.Query) string {
	if !q.WithStatus.Regression() {
		return ""
	}
	s := ""
	if q.Delta != nil {
		s = fmt.Sprintf("; %s %s against the candidate without the fix", q.Metric, fmtEffect(q.Delta))
	}
	if q.Remains != "" {
		s += fmt.Sprintf("; %s back within the control's noise, its %s still slower: %s", q.Metric, q.Remains, fmtEffect(q.RemainsWith))
	}
	return s
}

// fixChangeLines are every query the user's own fix made faster or
// slower beyond noise than the candidate without it, with its mean
// against the control; a fix that changed none is said so.
func fixChangeLines(changes []fixes.Change) []string {
	if len(changes) == 0 {
		return []string{"no query faster or slower beyond noise than on the candidate without it"}
	}
	var out []string
	for _, c := range changes {
		figure := "mean " + fmtEffect(c.Effect)
		switch {
		case c.Work != nil:
			figure = workChangeText(c.Metric, c.Work)
		case c.Metric != compare.MetricMean:
			figure = string(c.Metric) + " " + fmtEffect(c.Effect)
		}
		if c.Effect != nil && c.Work == nil {
			figure += ", " + fmtSignedMS(c.Effect.DeltaMS) + " ms per call"
		}
		control := ""
		if c.Control != nil {
			control = "; mean " + fmtEffect(c.Control) + " against the control with it"
		}
		out = append(out, fmt.Sprintf("%s beyond noise than on the candidate without it: %s: %s%s",
			c.Direction, shorten(oneLine(DisplayQuery(c.Query)), fixQueryWidth), figure, control))
	}
	return out
}

// fixWritesLines say what a tried fix cost the queries that write its
// relation, against the candidate without it, beyond noise or not; or
// that no query of the traffic writes it.
func fixWritesLines(f fixes.Outcome) []string {
	var out []string
	if f.Relation != "" && len(f.Writes) == 0 {
		out = append(out, fmt.Sprintf("no query of the traffic writes %s: what the fix costs its writes is not measured here", f.Relation))
	}
	for _, wr := range f.Writes {
		beyond := "within noise"
		if wr.Beyond {
			beyond = "slower beyond noise"
		}
		delta := ""
		if wr.Mean != nil {
			delta = ", " + fmtSignedMS(wr.Mean.DeltaMS) + " ms per call"
		}
		out = append(out, fmt.Sprintf("writes %s: %s: mean %s against the candidate without the fix%s, %s",
			f.Relation, shorten(oneLine(DisplayQuery(wr.Query)), fixQueryWidth), fmtEffect(wr.Mean), delta, beyond))
	}
	return out
}

// fixCostWords says how a query regressed with a fix.
func fixCostWords(c fixes.Cost) string {
	switch c.Status {
	case compare.StatusMoreWork:
		return "writes more"
	case compare.StatusTailRegressed:
		return "its tail slower"
	}
	return "slower"
}
