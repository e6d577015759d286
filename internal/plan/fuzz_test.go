package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkPlan checks what every plan a reader returns must satisfy.
func checkPlan(t *testing.T, p *Plan) {
	t.Helper()
	if p.Root == nil {
		t.Fatal("a plan without a root")
	}
	if p.Hash() != p.Hash() || len(p.Hash()) != 16 || p.Shape() == "" {
		t.Fatalf("hash %q shape %q", p.Hash(), p.Shape())
	}
	d := Compare(p, p)
	if !d.Same || len(d.Changes) != 0 || len(d.Pairs) != len(p.Nodes()) {
		t.Fatalf("a plan differs from itself: %+v", d)
	}
	for _, n := range p.Nodes() {
		_ = n.Label()
		_, _ = WorkOf(n)
	}
	_ = Growths(p, p, d)
	hash := p.Hash()
	p.Redact()
	if p.Hash() != hash {
		t.Fatalf("Redact changed the shape")
	}
}

func addSeeds(f *testing.F, pattern string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds %s: %v", pattern, err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

func FuzzParseText(f *testing.F) {
	addSeeds(f, "testdata/explain/*.text")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseText(s)
		if err != nil {
			return
		}
		checkPlan(t, p)
	})
}

func FuzzParseJSON(f *testing.F) {
	addSeeds(f, "testdata/explain/*.json")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseJSON([]byte(s))
		if err != nil {
			return
		}
		checkPlan(t, p)
	})
}

func FuzzParseAutoExplain(f *testing.F) {
	b, err := os.ReadFile("testdata/autoexplain/stderr.log")
	if err != nil {
		f.Fatal(err)
	}
	for _, part := range strings.Split(string(b), "LOG:  ") {
		f.Add(part)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseAutoExplain(s)
		if err != nil {
			return
		}
		checkPlan(t, p)
	})
}

// FuzzCompare aligns two plans read from text: the alignment must be
// valid whatever the trees.
func FuzzCompare(f *testing.F) {
	files, _ := filepath.Glob("testdata/explain/*.plain.text")
	for i := range files {
		a, _ := os.ReadFile(files[i])
		b, _ := os.ReadFile(files[(i+1)%len(files)])
		f.Add(string(a), string(b))
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		a, err := ParseText(x)
		if err != nil {
			return
		}
		b, err := ParseText(y)
		if err != nil {
			return
		}
		d := Compare(a, b)
		checkPairs(t, d, a, b)
		_ = Growths(a, b, d)
		d.First(a, b)
	})
}
