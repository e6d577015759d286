package explain

import (
	"context"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
)

// FindingsExplainer serves the findings (missing-index) the plans a Run
// already made on one side, so that a finding and the plan comparison
// read the same plans (the same plan.Plan); what it does not hold (another
// statement, a check with a hypothetical index) goes to Next. It
// satisfies the findings' Explainer.
type FindingsExplainer struct {
	plans map[string]*catalog.Explained
	Next  *catalog.Explainer
}

// ForFindings returns a FindingsExplainer of side's plans, by normalized
// query text; next may be nil when there is no connection to delegate to.
func (r *Report) ForFindings(side Side, next *catalog.Explainer) *FindingsExplainer {
	f := &FindingsExplainer{plans: map[string]*catalog.Explained{}, Next: next}
	for i := range r.Outcomes {
		o := &r.Outcomes[i]
		for _, e := range o.Explained {
			sp := e.Candidate
			if side == Control {
				sp = e.Control
			}
			if sp == nil || sp.Mode == ModeLogged {
				continue
			}
			if _, ok := f.plans[o.Query]; !ok {
				f.plans[o.Query] = explained(sp)
			}
		}
	}
	return f
}

// Explain returns the plan made for r's query, else asks Next.
func (f *FindingsExplainer) Explain(ctx context.Context, r catalog.Request) (*catalog.Explained, error) {
	if p, ok := f.plans[r.Query]; ok && !r.Analyze {
		return p, nil
	}
	if f.Next == nil {
		return nil, errNotExplained
	}
	return f.Next.Explain(ctx, r)
}

// Hypothetical asks Next: a hypothetical index needs the server.
func (f *FindingsExplainer) Hypothetical(ctx context.Context, r catalog.Request, ddl string) (*catalog.Hypo, error) {
	if f.Next == nil {
		return nil, errNotExplained
	}
	return f.Next.Hypothetical(ctx, r, ddl)
}

type notExplained struct{}

func (notExplained) Error() string {
	return "the statement was not explained and there is no connection to explain it"
}

var errNotExplained error = notExplained{}

// explained is a side's plan as the findings' Explainer returns it: the
// plan itself, with the mode named as catalog's Explainer names it.
func explained(sp *SidePlan) *catalog.Explained {
	mode := string(sp.Mode)
	if sp.Plan.Analyzed {
		mode += " analyze"
	}
	return &catalog.Explained{Plan: sp.Plan, Mode: mode}
}
