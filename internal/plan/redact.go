package plan

import (
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/redact"
)

// figureProps are properties that hold figures or words of EXPLAIN's
// own, never a constant of the statement: Redact keeps them. Every other
// property is taken for an expression.
var figureProps = map[string]bool{
	"Heap Fetches": true, "Heap Blocks": true, "Exact Heap Blocks": true, "Lossy Heap Blocks": true,
	"Hits": true, "Misses": true, "Evictions": true, "Overflows": true, "Memory Usage": true,
	"Cache Hits": true, "Cache Misses": true, "Cache Evictions": true, "Cache Overflows": true, "Cache Mode": true,
	"Full-sort Groups": true, "Pre-sorted Groups": true, "Subplans Removed": true, "Index Searches": true,
	"Inner Unique": true, "Parent Relationship": true, "Scan Direction": true, "Single Copy": true,
	"Async Capable": true, "Parallel Aware": true, "Estimated Memory Usage": true, "Conflict Resolution": true,
	"Tuples Inserted": true, "Conflicting Tuples": true, "Sampling Method": true, "Command": true,
	"Batches": true, "Query Identifier": true,
}

// Redact replaces, in every expression of the plan (filters, conditions,
// keys, and the properties that are not EXPLAIN's own figures), the
// constants of the statement with redact.Hidden, and drops the query
// text: what is left names relations, columns, operators and types, and
// no value. "(email = 'bob@example.com'::text)" becomes "(email =
// …::text)". Parameters ($1) are kept: they are not values.
func (p *Plan) Redact() {
	if p == nil {
		return
	}
	p.QueryText = ""
	p.Root.Walk(func(n *Node) bool {
		for _, s := range []*string{&n.Filter, &n.IndexCond, &n.RecheckCond, &n.JoinFilter, &n.HashCond, &n.MergeCond} {
			*s = RedactExpression(*s)
		}
		for i := range n.SortKey {
			n.SortKey[i] = RedactExpression(n.SortKey[i])
		}
		for i := range n.GroupKey {
			n.GroupKey[i] = RedactExpression(n.GroupKey[i])
		}
		for i := range n.Props {
			if !figureProps[n.Props[i].Key] {
				n.Props[i].Value = RedactExpression(n.Props[i].Value)
			}
		}
		return true
	})
}

// RedactExpression replaces the constants of an expression as EXPLAIN
// deparses it (string literals, numbers) with redact.Hidden, keeping
// identifiers, quoted names, parameters and the types of casts.
func RedactExpression(s string) string {
	if s == "" {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'' || (c == 'E' || c == 'e') && i+1 < len(s) && s[i+1] == '\'' && (i == 0 || !identByte(s[i-1])):
			escapes := c != '\''
			if escapes {
				i++
			}
			i = skipLiteral(s, i, escapes)
			b.WriteString(redact.Hidden)
		case c == '"':
			j := skipQuoted(s, i, '"')
			b.WriteString(s[i:j])
			i = j
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			// A cast: the type name, with its modifiers, is kept.
			j := i + 2
			for j < len(s) && (identByte(s[j]) || s[j] == ' ' && j+1 < len(s) && identByte(s[j+1]) && typeWord(s, j+1) || s[j] == '[' || s[j] == ']' || s[j] == '.' || s[j] == '"') {
				if s[j] == '"' {
					j = skipQuoted(s, j, '"')
					continue
				}
				j++
			}
			if j < len(s) && s[j] == '(' {
				if k := strings.IndexByte(s[j:], ')'); k >= 0 && onlyModifiers(s[j+1:j+k]) {
					j += k + 1
				}
			}
			b.WriteString(s[i:j])
			i = j
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		case c >= '0' && c <= '9' && (i == 0 || !identByte(s[i-1])):
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			if j < len(s) && identByte(s[j]) {
				// Part of a name ("1st"): not a number.
				for j < len(s) && identByte(s[j]) {
					j++
				}
				b.WriteString(s[i:j])
			} else {
				b.WriteString(redact.Hidden)
			}
			i = j
		case identByte(c):
			j := i
			for j < len(s) && identByte(s[j]) {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// skipQuoted returns the index after the quoted text that starts at i,
// doubled quotes included.
func skipQuoted(s string, i int, q byte) int {
	j := i + 1
	for j < len(s) {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(s)
}

// skipLiteral returns the index after the string literal that starts at
// i; in an E” literal a backslash escapes the next character.
func skipLiteral(s string, i int, escapes bool) int {
	for j := i + 1; j < len(s); j++ {
		switch {
		case escapes && s[j] == '\\':
			j++
		case s[j] == '\'':
			if j+1 < len(s) && s[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// typeWord reports whether the word at i continues a type name of
// several words ("character varying", "timestamp with time zone").
func typeWord(s string, i int) bool {
	for _, w := range []string{"varying", "with", "without", "time", "zone", "precision"} {
		if strings.HasPrefix(s[i:], w) && (i+len(w) == len(s) || !identByte(s[i+len(w)])) {
			return true
		}
	}
	return false
}

// onlyModifiers reports whether s is a type's modifiers ("10,2").
func onlyModifiers(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] == ',' || s[i] == ' ') {
			return false
		}
	}
	return s != ""
}
