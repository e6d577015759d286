package fingerprint

import "strings"

// Logs with literal values hold millions of texts that differ only in
// their constants ("... WHERE id = 1", "... WHERE id = 2"); parsing each
// costs ~15 µs, several times the cost of reading its log line. A text's
// shape is the text with every numeric and string constant replaced by a
// placeholder, found by a small lexer that follows PostgreSQL's lexical
// rules. Texts of one shape differ only in constants, which pg_query's
// fingerprint ignores and Normalize replaces at the same places, so they
// have the same Items: the parser runs once per shape.
//
// Only DML gets a shape (SELECT, INSERT, UPDATE, DELETE, WITH, VALUES,
// TABLE): in utility statements some strings are not constants (COPY's
// file name, a COMMENT's text) and do count in the fingerprint. Anything
// the lexer is unsure of (an unterminated literal, a number running into
// a word) gets no shape and takes the exact-text path.

// shapeMark replaces a constant in a shape. It is a byte no SQL text
// holds, so shapes and texts can share one map without colliding.
const shapeMark = 0

// shape appends the shape of text to buf and reports whether text has one
// that is worth using: DML holding at least one constant.
func shape(text string, buf []byte) ([]byte, bool) {
	if !isDML(text) {
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

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdent reports whether c may continue an identifier or keyword.
func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}

// endQuoted returns the index after the quoted token starting at i, where
// the quote is doubled to stand for itself and, with escapes, a backslash
// escapes the next byte.
func endQuoted(text string, i int, escapes bool) (int, bool) {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			if escapes {
				j++
			}
		case q:
			if j+1 < len(text) && text[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

// endComment returns the index after the block comment at i; PostgreSQL's
// block comments nest.
func endComment(text string, i int) (int, bool) {
	depth := 0
	for j := i; j+1 < len(text); j++ {
		switch {
		case text[j] == '/' && text[j+1] == '*':
			depth++
			j++
		case text[j] == '*' && text[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// endNumber returns the index after the numeric constant at i: decimal with
// fraction and exponent, 0x/0o/0b integers, and _ separators. A number
// running into an identifier character is refused: depending on the
// server version that is an error or a number and a word.
func endNumber(text string, i int) (int, bool) {
	n := len(text)
	j := i
	if text[j] == '0' && j+1 < n && (text[j+1]|0x20 == 'x' || text[j+1]|0x20 == 'o' || text[j+1]|0x20 == 'b') {
		j += 2
		for j < n && (isDigit(text[j]) || text[j]|0x20 >= 'a' && text[j]|0x20 <= 'f' || text[j] == '_') {
			j++
		}
	} else {
		for j < n && (isDigit(text[j]) || text[j] == '_' || text[j] == '.') {
			// ".." cannot be part of a number; do not guess.
			if text[j] == '.' && j+1 < n && text[j+1] == '.' {
				return 0, false
			}
			j++
		}
		if j < n && text[j]|0x20 == 'e' {
			k := j + 1
			if k < n && (text[k] == '+' || text[k] == '-') {
				k++
			}
			if k < n && isDigit(text[k]) {
				for k < n && isDigit(text[k]) {
					k++
				}
				j = k
			}
		}
	}
	if j < n && isIdent(text[j]) {
		return 0, false
	}
	return j, true
}

var dmlKeywords = [...]string{"select", "insert", "update", "delete", "with", "values", "table"}

// isDML reports whether text starts, after blanks, comments and opening
// parentheses, with a keyword of a DML statement.
func isDML(text string) bool {
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
			for _, kw := range dmlKeywords {
				if strings.EqualFold(word, kw) {
					return true
				}
			}
			return false
		}
	}
	return false
}
