package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/numfmt"
)

// WriteFindings writes findings for a person to read: each finding with
// its evidence and recommendation, then what was not evaluated, with the
// hints for what those lacked.
func WriteFindings(w io.Writer, r *findings.Report, h Hints) error {
	var b strings.Builder
	if len(r.Findings) == 0 {
		b.WriteString("Findings: none\n")
	} else {
		fmt.Fprintf(&b, "Findings: %d (%d critical, %d warning, %d info)\n", len(r.Findings), r.Count(findings.Critical), r.Count(findings.Warning), r.Count(findings.Info))
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n[%s] %s: %s\n", strings.ToUpper(string(f.Severity)), f.ID, f.Subject)
		fmt.Fprintf(&b, "  %s\n", f.Summary)
		if len(f.Evidence.Figures) > 0 {
			parts := make([]string, len(f.Evidence.Figures))
			for i, x := range f.Evidence.Figures {
				parts[i] = x.Name + " " + x.Text
			}
			fmt.Fprintf(&b, "  evidence: %s\n", strings.Join(parts, ", "))
		}
		for _, q := range f.Evidence.Queries {
			fmt.Fprintf(&b, "  query %s  %s calls  %s ms  %s\n", q.Fingerprint, numfmt.Figure(float64(q.Calls)), numfmt.Figure(round(q.TotalMS, 1)), OneLine(q.Query, 100))
		}
		for _, t := range f.Evidence.Tables {
			fmt.Fprintf(&b, "  %s:\n", t.Title)
			fmt.Fprintf(&b, "    %s\n", strings.Join(t.Head, " | "))
			for _, row := range t.Rows {
				cells := make([]string, len(row))
				for i, c := range row {
					cells[i] = OneLine(c, 100)
				}
				fmt.Fprintf(&b, "    %s\n", strings.Join(cells, " | "))
			}
		}
		for _, n := range f.Evidence.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		if m := f.Model; m != nil {
			fmt.Fprintf(&b, "  model: %s\n", m.Rule)
			parts := make([]string, len(m.Inputs))
			for i, x := range m.Inputs {
				parts[i] = x.Name + " " + x.Text
			}
			fmt.Fprintf(&b, "  inputs: %s\n", strings.Join(parts, ", "))
			fmt.Fprintf(&b, "  source: %s\n", m.Source)
		}
		fmt.Fprintf(&b, "  recommendation: %s\n", f.Recommendation)
		if f.Untried != "" {
			fmt.Fprintf(&b, "  not tried on a copy: %s\n", f.Untried)
		}
	}
	if len(r.NotEvaluated) > 0 {
		b.WriteString("\nNot evaluated:\n")
		for _, s := range r.NotEvaluated {
			fmt.Fprintf(&b, "  %s: %s\n", s.ID, skipReason(s, h))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// round rounds v to digits decimals, as findings rounds its figures.
func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
