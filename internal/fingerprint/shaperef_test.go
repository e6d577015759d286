package fingerprint

import (
	"strings"
	"testing"
)

// shapeRef is the first, byte-at-a-time shape lexer, kept as the
// reference that the table-driven one must agree with byte for byte.
func shapeRef(text string, buf []byte) ([]byte, bool) {
	if !isDMLRef(text) {
		return buf, false
	}
	masked := 0
	n := len(text)
	for i := 0; i < n; {
		c := text[i]
		switch {
		case c == '\'':
			// A prefix letter (E, B, X, N, U&) stays in the shape.
			escapes := i > 0 && (text[i-1] == 'E' || text[i-1] == 'e') && (i < 2 || !isIdent(text[i-2]))
			end, ok := endQuoted(text, i, escapes)
			if !ok {
				return buf, false
			}
			buf = append(buf, shapeMark)
			masked++
			i = end
		case c == '"':
			end, ok := endQuoted(text, i, false)
			if !ok {
				return buf, false
			}
			buf = append(buf, text[i:end]...) // an identifier, kept
			i = end
		case c == '$' && (i == 0 || !isIdent(text[i-1])):
			j := i + 1
			if j < n && isDigit(text[j]) { // a parameter, kept
				for j < n && isDigit(text[j]) {
					j++
				}
				buf = append(buf, text[i:j]...)
				i = j
				continue
			}
			for j < n && isIdent(text[j]) && text[j] != '$' {
				j++
			}
			if j >= n || text[j] != '$' {
				return buf, false
			}
			tag := text[i : j+1]
			end := strings.Index(text[j+1:], tag)
			if end < 0 {
				return buf, false
			}
			buf = append(buf, shapeMark)
			masked++
			i = j + 1 + end + len(tag)
		case c == '-' && i+1 < n && text[i+1] == '-':
			j := i
			for j < n && text[j] != '\n' {
				j++
			}
			buf = append(buf, text[i:j]...)
			i = j
		case c == '/' && i+1 < n && text[i+1] == '*':
			end, ok := endComment(text, i)
			if !ok {
				return buf, false
			}
			buf = append(buf, text[i:end]...)
			i = end
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(text[i+1])):
			end, ok := endNumber(text, i)
			if !ok {
				return buf, false
			}
			buf = append(buf, shapeMark)
			masked++
			i = end
		case isIdent(c):
			j := i
			for j < n && isIdent(text[j]) {
				j++
			}
			buf = append(buf, text[i:j]...)
			i = j
		case c == shapeMark:
			return buf, false
		default:
			buf = append(buf, c)
			i++
		}
	}
	return buf, masked > 0
}

var dmlKeywordsRef = [...]string{"select", "insert", "update", "delete", "with", "values", "table"}

func isDMLRef(text string) bool {
	i := 0
	for i < len(text) {
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(':
			i++
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			end, ok := endComment(text, i)
			if !ok {
				return false
			}
			i = end
		default:
			j := i
			for j < len(text) && isIdent(text[j]) {
				j++
			}
			word := text[i:j]
			for _, kw := range dmlKeywordsRef {
				if strings.EqualFold(word, kw) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// shapeCorpus are texts that exercise every branch of the shape lexer.
var shapeCorpus = []string{
	"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = 1.5e-3", "select x from t where id = 0x1F AND y = .5 and z = 1_000",
	"SELECT * FROM t1 WHERE a = 'it''s' AND b = E'x\\'y' AND c = e'\\\\' AND d = xE'a'",
	"SELECT * FROM t2 WHERE a = $$x'y$$ AND b = $q$;$$$q$ AND c = a$b$c AND d = $1 AND e = $12x",
	`SELECT "col 1", "a""b" FROM t WHERE x = 1 -- 'c' 2` + "\nAND y = 2 -- end",
	"/* a /* nested */ 1 */ INSERT INTO t VALUES (1, 'a')",
	"WITH x AS (SELECT 1) SELECT * FROM x", "(SELECT 7)", "  \n\t( ( values (1), (2)",
	"SELECT 1abc", "SELECT 1..2", "SELECT 'open", "SELECT $$open", "SELECT $q", "SELECT /* open 1",
	"SELECT 1 /", "SELECT 1 -", "SELECT 1 - -2", "SELECT a.b, t.5, 1.e5, 1e+, 1e-5x",
	"COPY t FROM '/tmp/a'", "SET x = 1", "TABLE t", "UPDATE t SET a = 'x' \x00",
	"ſelect 1", "SELECTx 1", "delete from t where a = 1", "Insert into t values ('é', 'ü', 3)",
	"SELECT $1, $2::int, 'a'::text || E'b'", "SELECT ''", "SELECT U&'d\\0061t\\+000061'", "SELECT B'1010', X'1F', N'x'",
}

func TestShapeMatchesReference(t *testing.T) {
	for _, text := range shapeCorpus {
		checkShape(t, text)
		// Every prefix too: cuts land inside every kind of token.
		for i := range len(text) {
			checkShape(t, text[:i])
		}
	}
}

func checkShape(t *testing.T, text string) {
	t.Helper()
	got, gotOK := shape(text, nil)
	want, wantOK := shapeRef(text, nil)
	if gotOK != wantOK || (gotOK && string(got) != string(want)) {
		t.Errorf("shape(%q) = %q, %v; reference %q, %v", text, got, gotOK, want, wantOK)
	}
}

func FuzzShape(f *testing.F) {
	for _, text := range shapeCorpus {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkShape(t, text)
	})
}

func BenchmarkShape(b *testing.B) {
	texts := []string{
		"SELECT abalance FROM pgbench_accounts WHERE aid = 123456",
		"SELECT o.id, o.total\nFROM orders o\nJOIN customers c ON c.id = o.customer_id\nWHERE c.email = 'user4@example.com'\nORDER BY o.created_at DESC LIMIT 10",
	}
	for _, impl := range []struct {
		name string
		fn   func(string, []byte) ([]byte, bool)
	}{{"table", shape}, {"reference", shapeRef}} {
		b.Run(impl.name, func(b *testing.B) {
			buf := make([]byte, 0, 512)
			n := 0
			for _, t := range texts {
				n += len(t)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, t := range texts {
					impl.fn(t, buf[:0])
				}
			}
		})
	}
}

func TestKeywords(t *testing.T) {
	for _, c := range []struct {
		word string
		kw   uint64
	}{{"with", kwWith}, {"table", kwTable}, {"select", kwSelect}, {"insert", kwInsert}, {"update", kwUpdate}, {"delete", kwDelete}, {"values", kwValues}} {
		var w uint64
		for i := len(c.word) - 1; i >= 0; i-- {
			w = w<<8 | uint64(c.word[i])
		}
		if w != c.kw {
			t.Errorf("constant of %q is %#x, want %#x", c.word, c.kw, w)
		}
		for _, word := range []string{c.word, strings.ToUpper(c.word), strings.ToUpper(c.word[:1]) + c.word[1:]} {
			if !isDMLKeyword(word) {
				t.Errorf("%q is not a DML keyword", word)
			}
		}
	}
	for _, word := range []string{"", "w", "begin", "selec", "selects", "_elect", "se1ect", "SELECT_", "withx", "ſelect", "inſert"} {
		if got, want := isDMLKeyword(word), isDMLRef(word+" 1"); got != want {
			t.Errorf("isDMLKeyword(%q) = %v, reference %v", word, got, want)
		}
	}
}
