package archdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// stagePackage is the one package that reads a round's stage to say how
// the round ended: rounds.Ended.Status gives a command the status it
// records (issue 78 item 3).
const stagePackage = "internal/rounds"

// TestOneRoundEnd fails when a command maps a round's end to a status
// itself again: a Go file outside stagePackage (tests and testdata left
// out) with a switch on a round's stage (switch end.Stage), or a switch
// whose cases test it (case end.Stage == rounds.StageReset, case
// rounds.StageLogs). A command takes the status from Ended.Status and
// keeps only its own words.
func TestOneRoundEnd(t *testing.T) {
	found, err := stageSwitches(root(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a switch on a round's stage outside internal/rounds: take the round's status from rounds.Ended.Status", f)
	}
}

// TestStageSwitchesFinds checks that stageSwitches sees what
// TestOneRoundEnd forbids, and lets other switches and stage tests be.
func TestStageSwitchesFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import (
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

func f(end rounds.Ended, st judge.Stage, x struct{ Kind string }) {
	switch end.Stage {
	case rounds.StageReset:
	}
	switch {
	case end.Err != nil:
	case end.Stage == rounds.StageLogs:
	}
	switch st {
	case judge.Stage("x"):
	}
	switch x.Kind {
	case "a":
	}
	if end.Stage == rounds.StageReset {
	}
	switch status, _ := end.Status(); status {
	case rounds.StatusDone:
	}
	switch s := end.Stage; {
	case s == "reset":
	}
}
`
	for name, text := range map[string]string{
		"p.go":                     src,
		"p_test.go":                "package p\n\nfunc g() {\n\tswitch end.Stage {\n\t}\n}\n",
		"internal/rounds/cycle.go": "package rounds\n\nfunc g() {\n\tswitch e.Stage {\n\t}\n}\n",
		"testdata/old/p.go":        "package old\n\nfunc g() {\n\tswitch end.Stage {\n\t}\n}\n",
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := stageSwitches(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "p.go:9: switch end.Stage; p.go:14: a case on end.Stage; p.go:27: switch end.Stage"
	if got := strings.Join(found, "; "); got != want {
		t.Errorf("found %q,\nwant  %q", got, want)
	}
}

// stageSwitches lists, as path:line: what, the switches on a round's
// stage in the Go files under dir (tests, testdata, hidden directories
// and stagePackage left out): a switch whose tag (or init) reads a
// field Stage, or one a case of which reads it or names a constant
// rounds.Stage….
func stageSwitches(dir string) ([]string, error) {
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || rel == stagePackage) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(src), "Stage") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkgs := importNames(f)
		ast.Inspect(f, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok {
				return true
			}
			if what := stageRead(sw.Tag, pkgs); what != "" {
				found = append(found, fmt.Sprintf("%s:%d: switch %s", rel, fset.Position(sw.Pos()).Line, what))
				return true
			}
			if what := stageRead(sw.Init, pkgs); what != "" {
				found = append(found, fmt.Sprintf("%s:%d: switch %s", rel, fset.Position(sw.Pos()).Line, what))
				return true
			}
			for _, s := range sw.Body.List {
				cc, ok := s.(*ast.CaseClause)
				if !ok {
					continue
				}
				for _, e := range cc.List {
					if what := stageRead(e, pkgs); what != "" {
						found = append(found, fmt.Sprintf("%s:%d: a case on %s", rel, fset.Position(e.Pos()).Line, what))
						return true
					}
				}
			}
			return true
		})
		return nil
	})
	return found, err
}

// stageRead says what of a round's stage n reads: a field Stage of a
// value (not a type Stage of an imported package), or a constant
// rounds.Stage…; "" when none.
func stageRead(n ast.Node, pkgs map[string]bool) string {
	if n == nil {
		return ""
	}
	what := ""
	ast.Inspect(n, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || what != "" {
			return what == ""
		}
		id, isIdent := sel.X.(*ast.Ident)
		switch {
		case isIdent && id.Name == "rounds" && strings.HasPrefix(sel.Sel.Name, "Stage"):
			what = "rounds." + sel.Sel.Name
		case sel.Sel.Name == "Stage" && !(isIdent && pkgs[id.Name]):
			what = exprString(sel.X) + ".Stage"
		}
		return what == ""
	})
	return what
}

// importNames are the names a file's imports are known by.
func importNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		names[name] = true
	}
	return names
}

// exprString is a short form of e for a message.
func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	}
	return "…"
}
