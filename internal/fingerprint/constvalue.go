package fingerprint

import (
	"math"
	"strings"
)

// ConstantValue returns the value of the constant that the normalized text
// norm (pg_query's, of raw) numbers $k, read from the logged text raw.
// The normalization copies everything else of the text as it is, so the
// two are walked side by side, byte for byte: where norm has a $n that
// raw does not, raw has a constant there. Any other difference, and any
// constant of a form it does not read, makes it answer false (the
// statement is then ordered by its whole table): a string with escapes
// (E'...', a backslash, U&'...', dollar quotes, bit strings), a number
// that is not a plain integer, a keyword. Package syncdep reads the row
// keys of a simple-protocol statement with it; it lives here, with the
// package's other readers of SQL text, so that syncdep reads none.
func ConstantValue(norm, raw string, k int32) (string, bool) {
	raw = strings.TrimLeft(raw, " \t\r\n")
	i, j := 0, 0
	for i < len(norm) {
		if n, w := paramRefAt(norm[i:]); w > 0 {
			if m, rw := paramRefAt(raw[j:]); rw > 0 {
				// A bind parameter, in both.
				if m != n {
					return "", false
				}
				i, j = i+w, j+rw
				continue
			}
			tok, val, ok := constantToken(raw[j:])
			if tok == 0 {
				return "", false
			}
			if n == k {
				return val, ok
			}
			i, j = i+w, j+tok
			continue
		}
		if j == len(raw) || norm[i] != raw[j] {
			return "", false
		}
		i, j = i+1, j+1
	}
	return "", false
}

// paramRefAt reads a $n at the start of s: n and its width, 0 when s does
// not start with one.
func paramRefAt(s string) (int32, int) {
	if len(s) < 2 || s[0] != '$' || s[1] < '0' || s[1] > '9' {
		return 0, 0
	}
	w := 1
	n := int64(0)
	for w < len(s) && s[w] >= '0' && s[w] <= '9' {
		n = n*10 + int64(s[w]-'0')
		if n > math.MaxInt32 {
			return 0, 0
		}
		w++
	}
	return int32(n), w
}

// constantToken reads the constant token at the start of s: its width
// (0 when none is there) and, when ok, its value: an integer with an
// optional minus sign, or a string in single quotes without escapes
// other than a doubled quote. Other constants are measured (width) but
// not read.
func constantToken(s string) (width int, value string, ok bool) {
	if s == "" {
		return 0, "", false
	}
	switch c := s[0]; {
	case c == '\'':
		var b strings.Builder
		plain := true
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\'':
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				return i + 1, b.String(), plain
			case '\\':
				// Literal under standard_conforming_strings, an escape
				// without it: not read.
				plain = false
			}
			b.WriteByte(s[i])
		}
		return 0, "", false
	case c == '-' || c >= '0' && c <= '9':
		i := 0
		if c == '-' {
			i = 1
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return 0, "", false
		}
		if i < len(s) && (isIdentOrHigh(s[i]) || s[i] == '.') {
			// 1.5, 1e3, 0x1F, 1_000: a number, but not a plain integer.
			return 0, "", false
		}
		return i, s[:i], true
	}
	return 0, "", false
}

func isIdentOrHigh(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
