package archdoc

import (
	"slices"
	"testing"
)

// judgedOnlyThrough are, per package, the packages of a lower layer that
// it must still not import (its tests may): their work is reached
// through a library that takes its own options and returns typed data.
// internal/cli only parses flags, calls a library and renders: the
// comparison, the plans, the findings and a load level's verdict are the
// judge's (internal/judge) or a command's library's, never the CLI's, so
// that every command judges the same way and no domain package learns a
// flag.
var judgedOnlyThrough = map[string][]string{
	"internal/cli": {
		"internal/compare", "internal/compareplans", "internal/explain",
		"internal/findings", "internal/stepcurve",
	},
}

// TestImportsThroughLibraries checks that no package imports (outside
// its tests) what judgedOnlyThrough keeps from it, and that every
// package named there still exists, so that a rename cannot leave the
// rule checking nothing.
func TestImportsThroughLibraries(t *testing.T) {
	graph := loadGraph(t)
	for p, banned := range judgedOnlyThrough {
		q, ok := graph[p]
		if !ok {
			t.Errorf("judgedOnlyThrough names %s, which go list ./... does not list (internal/archdoc/boundaries_test.go)", p)
			continue
		}
		for _, b := range banned {
			if _, ok := graph[b]; !ok {
				t.Errorf("judgedOnlyThrough keeps %s from %s, but go list ./... does not list it (internal/archdoc/boundaries_test.go)", b, p)
			}
			if slices.Contains(q.imports, b) {
				t.Errorf("%s imports %s: it must reach it through a library (internal/judge, or the command's own) that takes options and returns typed data", p, b)
			}
		}
	}
}
