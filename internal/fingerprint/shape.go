package fingerprint

import (
	"math/bits"
	"strings"
)

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

// Byte classes of the shape lexer. Most bytes of a query are plain or
// identifier bytes, which the lexer steps over with one table lookup each
// and copies into the shape in bulk, a span at a time.
const (
	cPlain  = iota // copied as is; no token starts here
	cIdent         // a letter, _ or a byte >= 0x80: an identifier or keyword starts
	cDigit         // a number starts
	cQuote         // '
	cDQuote        // "
	cDollar        // $
	cDash          // - (a comment with a second one)
	cSlash         // / (a comment with a *)
	cDot           // . (a number with a digit after it)
	cMark          // shapeMark, which no text may hold
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		switch b := byte(c); {
		case isDigit(b):
			t[c] = cDigit
		case b == '$':
			t[c] = cDollar
		case isIdent(b):
			t[c] = cIdent
		case b == '\'':
			t[c] = cQuote
		case b == '"':
			t[c] = cDQuote
		case b == '-':
			t[c] = cDash
		case b == '/':
			t[c] = cSlash
		case b == '.':
			t[c] = cDot
		case b == shapeMark:
			t[c] = cMark
		}
	}
	return t
}()

// identByte is isIdent as a table.
var identByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isIdent(byte(c))
	}
	return t
}()

// shape appends the shape of text to buf and reports whether text has one
// that is worth using: DML holding at least one constant.
func shape(text string, buf []byte) ([]byte, bool) {
	if !isDML(text) {
		return buf, false
	}
	masked := 0
	n := len(text)
	// text[start:i] is copied to buf when a constant ends it: everything
	// but constants is copied as is, so the lexer only has to find them.
	start := 0
	for i := 0; i < n; {
		// Plain bytes and identifiers are most of a query: skip them
		// in a tight loop, the switch is for the rest.
		if i = skipPlain(text, i); i >= n {
			break
		}
		switch byteClass[text[i]] {
		case cQuote:
			// A prefix letter (E, B, X, N, U&) stays in the shape.
			escapes := i > 0 && (text[i-1] == 'E' || text[i-1] == 'e') && (i < 2 || !isIdent(text[i-2]))
			end, ok := endQuoted(text, i, escapes)
			if !ok {
				return buf, false
			}
			buf = append(buf, text[start:i]...)
			buf = append(buf, shapeMark)
			masked++
			i, start = end, end
		case cDQuote:
			end, ok := endQuoted(text, i, false) // an identifier, kept
			if !ok {
				return buf, false
			}
			i = end
		case cDollar:
			end, quoted, ok := endDollar(text, i)
			if !ok {
				return buf, false
			}
			if quoted {
				buf = append(buf, text[start:i]...)
				buf = append(buf, shapeMark)
				masked++
				start = end
			}
			i = end
		case cDash:
			if i+1 < n && text[i+1] == '-' {
				// A comment to the end of the line, kept.
				if nl := strings.IndexByte(text[i:], '\n'); nl >= 0 {
					i += nl
				} else {
					i = n
				}
				continue
			}
			i++
		case cSlash:
			if i+1 < n && text[i+1] == '*' {
				end, ok := endComment(text, i)
				if !ok {
					return buf, false
				}
				i = end
				continue
			}
			i++
		case cDot:
			if i+1 < n && isDigit(text[i+1]) {
				end, ok := endNumber(text, i)
				if !ok {
					return buf, false
				}
				buf = append(buf, text[start:i]...)
				buf = append(buf, shapeMark)
				masked++
				i, start = end, end
				continue
			}
			i++
		case cDigit:
			end, ok := endNumber(text, i)
			if !ok {
				return buf, false
			}
			buf = append(buf, text[start:i]...)
			buf = append(buf, shapeMark)
			masked++
			i, start = end, end
		case cMark:
			return buf, false
		}
	}
	buf = append(buf, text[start:]...)
	return buf, masked > 0
}

// endDollar returns the end of what starts with the '$' at text[i]: a
// dollar-quoted string (quoted, a constant), or a parameter or the rest
// of an identifier (kept). ok is false for a dollar quote that does not
// end.
func endDollar(text string, i int) (end int, quoted, ok bool) {
	n := len(text)
	if i > 0 && isIdent(text[i-1]) {
		// Inside an identifier (after a dollar quote's end).
		i++
		for i < n && identByte[text[i]] {
			i++
		}
		return i, false, true
	}
	return dollarToken(text, i)
}

// dollarToken returns the end of the parameter or dollar-quoted string
// (quoted) that starts with the '$' at text[i]; ok is false for neither.
func dollarToken(text string, i int) (end int, quoted, ok bool) {
	n := len(text)
	j := i + 1
	if j < n && isDigit(text[j]) { // a parameter
		for j < n && isDigit(text[j]) {
			j++
		}
		return j, false, true
	}
	for j < n && isIdent(text[j]) && text[j] != '$' {
		j++
	}
	if j >= n || text[j] != '$' {
		return 0, false, false
	}
	tag := text[i : j+1]
	e := strings.Index(text[j+1:], tag)
	if e < 0 {
		return 0, false, false
	}
	return j + 1 + e + len(tag), true, true
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

// skipPlain returns the index of the first byte from i on that is neither
// plain nor part of an identifier. It looks at eight bytes at a time for
// the few that can start anything else (see special); a digit or $ among
// them continues an identifier when the byte before does, and a . - or /
// is plain unless the byte after it makes a number or a comment.
func skipPlain(text string, i int) int {
	entry := i
	for i < len(text) {
		if i+8 <= len(text) {
			m := special(load64(text, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		switch byteClass[text[i]] {
		case cPlain, cIdent:
			// One of the last bytes, or # % & (see special).
			i++
			continue
		case cDigit, cDollar:
			// Bytes from entry on are plain or in identifiers: a digit
			// or $ after an identifier byte is in that identifier.
			if i > entry && identByte[text[i-1]] {
				i++
				continue
			}
		case cDot:
			// A qualified name's dot; before a digit, a number.
			if i+1 == len(text) || !isDigit(text[i+1]) {
				i++
				continue
			}
		case cDash:
			if i+1 == len(text) || text[i+1] != '-' {
				i++
				continue
			}
		case cSlash:
			if i+1 == len(text) || text[i+1] != '*' {
				i++
				continue
			}
		}
		return i
	}
	return i
}

// Bytes of a word, for special.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// special returns x, eight bytes of text, with the high bit set in each
// byte that may start a token the lexer must see: NUL, " # $ % & ' (the
// range 0x22-0x27: # % & are plain, and cheaper to look at than to leave
// out) and - . / 0-9 (0x2d-0x39). Each byte is tested on its own, with no
// carry from one into the next, so no byte is missed.
func special(x uint64) uint64 {
	low := x & (0x7f * lsbs)
	// low+(0x80-a) has its high bit set when low >= a, low+(0x7f-b) when
	// low > b; neither can carry out of the byte.
	quotes := (low + (0x80-0x22)*lsbs) &^ (low + (0x7f-0x27)*lsbs)
	digits := (low + (0x80-0x2d)*lsbs) &^ (low + (0x7f-0x39)*lsbs)
	nul := ^(low + 0x7f*lsbs)
	// Bytes >= 0x80 are in identifiers.
	return (quotes | digits | nul) &^ x & msbs
}

// load64 returns the eight bytes of text at i, the first lowest.
func load64(text string, i int) uint64 {
	b := text[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

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
			for j < len(text) && identByte[text[j]] {
				j++
			}
			return isDMLKeyword(text[i:j])
		}
	}
	return false
}

// isDMLKeyword reports whether word is one of the keywords that start a
// DML statement, in any case.
func isDMLKeyword(word string) bool {
	// The word's bytes, first lowest, in lower case if they are ASCII
	// letters: | 0x20 maps no other byte of an identifier to a letter.
	var w uint64
	switch len(word) {
	case 4, 5, 6:
		for i := len(word) - 1; i >= 0; i-- {
			w = w<<8 | uint64(word[i]|0x20)
		}
	}
	switch w {
	case kwWith, kwTable, kwSelect, kwInsert, kwUpdate, kwDelete, kwValues:
		return true
	}
	for i := range len(word) {
		if word[i] >= 0x80 {
			// strings.EqualFold also folds some non-ASCII letters into
			// ASCII ones (the long s, the Kelvin sign): rare, and kept
			// as it was.
			for _, k := range [...]string{"select", "insert", "update", "delete", "with", "values", "table"} {
				if strings.EqualFold(word, k) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// The DML keywords as isDMLKeyword reads a word (TestKeywords checks them).
const (
	kwWith   = 0x68746977
	kwTable  = 0x656c626174
	kwSelect = 0x7463656c6573
	kwInsert = 0x747265736e69
	kwUpdate = 0x657461647075
	kwDelete = 0x6574656c6564
	kwValues = 0x7365756c6176
)
