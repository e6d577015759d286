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
	"strconv"
	"strings"
	"testing"
)

// docIdent is a Go identifier of this module as the docs write it, in
// backquotes: `rounds.Run`, `judge.Verdict`, `replayrun.Config.Input`,
// `*judge.Comparison`, `rehearse.Judge(...)`. The first element must be
// the last element of one of the module's package paths for the span to
// count, so that SQL (`pg_stat_statements.calls`), file names
// (`rehearsal.json`), flags and JSON fields (lower case after the dot) are
// left alone. Members past the second (`judge.Verdict.Plans.Top`) are
// not followed.
var docIdent = regexp.MustCompile(`^(?:\*|&|\[\])?([a-z][a-z0-9]*)\.([A-Z]\w*)((?:\.[A-Z]\w*)*)(?:\(.*\))?$`)

// codeSpan is an inline code span; fenced blocks are blanked before.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// apiPkg is what one package of the module declares that the docs can
// name: exported package-level identifiers and the members of its types.
type apiPkg struct {
	path  string          // inside the module: internal/judge
	names map[string]bool // every exported package-level name
	vars  map[string]bool // the variables among them
	types map[string]*apiType
}

// apiType is one declared type: its fields and methods, and the types it
// takes members from (embedded fields, the target of an alias).
type apiType struct {
	members map[string]bool
	from    []typeRef
	open    bool // takes members from a type outside the module: any member is accepted
}

// typeRef names a type of the module: its package ("" for the same one)
// and its name.
type typeRef struct{ pkg, name string }

// apiIndex maps a package path's last element to the packages that end
// with it (internal/report and bench/... may share one), and each path to
// its package.
type apiIndex struct {
	byName map[string][]*apiPkg
	byPath map[string]*apiPkg
}

// loadAPI parses every Go file of the module under dir, tests left out
// and every build tag taken, and indexes what each package declares.
func loadAPI(dir string) (*apiIndex, error) {
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	modPath := ""
	for _, line := range strings.Split(string(mod), "\n") {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			modPath = strings.TrimSpace(rest)
		}
	}
	if modPath == "" {
		return nil, fmt.Errorf("go.mod names no module")
	}
	ix := &apiIndex{byName: map[string][]*apiPkg{}, byPath: map[string]*apiPkg{}}
	fset := token.NewFileSet()
	err = moduleFiles(dir, func(path, name string) error {
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := ix.byPath[rel]
		if p == nil {
			p = &apiPkg{path: rel, names: map[string]bool{}, vars: map[string]bool{}, types: map[string]*apiType{}}
			ix.byPath[rel] = p
			last := rel[strings.LastIndex(rel, "/")+1:]
			ix.byName[last] = append(ix.byName[last], p)
		}
		p.add(file, imports(file, modPath))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// imports maps a file's names for the packages it imports to their paths
// inside the module, "" for a package outside it.
func imports(file *ast.File, modPath string) map[string]string {
	m := map[string]string{}
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = ""
		if rel, ok := strings.CutPrefix(path, modPath+"/"); ok {
			m[name] = rel
		}
	}
	return m
}

// typ returns the package's type name, made when first seen (a method
// may come before its type).
func (p *apiPkg) typ(name string) *apiType {
	t := p.types[name]
	if t == nil {
		t = &apiType{members: map[string]bool{}}
		p.types[name] = t
	}
	return t
}

func (p *apiPkg) add(file *ast.File, imp map[string]string) {
	for _, d := range file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.names[d.Name.Name] = true
			} else if len(d.Recv.List) == 1 {
				if recv := recvName(d.Recv.List[0].Type); recv != "" {
					p.typ(recv).members[d.Name.Name] = true
				}
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.names[n.Name] = true
						p.vars[n.Name] = d.Tok == token.VAR
					}
				case *ast.TypeSpec:
					p.names[s.Name.Name] = true
					p.addType(p.typ(s.Name.Name), s.Type, imp)
				}
			}
		}
	}
}

// addType records the members a type expression gives the type t: a
// struct's fields, an interface's methods, and the named types it takes
// members from (embedded ones; the type an alias or a definition names).
func (p *apiPkg) addType(t *apiType, e ast.Expr, imp map[string]string) {
	switch x := e.(type) {
	case *ast.StructType:
		for _, f := range x.Fields.List {
			for _, n := range f.Names {
				t.members[n.Name] = true
			}
			if len(f.Names) == 0 {
				p.addFrom(t, f.Type, imp)
			}
		}
	case *ast.InterfaceType:
		for _, m := range x.Methods.List {
			for _, n := range m.Names {
				t.members[n.Name] = true
			}
			if len(m.Names) == 0 {
				p.addFrom(t, m.Type, imp)
			}
		}
	default:
		p.addFrom(t, e, imp)
	}
}

// addFrom records that t takes the members of the named type e: its own
// name is a member too when e is embedded.
func (p *apiPkg) addFrom(t *apiType, e ast.Expr, imp map[string]string) {
	switch x := e.(type) {
	case *ast.StarExpr:
		p.addFrom(t, x.X, imp)
	case *ast.IndexExpr:
		p.addFrom(t, x.X, imp)
	case *ast.IndexListExpr:
		p.addFrom(t, x.X, imp)
	case *ast.Ident:
		t.members[x.Name] = true
		t.from = append(t.from, typeRef{name: x.Name})
	case *ast.SelectorExpr:
		t.members[x.Sel.Name] = true
		pkgName, _ := x.X.(*ast.Ident)
		if pkgName == nil || imp[pkgName.Name] == "" {
			t.open = true
			return
		}
		t.from = append(t.from, typeRef{pkg: imp[pkgName.Name], name: x.Sel.Name})
	}
}

// recvName is a method receiver's type name: T of (t T), (t *T), (t
// *T[K, V]).
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// hasMember says whether the type name of package p has the member m,
// its own or one it takes from another type (depth bounds a cycle).
func (ix *apiIndex) hasMember(p *apiPkg, name, m string, depth int) bool {
	t := p.types[name]
	if t == nil || depth > 8 {
		return false
	}
	if t.members[m] || t.open {
		return true
	}
	for _, r := range t.from {
		q := p
		if r.pkg != "" {
			q = ix.byPath[r.pkg]
		}
		if q == nil || ix.hasMember(q, r.name, m, depth+1) {
			return true
		}
	}
	return false
}

// resolve says whether a code span names a Go identifier of the module:
// known is false when the span is not one (its first element is no
// package of the module), ok whether the identifier exists. With a
// package name that several packages share, one that has it is enough.
func (ix *apiIndex) resolve(span string) (known, ok bool) {
	m := docIdent.FindStringSubmatch(strings.TrimSpace(span))
	if m == nil || len(ix.byName[m[1]]) == 0 {
		return false, false
	}
	member, _, _ := strings.Cut(strings.TrimPrefix(m[3], "."), ".")
	for _, p := range ix.byName[m[1]] {
		if !p.names[m[2]] {
			continue
		}
		if member == "" {
			return true, true
		}
		if _, isType := p.types[m[2]]; !isType {
			// A variable's members are not followed; a function or a
			// constant has none.
			if p.vars[m[2]] {
				return true, true
			}
			continue
		}
		if ix.hasMember(p, m[2], member, 0) {
			return true, true
		}
	}
	return true, false
}

// fences blanks the fenced code blocks of a markdown text, keeping its
// lines where they are: commands and examples there are not prose.
func fences(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// staleIdents returns, as "name:line: `span`", the code spans of a
// markdown text that name a package of the module and an identifier it
// does not have, and how many spans named one it has.
func (ix *apiIndex) staleIdents(name, text string) (stale []string, resolved int) {
	text = fences(text)
	for _, loc := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		span := text[loc[2]:loc[3]]
		known, ok := ix.resolve(span)
		switch {
		case ok:
			resolved++
		case known:
			line := 1 + strings.Count(text[:loc[0]], "\n")
			stale = append(stale, fmt.Sprintf("%s:%d: `%s`", name, line, span))
		}
	}
	return stale, resolved
}

// TestDocIdentifiers fails when README.md or a page of docs/ names, in
// backquotes, a Go identifier of pgrehearse that the code does not have
// (`pkg.Name`, `pkg.Type.Member`): docs/architecture.md once named four
// that were gone (issue 78).
func TestDocIdentifiers(t *testing.T) {
	dir := root(t)
	ix, err := loadAPI(dir)
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(dir, "docs", "*.md"))
	docs = append(docs, filepath.Join(dir, readmePath))
	total := 0
	for _, p := range docs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		stale, resolved := ix.staleIdents(filepath.ToSlash(rel), string(b))
		total += resolved
		for _, s := range stale {
			t.Errorf("%s names an identifier the code does not have", s)
		}
	}
	t.Logf("%d backquoted identifiers of the code in %d pages, each found", total, len(docs))
	if total < 50 {
		t.Fatalf("found %d identifiers of the code named in the docs: the test's patterns no longer match them", total)
	}
}

// TestDocIdentifiersPlanted plants stale names in a page and checks that
// each is reported at its line, while names that exist and spans that are
// no Go identifier of the module pass.
func TestDocIdentifiersPlanted(t *testing.T) {
	ix, err := loadAPI(root(t))
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Join([]string{
		"# A page",
		"The rounds run in `rounds.Run`, judged by `rehearse.Judge` and `judge.Step`.",
		"A stale one: `rounds.Round` and `fixes.Judge`.",
		"Members: `replayrun.Config.Input`, `event.Event.Lane`, `*judge.Comparison`, `rehearse.Run(ctx, cfg)`.",
		"A gone member: `replayrun.Config.Rounds`; a made-up type `judge.NoSuchVerdict`.",
		"Not identifiers: `rehearsal.json`, `pg_stat_statements.calls`, `--max-width`,",
		"`Outcome.RoundStop`, `report.json`, `SELECT t.Id FROM t`, `time.Duration`.",
		"```",
		"judge.Gone in a fenced block is a command's text, not prose: `judge.Gone`",
		"```",
		"Through an alias and an embedded field: `judge.Comparison.Verdict`, `rehearse.FixRun.Kind`; not there: `judge.Comparison.Nope`.",
		"The last line: `replayrun.RoundFunc`.",
	}, "\n")
	stale, resolved := ix.staleIdents("page.md", page)
	want := []string{
		"page.md:3: `rounds.Round`",
		"page.md:3: `fixes.Judge`",
		"page.md:5: `replayrun.Config.Rounds`",
		"page.md:5: `judge.NoSuchVerdict`",
		"page.md:11: `judge.Comparison.Nope`",
		"page.md:12: `replayrun.RoundFunc`",
	}
	if !slices.Equal(stale, want) {
		t.Errorf("stale names:\n got %q\nwant %q", stale, want)
	}
	if resolved != 9 {
		t.Errorf("resolved %d names, want 9 (rounds.Run, rehearse.Judge, judge.Step, replayrun.Config.Input, event.Event.Lane, *judge.Comparison, rehearse.Run, judge.Comparison.Verdict, rehearse.FixRun.Kind)", resolved)
	}
}
