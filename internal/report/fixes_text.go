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
	fmt.Fprintf(w, "\nFixes tried on the candidate (each in rounds of its own from the reset state, the whole traffic replayed):\n")
	for _, f := range tried {
		fmt.Fprintf(w, "  %s\n", fixVerdictText(f))
		if f.Status == fixes.NotTried {
			if f.SQL != "" {
				fmt.Fprintf(w, "    not applied: %s\n", oneLine(f.SQL))
			}
			continue
		}
		fmt.Fprintf(w, "    applied: %s\n", oneLine(f.SQL))
		for _, q := range f.Queries {
			if q.WorkMetric != "" {
				// A work regression: its work, not its time.
				fmt.Fprintf(w, "    %s: %s per call %s against the control with the fix (%s without)\n",
					shorten(oneLine(q.Query), fixQueryWidth), WorkMetricName(q.WorkMetric), fmtWorkEffect(q.WorkWith), fmtWorkEffect(q.WorkBefore))
				continue
			}
			fmt.Fprintf(w, "    %s: %s against the control with the fix (%s without); %s per run added with it, %s without\n",
				shorten(oneLine(q.Query), fixQueryWidth), fmtEffect(q.With), fmtEffect(q.Before),
				fmtSignedTotal(q.AddedMSWith), fmtSignedTotal(q.AddedMSBefore))
		}
		for _, c := range f.Costs {
			fmt.Fprintf(w, "    regressed with the fix only: %s: %s, %s %s per run\n",
				shorten(oneLine(c.Query), fixQueryWidth), fixCostWords(c), fmtFactor(c.Factor), fmtSignedTotal(c.AddedMS))
		}
		if len(f.Costs) == 0 {
			fmt.Fprintf(w, "    no other query regressed with the fix\n")
		}
		if f.Origin == fixes.OriginTry {
			writeFixChanges(w, f.Changes)
		}
		if f.Relation != "" && len(f.Writes) == 0 {
			fmt.Fprintf(w, "    no query of the traffic writes %s: what the fix costs its writes is not measured here\n", f.Relation)
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
			fmt.Fprintf(w, "    writes %s: %s: mean %s against the candidate without the fix%s, %s\n",
				f.Relation, shorten(oneLine(wr.Query), fixQueryWidth), fmtEffect(wr.Mean), delta, beyond)
		}
	}
	return nil
}

// writeFixChanges writes every query the user's own fix made faster or
// slower beyond noise than the candidate without it, with its mean
// against the control; a fix that changed none is said so.
func writeFixChanges(w io.Writer, changes []fixes.Change) {
	if len(changes) == 0 {
		fmt.Fprintf(w, "    no query faster or slower beyond noise than on the candidate without it\n")
		return
	}
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
		fmt.Fprintf(w, "    %s beyond noise than on the candidate without it: %s: %s%s\n",
			c.Direction, shorten(oneLine(c.Query), fixQueryWidth), figure, control)
	}
}

// fixVerdictText is a fix's verdict line.
func fixVerdictText(f fixes.Outcome) string {
	rounds := strconv.Itoa(f.Rounds) + " " + plural(f.Rounds, "round", "rounds")
	if f.Reverts() {
		// Undoing the change itself: the verdict is on the cause.
		switch f.Status {
		case fixes.Verified:
			return fmt.Sprintf("%s: reverts the change: confirms the cause (%s): within the control's noise", f.Name, rounds)
		case fixes.Partial:
			return fmt.Sprintf("%s: reverts the change: a partial cause: %.0f%% of the regression recovered (%s); another cause remains", f.Name, f.RecoveredPct, rounds)
		case fixes.NoEffect:
			return fmt.Sprintf("%s: reverts the change: no effect (%s): the cause is not confirmed", f.Name, rounds)
		}
	}
	switch f.Status {
	case fixes.Verified:
		return fmt.Sprintf("%s: fix verified (%s): within the control's noise", f.Name, rounds)
	case fixes.Partial:
		return fmt.Sprintf("%s: fix partial: %.0f%% of the regression recovered (%s); another cause remains", f.Name, f.RecoveredPct, rounds)
	case fixes.NoEffect:
		return fmt.Sprintf("%s: no effect (%s)", f.Name, rounds)
	case fixes.Tried:
		return fmt.Sprintf("%s: tried (%s): no regression to judge it on against the control", f.Name, rounds)
	}
	if f.Untried != "" {
		return fmt.Sprintf("%s: not tried: %s", f.Name, f.Untried)
	}
	if f.NotApplied != "" {
		return fmt.Sprintf("%s: not tried: the server refused it: %s", f.Name, oneLine(f.NotApplied))
	}
	return fmt.Sprintf("%s: not tried: no fix round finished", f.Name)
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
