package report

import (
	"strconv"
	"strings"
)

// DisplayQuery is a normalized query as a person reads it: its
// parameters numbered in the order they appear ($1 || $2 || $3, not the
// $2 || $1 || $3 that normalization leaves when the application's own
// parameters and the constants it replaced are interleaved). A parameter
// used twice keeps one number. Text inside quotes, quoted identifiers,
// dollar quotes and comments is left as it is.
func DisplayQuery(q string) string {
	if !strings.Contains(q, "$") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q))
	renum := map[string]int{}
	inOrder := true
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := endQuote(q, i, c)
			b.WriteString(q[i:j])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(q[i:end])
			i = end
		case c == '$' && (i == 0 || !isIdentByte(q[i-1])):
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				num := q[i+1 : j]
				n, ok := renum[num]
				if !ok {
					n = len(renum) + 1
					renum[num] = n
					inOrder = inOrder && num == strconv.Itoa(n)
				}
				b.WriteString("$" + strconv.Itoa(n))
				i = j
				continue
			}
			// A dollar quote: $tag$ ... $tag$.
			k := i + 1
			for k < len(q) && q[k] != '$' && isIdentByte(q[k]) {
				k++
			}
			if k < len(q) && q[k] == '$' {
				tag := q[i : k+1]
				end := strings.Index(q[k+1:], tag)
				stop := len(q)
				if end >= 0 {
					stop = k + 1 + end + len(tag)
				}
				b.WriteString(q[i:stop])
				i = stop
				continue
			}
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	if inOrder {
		return q
	}
	return b.String()
}

// endQuote is the index after the quoted text starting at i, doubled
// quotes included.
func endQuote(q string, i int, quote byte) int {
	for j := i + 1; j < len(q); j++ {
		if q[j] == quote {
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
