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
	// judged by the judge's curve rules (judge.Curves, judge.CurveRule).
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
	checkImportRule(t, "judgedOnlyThrough", "boundaries_test.go", judgedOnlyThrough, false,
		"it must reach it through a library (internal/judge, or the command's own) that takes options and returns typed data")
}

// TestJudgedBy checks that each package of judgedBy imports (outside
// its tests) the judging library named there: a run that judged its
// rounds itself would no longer.
func TestJudgedBy(t *testing.T) {
	checkImportRule(t, "judgedBy", "boundaries_test.go", judgedBy, true,
		`its verdict must come from it (docs/architecture.md, "One judge for every command")`)
}

// checkImportRule checks a rule, named name in file, that maps packages
// to others they must import (imported) or must not (outside their
// tests), and that every package it names exists, so that a rename
// cannot leave the rule checking nothing.
func checkImportRule(t *testing.T, name, file string, rule map[string][]string, imported bool, why string) {
	t.Helper()
	graph := loadGraph(t)
	for p, others := range rule {
		q, ok := graph[p]
		if !ok {
			t.Errorf("%s names %s, which go list ./... does not list (internal/archdoc/%s)", name, p, file)
			continue
		}
		for _, b := range others {
			if _, ok := graph[b]; !ok {
				t.Errorf("%s ties %s to %s, but go list ./... does not list it (internal/archdoc/%s)", name, b, p, file)
			}
			switch has := slices.Contains(q.imports, b); {
			case has && !imported:
				t.Errorf("%s imports %s: %s", p, b, why)
			case !has && imported:
				t.Errorf("%s does not import %s: %s", p, b, why)
			}
		}
	}
}
