package archdoc

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cyclePackages may touch a round's reset directly: internal/rounds runs
// the one round cycle (rounds.Run: reset, change, logs, replay, undo,
// release), and internal/reset implements the resets (one may wrap
// another).
var cyclePackages = []string{"internal/rounds", "internal/reset"}

// TestOneRoundCycle fails when a second round cycle appears (issue 60
// item 1): a Go file outside cyclePackages (tests left out) that resets
// a target for a round or releases a round's reset itself (a call
// X.Reset(ctx, n) or X.Release(ctx, state): the two-argument methods of
// reset.Resetter), or that builds its round from rounds' primitives
// (rounds.Round, rounds.Replay, as rehearse's rounds, its fix rounds and
// headroom's steps each did before). A command runs its rounds by
// rounds.Run, and releases a round it kept by rounds.Release.
func TestOneRoundCycle(t *testing.T) {
	dir := root(t)
	found, err := secondCycles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a round cycle outside internal/rounds: run the round by rounds.Run (release a kept one by rounds.Release)", f)
	}
}

// TestSecondCyclesFinds checks that secondCycles sees what
// TestOneRoundCycle forbids, and lets other calls be (a buffer's Reset,
// a timer's, a test's).
func TestSecondCyclesFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package p

func f(ctx context.Context, rs reset.Resetter, buf *bytes.Buffer, tm *time.Timer) {
	st, _ := rs.Reset(ctx, 1)
	buf.Reset()
	tm.Reset(time.Second)
	lc := rounds.Round{Reset: rs, N: 1}
	_, _ = rounds.Replay(ctx, &lc, nil)
	_ = rs.Release(ctx, st)
	_ = rounds.Run(ctx, rounds.Cycle{Reset: rs})
}
`
	for name, text := range map[string]string{
		"p.go":                        src,
		"p_test.go":                   "package p\n\nfunc g() { rs.Reset(ctx, 2) }\n",
		"internal/rounds/rounds.go":   "package rounds\n\nfunc g() { rs.Reset(ctx, 2) }\n",
		"internal/reset/wrap.go":      "package reset\n\nfunc g() { rs.Release(ctx, st) }\n",
		"testdata/old/cycle.go":       "package old\n\nfunc g() { rs.Reset(ctx, 2) }\n",
		"internal/headroom/legacy.go": "package headroom\n\nfunc g(r *rounds.Round) {}\n",
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := secondCycles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "internal/headroom/legacy.go:3: rounds.Round; p.go:4: .Reset(2 arguments); p.go:7: rounds.Round; p.go:8: rounds.Replay; p.go:9: .Release(2 arguments)"
	if got := strings.Join(found, "; "); got != want {
		t.Errorf("found %q,\nwant  %q", got, want)
	}
}

// secondCycles lists, as path:line: what, the places in the Go files
// under dir (tests, testdata, hidden directories and cyclePackages left
// out) that reset or release a round's target themselves or name rounds'
// primitives.
func secondCycles(dir string) ([]string, error) {
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
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			for _, p := range cyclePackages {
				if rel == p {
					return filepath.SkipDir
				}
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
		if !bytes.Contains(src, []byte("Reset(")) && !bytes.Contains(src, []byte("Release(")) && !bytes.Contains(src, []byte("rounds.")) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if what := cycleNode(n); what != "" {
				found = append(found, fmt.Sprintf("%s:%d: %s", rel, fset.Position(n.Pos()).Line, what))
			}
			return true
		})
		return nil
	})
	return found, err
}

// cycleNode says what of a round cycle n is: a two-argument call of a
// method Reset or Release (reset.Resetter's per-round pair), or rounds'
// primitives named; "" when none.
func cycleNode(n ast.Node) string {
	switch x := n.(type) {
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && len(x.Args) == 2 && (sel.Sel.Name == "Reset" || sel.Sel.Name == "Release") {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "rounds" {
				// rounds' own API (rounds.Release takes four).
				return ""
			}
			return fmt.Sprintf(".%s(2 arguments)", sel.Sel.Name)
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "rounds" && (x.Sel.Name == "Round" || x.Sel.Name == "Replay") {
			return "rounds." + x.Sel.Name
		}
	}
	return ""
}
