package fingerprint

import "strings"

// A template is a shape cut at its constants: the text between them,
// spans[0] before the first and spans[len-1] after the last. A text
// matches a template when it is the spans with a constant between each
// two, which match checks by comparing the spans and lexing only the
// constants: a text with constants costs little more than a comparison
// with the one before it of its shape, not a pass of the shape lexer.
//
// match must never accept a text whose shape differs (it may refuse one
// whose shape is the same: that text then takes the lexer). The lexer
// reads the bytes of a span the same way in any text whose spans they
// are, with two exceptions, both refused: the byte before a span's first
// byte decides what a $ there starts (no template has a span after a
// constant that starts with $), and the byte after a span's last one may
// extend its last token into the constant (an identifier or parameter
// into a digit or $, a dot into a digit: match refuses both). Constants
// are lexed as the lexer does, on the text's own bytes. FuzzTemplate
// checks that whatever match accepts has the template's shape.
type template[T any] struct {
	spans []string
	val   T
}

// tmplKey is the number of leading bytes of a text that pick the
// templates it may match: templates whose first constant comes after
// them.
const tmplKey = 16

// newTemplate returns the template of shape sh, the shape of text, or nil
// if texts of that shape cannot be recognized by their first tmplKey
// bytes or a span starts with $. A text holding a NUL byte gets none: a
// NUL in a quoted identifier or a comment is copied into the shape, where
// it would pass for a constant's mark.
func newTemplate[T any](text string, sh []byte, val T) *template[T] {
	if strings.IndexByte(text, shapeMark) >= 0 {
		return nil
	}
	spans := strings.Split(string(sh), string(rune(shapeMark)))
	if len(spans) < 2 || len(spans[0]) < tmplKey {
		return nil
	}
	for _, s := range spans[1:] {
		if strings.HasPrefix(s, "$") {
			return nil
		}
	}
	return &template[T]{spans: spans, val: val}
}

// match reports whether text has the template's shape (see template).
func (t *template[T]) match(text string) bool {
	spans := t.spans
	pos := 0
	for _, s := range spans[:len(spans)-1] {
		if !strings.HasPrefix(text[pos:], s) {
			return false
		}
		pos += len(s)
		end, ok := constantAt(text, pos)
		if !ok {
			return false
		}
		pos = end
	}
	return text[pos:] == spans[len(spans)-1]
}

// constantAt returns the end of the constant that starts at i in text,
// lexed as shape does, if one does and the token before it ends at i.
func constantAt(text string, i int) (int, bool) {
	if i >= len(text) {
		return 0, false
	}
	c := text[i]
	if i > 0 {
		p := text[i-1]
		// An identifier, parameter or dollar quote before would go on
		// into a digit or $, a dot before would start a number.
		if identByte[p] && (isDigit(c) || c == '$') || p == '.' && isDigit(c) {
			return 0, false
		}
	}
	switch {
	case c == '\'':
		escapes := i > 0 && (text[i-1] == 'E' || text[i-1] == 'e') && (i < 2 || !isIdent(text[i-2]))
		return endQuoted(text, i, escapes)
	case c == '$':
		j := i + 1
		if j < len(text) && isDigit(text[j]) {
			return 0, false // a parameter
		}
		for j < len(text) && isIdent(text[j]) && text[j] != '$' {
			j++
		}
		if j >= len(text) || text[j] != '$' {
			return 0, false
		}
		tag := text[i : j+1]
		end := strings.Index(text[j+1:], tag)
		if end < 0 {
			return 0, false
		}
		return j + 1 + end + len(tag), true
	case isDigit(c) || c == '.' && i+1 < len(text) && isDigit(text[i+1]):
		return endNumber(text, i)
	}
	return 0, false
}

// prefixHash hashes the first tmplKey bytes of text, len(text) >= tmplKey.
func prefixHash(text string) uint64 {
	a, b := load64(text, 0), load64(text, 8)
	h := (a ^ b*0x9e3779b97f4a7c15) * 0xff51afd7ed558ccd
	return h ^ h>>29
}
