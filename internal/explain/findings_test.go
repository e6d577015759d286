package explain

import (
	"context"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

func TestForFindings(t *testing.T) {
	p, err := plan.ParseText("Seq Scan on customers  (cost=0.00..1141.00 rows=1 width=22)\n  Filter: (email = $1)")
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Outcomes: []Outcome{{Query: "SELECT * FROM customers WHERE email = $1",
		Explained: []Explained{{Candidate: &SidePlan{Mode: ModeGeneric, Plan: p}}}}}}
	f := rep.ForFindings(Candidate, nil)
	cp, err := f.Explain(context.Background(), catalog.Request{Query: "SELECT * FROM customers WHERE email = $1", Generic: true})
	if err != nil || cp.Mode != "generic" || cp.Root.Type != "Seq Scan" || cp.Root.Relation != "customers" || cp.Root.Filter != "(email = $1)" || cp.Root.TotalCost != 1141 {
		t.Errorf("plan %+v, %v", cp, err)
	}
	if _, err := f.Explain(context.Background(), catalog.Request{Query: "SELECT 1"}); err == nil {
		t.Error("a statement not explained, without a connection")
	}
}
