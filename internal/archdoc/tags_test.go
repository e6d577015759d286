package archdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// wireRoots read raw protocol messages, they and every package under
// them: each names the protocol's bytes (message types, transaction
// statuses, error fields) through internal/wire, the one table of them,
// and follows a session's statements and portals with its one tracker
// (wire.Names).
var wireRoots = []string{"internal/proxy", "internal/capture"}

// wirePackages are the packages that speak the protocol: those of
// wireRoots and every other package that imports internal/wire, which
// itself is the table and is left out.
func wirePackages(t *testing.T) []string {
	var out []string
	for path, p := range loadGraph(t) {
		under := false
		for _, r := range wireRoots {
			under = under || path == r || strings.HasPrefix(path, r+"/")
		}
		if path != "internal/wire" && (under || slices.Contains(p.imports, "internal/wire")) {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

// TestOneTagTable fails when a switch of a package that speaks the
// protocol (wirePackages, tests left out) has a case spelled as a raw
// letter or digit literal (case 'B':), the way protocol bytes were
// written before internal/wire named them: a second table of tags
// growing back.
func TestOneTagTable(t *testing.T) {
	dir := root(t)
	pkgs := wirePackages(t)
	for _, r := range wireRoots {
		if !slices.Contains(pkgs, r) {
			t.Fatalf("%s is not among the packages that speak the protocol %q", r, pkgs)
		}
	}
	for _, p := range pkgs {
		found, err := rawTagCases(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Errorf("%s/%s: name the protocol byte in internal/wire (tags.go) and use the constant", p, f)
		}
	}
}

// TestOneNameTracker fails when a package that speaks the protocol
// (wirePackages, tests left out) keeps a map of its own keyed by the
// name of a prepared statement or portal: a field, variable or map
// whose name or value type says statement, stmt, portal or prepared.
// The proxy's session state and the capture decoder each kept two
// such maps before wire.Names was their one tracker.
func TestOneNameTracker(t *testing.T) {
	dir := root(t)
	for _, p := range wirePackages(t) {
		found, err := nameMaps(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Errorf("%s/%s: follow statements and portals with wire.Names (internal/wire/names.go)", p, f)
		}
	}
}

// TestNameMapsFinds checks that nameMaps sees what TestOneNameTracker
// forbids, and lets other maps be.
func TestNameMapsFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package p

type prepared struct{ query string }

type session struct {
	stmts    map[string]prepared
	portalQ  map[string]string
	settings map[string]string
	names    tracker
}

var byPID = map[uint32]string{}

func f() {
	cache := map[string]*prepared{}
	_ = cache
}

type tracker struct{}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nvar portals = map[string]int{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := nameMaps(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "p.go:6: map of stmts; p.go:7: map of portalQ; p.go:15: map of *prepared"
	if got := strings.Join(found, "; "); got != want {
		t.Errorf("found %q, want %q", got, want)
	}
}

// nameWords are what a map keyed by statement or portal names is
// called, or holds.
var nameWords = regexp.MustCompile(`(?i)stmt|statement|portal|prepared`)

// nameMaps lists, as file:line: map of X, the maps keyed by strings in
// the Go files of dir (tests left out) whose field or variable, or
// whose value type, is named for statements or portals: by its field
// or variable where it is declared, by its value type elsewhere.
func nameMaps(dir string) ([]string, error) {
	var found []string
	err := goFiles(dir, func(fset *token.FileSet, name string, f *ast.File) {
		seen := map[*ast.MapType]bool{}
		note := func(m *ast.MapType, what string) {
			seen[m] = true
			found = append(found, fmt.Sprintf("%s:%d: map of %s", name, fset.Position(m.Pos()).Line, what))
		}
		named := func(names []*ast.Ident, typ ast.Expr) {
			m, ok := typ.(*ast.MapType)
			if !ok || !stringKey(m) {
				return
			}
			for _, id := range names {
				if nameWords.MatchString(id.Name) {
					note(m, id.Name)
					return
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Field:
				named(x.Names, x.Type)
			case *ast.ValueSpec:
				named(x.Names, x.Type)
			case *ast.MapType:
				if v := typeName(x.Value); !seen[x] && stringKey(x) && nameWords.MatchString(v) {
					note(x, v)
				}
			}
			return true
		})
	})
	return found, err
}

func stringKey(m *ast.MapType) bool {
	id, ok := m.Key.(*ast.Ident)
	return ok && id.Name == "string"
}

// typeName is how a map's value type is written: prepared, *portal,
// pkg.Stmt.
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return "*" + typeName(x.X)
	case *ast.SelectorExpr:
		return typeName(x.X) + "." + x.Sel.Name
	}
	return ""
}

// goFiles parses the Go files of dir, tests left out, and hands each to
// f.
func goFiles(dir string, f func(fset *token.FileSet, name string, file *ast.File)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		f(fset, name, file)
	}
	return nil
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
	var found []string
	err := goFiles(dir, func(fset *token.FileSet, name string, f *ast.File) {
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
	})
	return found, err
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
