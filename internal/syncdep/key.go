package syncdep

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// keyHash hashes the key that e's parameters, or the constants of its
// logged text (see constantAt), give for r, by value: two
// texts the server reads as one key (" 7" and "7" of an integer, the
// cases of a uuid) hash alike. false when the log does not give it: the
// parameters are missing or cut, one is NULL or does not read as its
// column's type, or the normalized statement's $n is a constant of the
// logged text that constantAt cannot read.
func keyHash(r *rowRef, e *Exec) (uint64, bool) {
	if len(e.Items) != 1 || e.Items[0].Unparsed {
		return 0, false
	}
	maxRef := int32(-1)
	h := uint64(fnvOffset)
	var buf [24]byte
	for i, p := range r.params {
		if maxRef < 0 {
			if maxRef = paramBound(e); maxRef < 0 {
				return 0, false
			}
		}
		var v event.Param
		switch {
		case p <= maxRef:
			// A bind parameter.
			if e.ParamState != event.ParamsComplete || int(p) > len(e.Params) {
				return 0, false
			}
			v = e.Params[p-1]
		default:
			// A constant the normalization numbered: the simple
			// protocol's key, or one written in the text.
			c, ok := constantAt(e.Items[0].Query, e.Text, p)
			if !ok {
				return 0, false
			}
			v = event.Param{Value: c}
		}
		if v.Null {
			return 0, false
		}
		switch r.kinds[i] {
		case keyInt:
			n, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
			if err != nil {
				return 0, false
			}
			h = fnvBytes(h, strconv.AppendInt(buf[:0], n, 10))
		case keyText:
			h = fnvString(h, v.Value)
		case keyUUID:
			u, ok := uuidBytes(v.Value, buf[:0])
			if !ok {
				return 0, false
			}
			h = fnvBytes(h, u)
		default:
			return 0, false
		}
		h = (h ^ 0xff) * fnvPrime // ends the column: ("ab","c") is not ("a","bc")
	}
	return h, true
}

// FNV-1a, 64 bits, written out so that hashing a key allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// uuidBytes reads a uuid's text as PostgreSQL accepts it (hex digits in
// either case, with or without hyphens, possibly in braces) into its 16
// bytes.
func uuidBytes(s string, dst []byte) ([]byte, bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	s = strings.ReplaceAll(s, "-", "")
	if len(s) != 32 {
		return nil, false
	}
	out := dst[:16]
	if _, err := hex.Decode(out, []byte(s)); err != nil {
		return nil, false
	}
	return out, true
}

// paramBound is the highest $n of e's one normalized statement that is a
// bind parameter of its logged text (see fingerprint.MaxParamRef), -1
// when it cannot tell. A logged text that is its normalized statement
// (up to a final semicolon) had no constant replaced: each of its $n is
// a parameter, and it need not be scanned.
func paramBound(e *Exec) int32 {
	if rest, ok := strings.CutPrefix(e.Text, e.Items[0].Query); ok && strings.Trim(rest, " \t\r\n;") == "" {
		return math.MaxInt32
	}
	return fingerprint.MaxParamRef(e.Text)
}

// constantAt returns the value of the constant that the normalized text
// norm (pg_query's, of raw) numbers $k, read from the logged text raw.
// The normalization copies everything else of the text as it is, so the
// two are walked side by side, byte for byte: where norm has a $n that
// raw does not, raw has a constant there. Any other difference, and any
// constant of a form it does not read, makes it answer false (the
// statement is then ordered by its whole table): a string with escapes
// (E'...', a backslash, U&'...', dollar quotes, bit strings), a number
// that is not a plain integer, a keyword.
func constantAt(norm, raw string, k int32) (string, bool) {
	raw = strings.TrimLeft(raw, " \t\r\n")
	i, j := 0, 0
	for i < len(norm) {
		if n, w := dollarRef(norm[i:]); w > 0 {
			if m, rw := dollarRef(raw[j:]); rw > 0 {
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

// dollarRef reads a $n at the start of s: n and its width, 0 when s does
// not start with one.
func dollarRef(s string) (int32, int) {
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
		if i < len(s) && (isIdentByte(s[i]) || s[i] == '.') {
			// 1.5, 1e3, 0x1F, 1_000: a number, but not a plain integer.
			return 0, "", false
		}
		return i, s[:i], true
	}
	return 0, "", false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
