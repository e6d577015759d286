package archdoc

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// makeMention is a make target named in prose or in a command: `make demo`,
// `make test-versions`. A bare "make" followed by an ordinary word ("make
// one", "make for") is not a target: only the words inside backticks or at
// the start of a command line count.
var makeMention = regexp.MustCompile("(?:`|^\\s*(?:\\$ )?)make ([a-z][a-z0-9-]*)")

// makeRule is a rule's head in the Makefile: "name:" or "a b c:" at the start
// of a line, not a variable assignment (":=").
var makeRule = regexp.MustCompile(`(?m)^([a-z][a-z0-9 -]*):([^=]|$)`)

// TestMakeTargetsDocumented fails when README.md or a page of docs/ names a
// `make X` that the Makefile has no rule for: a target deleted by mistake
// printed "Nothing to be done" and exited 0 (issue 44), so a CI job running
// `make vet` vetted nothing.
func TestMakeTargetsDocumented(t *testing.T) {
	dir := root(t)
	mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, m := range makeRule.FindAllStringSubmatch(string(mk), -1) {
		rules = append(rules, strings.Fields(m[1])...)
	}
	for _, want := range []string{"demo", "test", "build"} {
		if !slices.Contains(rules, want) {
			t.Fatalf("the Makefile parse found no rule %q (rules: %v): the test's parser is wrong", want, rules)
		}
	}
	docs, _ := filepath.Glob(filepath.Join(dir, "docs", "*.md"))
	docs = append(docs, filepath.Join(dir, readmePath), filepath.Join(dir, "deploy", "kubernetes", "README.md"))
	named := 0
	for _, p := range docs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range makeMention.FindAllStringSubmatch(line, -1) {
				named++
				if !slices.Contains(rules, m[1]) {
					rel, _ := filepath.Rel(dir, p)
					t.Errorf("%s:%d names `make %s`, which the Makefile has no rule for", rel, i+1, m[1])
				}
			}
		}
	}
	if named < 5 {
		t.Fatalf("found %d make targets named in the docs: the test's pattern no longer matches them", named)
	}
}
