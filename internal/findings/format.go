package findings

import (
	"math"

	"github.com/pgrehearse/pgrehearse/internal/numfmt"
)

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// fnum formats a figure for people: see numfmt.Figure.
func fnum(v float64) string { return numfmt.Figure(v) }

func fig(name string, v float64, unit string) Figure {
	t := fnum(v)
	if unit != "" {
		t += " " + unit
	}
	return Figure{Name: name, Value: round(v, 3), Unit: unit, Text: t}
}

func pct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}

// Figure returns the figure called name, and whether f has it.
func (f *Finding) Figure(name string) (Figure, bool) {
	for _, x := range f.Evidence.Figures {
		if x.Name == name {
			return x, true
		}
	}
	if f.Model != nil {
		for _, x := range f.Model.Inputs {
			if x.Name == name {
				return x, true
			}
		}
	}
	return Figure{}, false
}
