package plan_test

import (
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// Two plans of one statement, as EXPLAIN (FORMAT JSON) wrote them on a
// control that has the index and on a candidate that lost it: Compare
// says whether they are the same plan, and First where they differ
// first.
func ExampleCompare() {
	control, err := plan.ParseJSON([]byte(`[{"Plan": {"Node Type": "Index Scan", "Relation Name": "customers",
		"Alias": "customers", "Index Name": "customers_email_idx", "Index Cond": "(email = $1)",
		"Startup Cost": 0.29, "Total Cost": 8.31, "Plan Rows": 1, "Plan Width": 40}}]`))
	if err != nil {
		panic(err)
	}
	candidate, err := plan.ParseJSON([]byte(`[{"Plan": {"Node Type": "Seq Scan", "Relation Name": "customers",
		"Alias": "customers", "Filter": "(email = $1)",
		"Startup Cost": 0, "Total Cost": 1141, "Plan Rows": 1, "Plan Width": 40}}]`))
	if err != nil {
		panic(err)
	}
	d := plan.Compare(control, candidate)
	fmt.Println("same plan:", d.Same)
	if c, a, b, ok := d.First(control, candidate); ok {
		fmt.Printf("%s: %s -> %s\n", c.Kind, a.Label(), b.Label())
	}
	fmt.Println("same plan with itself:", plan.Compare(control, control).Same)
	// Output:
	// same plan: false
	// replaced: Index Scan using customers_email_idx on customers -> Seq Scan on customers
	// same plan with itself: true
}
