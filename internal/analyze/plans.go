package analyze

import (
	"maps"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/plan"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// loggedPlans collects, per fingerprint, the plans the server logged
// with auto_explain, by shape: the result keeps the first plan of the
// shape logged most often.
type loggedPlans struct {
	byFP map[string]*fpPlans
}

type fpPlans struct {
	logged int64
	shapes map[string]*shapePlans
}

type shapePlans struct {
	n      int64
	first  int64 // the event time of the first plan of the shape
	plan   *plan.Plan
	format event.PlanFormat
}

func newLoggedPlans() *loggedPlans { return &loggedPlans{byFP: map[string]*fpPlans{}} }

// add parses one logged plan of fingerprint; a plan in a format package
// plan does not read (YAML, XML), or that does not parse, is left out.
func (l *loggedPlans) add(fingerprint string, at int64, p event.Plan) {
	if p.Format != event.PlanText && p.Format != event.PlanJSON {
		return
	}
	pl, err := plan.ParseAutoExplain(p.Text)
	if err != nil || pl.Root == nil {
		return
	}
	f := l.byFP[fingerprint]
	if f == nil {
		f = &fpPlans{shapes: map[string]*shapePlans{}}
		l.byFP[fingerprint] = f
	}
	f.logged++
	h := pl.Hash()
	s := f.shapes[h]
	if s == nil {
		f.shapes[h] = &shapePlans{n: 1, first: at, plan: pl, format: p.Format}
		return
	}
	s.n++
	if at < s.first {
		s.first, s.plan, s.format = at, pl, p.Format
	}
}

func (l *loggedPlans) merge(o *loggedPlans) {
	for fp, of := range o.byFP {
		f := l.byFP[fp]
		if f == nil {
			l.byFP[fp] = of
			continue
		}
		f.logged += of.logged
		for h, os := range of.shapes {
			s := f.shapes[h]
			switch {
			case s == nil:
				f.shapes[h] = os
			default:
				s.n += os.n
				if os.first < s.first {
					s.first, s.plan, s.format = os.first, os.plan, os.format
				}
			}
		}
	}
}

// result returns the plans to keep, by fingerprint; their values are
// removed unless keepValues.
func (l *loggedPlans) result(keepValues bool) []results.LoggedPlan {
	if len(l.byFP) == 0 {
		return nil
	}
	out := make([]results.LoggedPlan, 0, len(l.byFP))
	for _, fp := range slices.Sorted(maps.Keys(l.byFP)) {
		f := l.byFP[fp]
		var best *shapePlans
		for _, h := range slices.Sorted(maps.Keys(f.shapes)) {
			if s := f.shapes[h]; best == nil || s.n > best.n {
				best = s
			}
		}
		p := best.plan
		if !keepValues {
			p.Redact()
		}
		out = append(out, results.LoggedPlan{Fingerprint: fp, Plan: p, Format: best.format.String(), Logged: f.logged, Shapes: len(f.shapes)})
	}
	return out
}
