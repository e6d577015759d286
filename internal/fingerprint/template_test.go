package fingerprint

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// checkTemplate fails when b matches the template of a's shape but does
// not have that shape: match may refuse a text of the shape, never
// accept one of another.
func checkTemplate(t *testing.T, a, b string) (matched bool) {
	t.Helper()
	sh, ok := shape(a, nil)
	if !ok {
		return false
	}
	tm := newTemplate(a, sh, 0)
	if tm == nil || !tm.match(b) {
		return false
	}
	if shb, ok := shapeRef(b, nil); !ok || string(shb) != string(sh) {
		t.Fatalf("%q matches the template of %q (shape %q) but has shape %q, %v", b, a, sh, shb, ok)
	}
	return true
}

// tokens are pieces of SQL that meet at every kind of token boundary
// when concatenated without spaces.
var tokens = []string{
	" ", "\n", "a", "E", "e", "x", "t1", "_", "$", "$1", "$2", "$$", "$q$", "$a$", "1", "22", "0x1F", "1e5", "1.", ".5", ".",
	"'", "'x'", "''", "E'\\''", "'\\'", "\"", "\"c\"", "--", "-- c\n", "/*", "*/", "/* c */", "-", "/", "*", "(", ")", ",", "=", "::", "é", "\x00",
}

func randomText(r *rand.Rand, prefix string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for range r.IntN(12) {
		b.WriteString(tokens[r.IntN(len(tokens))])
	}
	return b.String()
}

// TestTemplateIsSound matches many random texts against each other's
// templates, and checks that texts differing only in constants match.
func TestTemplateIsSound(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	prefixes := []string{"SELECT * FROM t WHERE a = ", "SELECT * FROM t WHERE a = 1", "SELECT * FROM t WHERE abc", "SELECT * FROM t WHERE x.", "SELECT * FROM t WHERE $1"}
	texts := make([]string, 0, 2000)
	for range 1000 {
		texts = append(texts, randomText(r, prefixes[r.IntN(len(prefixes))]))
	}
	// Texts of one skeleton differ in their constants, and in what
	// touches them: many share a shape, many nearly do.
	constants := []string{"1", "22", "0x1F", "1e5", "1.", ".5", "1_0", "'x'", "''", "E'\\''", "e'a'", "$$y$$", "$q$z$q$", "'a''b'"}
	for range 50 {
		skeleton := make([]string, 1+r.IntN(8))
		for i := range skeleton {
			if r.IntN(2) == 0 {
				skeleton[i] = "" // a constant
			} else {
				skeleton[i] = tokens[r.IntN(len(tokens))]
			}
		}
		prefix := prefixes[r.IntN(len(prefixes))]
		for range 20 {
			var b strings.Builder
			b.WriteString(prefix)
			for _, tok := range skeleton {
				if tok == "" {
					tok = constants[r.IntN(len(constants))]
				}
				b.WriteString(tok)
			}
			texts = append(texts, b.String())
		}
	}
	matches := 0
	for _, a := range texts {
		for _, b := range texts {
			if checkTemplate(t, a, b) {
				matches++
			}
		}
	}
	t.Logf("%d of %d pairs matched", matches, len(texts)*len(texts))
	// The fast path must work for the texts it is for.
	for _, c := range []struct{ a, b string }{
		{"SELECT abalance FROM pgbench_accounts WHERE aid = 1", "SELECT abalance FROM pgbench_accounts WHERE aid = 123456"},
		{"SELECT * FROM orders WHERE email = 'a@b' AND n > 3", "SELECT * FROM orders WHERE email = 'it''s' AND n > 1.5e3"},
		{"INSERT INTO items VALUES (1, 'x')", "INSERT INTO items VALUES (42, 'y''z')"},
		{"INSERT INTO items VALUES (-1, E'x')", "INSERT INTO items VALUES (-42, E'y\\'z')"},
		{"UPDATE pgbench_accounts SET abalance = abalance + -1 WHERE aid = 2", "UPDATE pgbench_accounts SET abalance = abalance + -4197 WHERE aid = 58318"},
		{"SELECT * FROM t2 WHERE a = $$x$$", "SELECT * FROM t2 WHERE a = $q$y$q$"},
	} {
		if !checkTemplate(t, c.a, c.b) {
			t.Errorf("%q does not match the template of %q", c.b, c.a)
		}
	}
}

func FuzzTemplate(f *testing.F) {
	for _, c := range [][2]string{
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = 22"},
		{"SELECT * FROM t WHERE id = 'x' AND b = 2", "SELECT * FROM t WHERE id = E'\\'' AND b = .5"},
		{"SELECT * FROM t WHERE a = $$x$$ -- c\n", "SELECT * FROM t WHERE a = $q$;$$$q$ -- c\n"},
		{"SELECT * FROM t WHERE x = 1abc", "SELECT * FROM t WHERE x = 1"},
		{"SELECT * FROM t WHERE x.y = 5", "SELECT * FROM t WHERE x.5 = 5"},
		{"SELECT * FROM t WHERE a = 1 AND b = 'x' AND c = $$y$$", "5|'a''b'|$q$z$q$"},
		{"SELECT * FROM t WHERE a = 1 AND b = 'x'", "1.|e'\\''"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkTemplate(t, a, b)
		// b's pieces in place of a's constants: the spans match, so
		// match decides on the constants and what touches them.
		sh, ok := shape(a, nil)
		if !ok {
			return
		}
		spans := strings.Split(string(sh), "\x00")
		pieces := strings.Split(b, "|")
		var v strings.Builder
		for i, s := range spans {
			v.WriteString(s)
			if i < len(spans)-1 {
				v.WriteString(pieces[i%len(pieces)])
			}
		}
		checkTemplate(t, a, v.String())
	})
}
