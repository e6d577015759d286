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
	// A rehearsal is judged by the judge (rehearse.Judge calls
	// judge.Judge), its fixes too (judge.Fix): no comparison of its own.
	"internal/rehearse": {"internal/compare", "internal/compareplans", "internal/explain", "internal/findings"},
	// A sweep's peak, knee, cliff and comparison of configurations are
	// judged by the judge's curve rules (judge.Curves, judge.Cliff).
	"internal/sweep": {"internal/stepcurve"},
}

// judgedBy are, per package, the judging library it must import: where
// a run's verdict comes from (docs/architecture.md, "One judge for every
// command").
var judgedBy = map[string][]string{
	// Rehearse → Judge: the rehearsal's verdict, its fixes' verdicts and
	// its rounds until decided are the judge's (rehearse.Judge).
	"internal/rehearse": {"internal/judge"},
	// A sweep's curves are judged by the judge's rules.
	"internal/sweep": {"internal/judge"},
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

// TestJudgedBy checks that each package of judgedBy imports (outside
// its tests) the judging library named there: a run that judged its
// rounds itself would no longer.
func TestJudgedBy(t *testing.T) {
	graph := loadGraph(t)
	for p, judges := range judgedBy {
		q, ok := graph[p]
		if !ok {
			t.Errorf("judgedBy names %s, which go list ./... does not list (internal/archdoc/boundaries_test.go)", p)
			continue
		}
		for _, j := range judges {
			if !slices.Contains(q.imports, j) {
				t.Errorf("%s does not import %s: its verdict must come from it (docs/architecture.md, \"One judge for every command\")", p, j)
			}
		}
	}
}
