package archdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wirePackages read raw protocol messages: each names the protocol's
// bytes (message types, transaction statuses, error fields) through
// internal/wire, the one table of them.
var wirePackages = []string{"internal/proxy", "internal/capture"}

// TestOneTagTable fails when a switch of wirePackages (tests left out)
// has a case spelled as a raw letter or digit literal (case 'B':), the
// way protocol bytes were written before internal/wire named them: a
// second table of tags growing back.
func TestOneTagTable(t *testing.T) {
	dir := root(t)
	for _, p := range wirePackages {
		found, err := rawTagCases(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Errorf("%s/%s: name the protocol byte in internal/wire (tags.go) and use the constant", p, f)
		}
	}
}

// TestRawTagCasesFinds checks that rawTagCases sees what
// TestOneTagTable forbids, and lets other cases be.
func TestRawTagCasesFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package p

func f(typ byte, c rune) int {
	switch typ {
	case 'Q', wireQuery:
		return 1
	case '1':
		return 2
	}
	switch c {
	case '\'', '-', ' ':
		return 3
	}
	return 0
}

const wireQuery = 'Q'
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc g(b byte) bool {\n\tswitch b {\n\tcase 'Z':\n\t\treturn true\n\t}\n\treturn false\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := rawTagCases(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "p.go:5: case 'Q'; p.go:7: case '1'"
	if got := strings.Join(found, "; "); got != want {
		t.Errorf("found %q, want %q", got, want)
	}
}

// rawTagCases lists, as file:line: case 'X', the case clauses of the Go
// files in dir (tests left out) whose list holds a letter or digit
// literal.
func rawTagCases(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var found []string
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, x := range cc.List {
				if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.CHAR && isTagChar(lit.Value) {
					found = append(found, fmt.Sprintf("%s:%d: case %s", name, fset.Position(lit.Pos()).Line, lit.Value))
				}
			}
			return true
		})
	}
	return found, nil
}

// isTagChar reports whether a char literal's source ('B') is a letter
// or a digit, the alphabet of the protocol's type bytes.
func isTagChar(lit string) bool {
	if len(lit) != 3 {
		return false
	}
	c := lit[1]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
