package explain

import (
	"context"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// FindingsExplainer serves the findings (missing-index) the plans a Run
// already made on one side, as catalog plans, so that a finding and the
// plan comparison read the same plans; what it does not hold (another
// statement, a check with a hypothetical index) goes to Next. It
// satisfies the findings' Explainer.
type FindingsExplainer struct {
	plans map[string]*catalog.Plan
	Next  *catalog.Explainer
}

// ForFindings returns a FindingsExplainer of side's plans, by normalized
// query text; next may be nil when there is no connection to delegate to.
func (r *Report) ForFindings(side Side, next *catalog.Explainer) *FindingsExplainer {
	f := &FindingsExplainer{plans: map[string]*catalog.Plan{}, Next: next}
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
				f.plans[o.Query] = ToCatalog(sp.Plan, sp.Mode)
			}
		}
	}
	return f
}

// Explain returns the plan made for r's query, else asks Next.
func (f *FindingsExplainer) Explain(ctx context.Context, r catalog.Request) (*catalog.Plan, error) {
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

// ToCatalog converts a plan to the findings' form.
func ToCatalog(p *plan.Plan, mode Mode) *catalog.Plan {
	out := &catalog.Plan{Mode: string(mode), PlanningMS: max(p.PlanningMS, 0)}
	if p.Analyzed {
		out.Mode += " analyze"
	}
	if p.Root != nil {
		out.Root = toCatalogNode(p.Root)
	}
	return out
}

func toCatalogNode(n *plan.Node) catalog.PlanNode {
	c := catalog.PlanNode{NodeType: n.Type, Relation: n.Relation, Alias: n.Alias, IndexName: n.Index, Filter: n.Filter,
		PlanRows: n.PlanRows, TotalCost: n.TotalCost}
	if n.Actual != nil {
		c.Removed = n.Actual.RemovedByFilter
	}
	for _, ch := range n.Children {
		c.Plans = append(c.Plans, toCatalogNode(ch))
	}
	return c
}
