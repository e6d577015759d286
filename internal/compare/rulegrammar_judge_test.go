package compare_test

import (
	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// compare's tests read their rules by the judge's grammar
// (rulegrammar_test.go).
func init() {
	compare.ParseRuleForTest = judge.ParsePairRule
	compare.ParseRulesForTest = func(values []string) ([]compare.Rule, error) { return judge.ParsePairRules(values) }
}
