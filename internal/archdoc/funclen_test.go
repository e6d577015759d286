package archdoc

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of the module may span,
// outside tests and generated code: past it, a function does several
// things that each deserve a name.
const maxFuncLines = 120

// longFuncs are the functions over maxFuncLines when the rule came, as
// file:function (a method as file:Type.Method). The list only shrinks:
// a function split below the limit must leave it (TestFuncLength says
// so), and no function may join it.
var longFuncs = []string{}

// longFunc is a function over maxFuncLines.
type longFunc struct {
	name  string // file:function, as longFuncs names it
	lines int
}

// TestFuncLength checks that no function outside tests and generated
// code is longer than maxFuncLines lines but those of longFuncs, and
// that each of longFuncs still is.
func TestFuncLength(t *testing.T) {
	long, err := longFunctions(root(t))
	if err != nil {
		t.Fatal(err)
	}
	over := map[string]bool{}
	for _, f := range long {
		over[f.name] = true
		if !slices.Contains(longFuncs, f.name) {
			t.Errorf("%s is %d lines long, over %d: split it into functions that each do one thing", f.name, f.lines, maxFuncLines)
		}
	}
	for _, name := range longFuncs {
		if !over[name] {
			t.Errorf("%s is no longer over %d lines (or is gone): take it out of longFuncs in internal/archdoc/funclen_test.go", name, maxFuncLines)
		}
	}
}

// longFunctions lists the functions over maxFuncLines in the module's
// Go files under dir, tests and generated files left out.
func longFunctions(dir string) ([]longFunc, error) {
	var long []longFunc
	fset := token.NewFileSet()
	err := moduleFiles(dir, func(path, name string) error {
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines {
				long = append(long, longFunc{name: filepath.ToSlash(rel) + ":" + funcName(fn), lines: lines})
			}
		}
		return nil
	})
	return long, err
}

// funcName is fn's name, a method's with its receiver's type: T.M.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	var b bytes.Buffer
	if id, ok := typ.(*ast.Ident); ok {
		b.WriteString(id.Name)
	} else {
		fmt.Fprintf(&b, "%T", typ)
	}
	return b.String() + "." + fn.Name.Name
}
