package logread

import (
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// parseParams parses the DETAIL of an execute or bind line:
//
//	parameters: $1 = '42', $2 = NULL, $3 = 'it''s'
//
// Values are quoted with doubled quotes inside, may span lines, and end in
// "..." when log_parameter_max_length cut them. A query with placeholders
// and no DETAIL has its parameters missing.
func parseParams(detail, query string) ([]event.Param, event.ParamState) {
	return appendParams(nil, detail, query, nil)
}

// appendParams is parseParams appending to params, which is returned as
// it was when there are none. The values are copied into ar when it is
// not nil; otherwise they alias detail, but for those with quotes to
// undo.
func appendParams(params []event.Param, detail, query string, ar *textArena) ([]event.Param, event.ParamState) {
	rest, ok := cutPrefixFold(detail, "parameters: ")
	if !ok {
		if hasPlaceholder(query) {
			return params, event.ParamsMissing
		}
		return params, event.ParamsComplete
	}
	state := event.ParamsComplete
	for n := 1; rest != ""; n++ {
		// "$1 = "
		if rest[0] != '$' {
			return params, event.ParamsTruncated
		}
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if !strings.HasPrefix(rest[i:], " = ") {
			// Not "$n = ": the first " = " ends the name, as above.
			if i = strings.Index(rest, " = "); i < 0 {
				return params, event.ParamsTruncated
			}
		}
		rest = rest[i+3:]
		var p event.Param
		switch {
		case strings.HasPrefix(rest, "NULL"):
			p.Null = true
			rest = rest[4:]
		case strings.HasPrefix(rest, "'"):
			v, after, complete := unquote(rest, ar)
			if !complete {
				return append(params, event.Param{Value: v}), event.ParamsTruncated
			}
			if strings.HasSuffix(v, "...") {
				state = event.ParamsTruncated
			}
			p.Value, rest = v, after
		default:
			return params, event.ParamsTruncated
		}
		params = append(params, p)
		if rest == "" {
			break
		}
		if !strings.HasPrefix(rest, ", ") {
			return params, event.ParamsTruncated
		}
		rest = rest[2:]
	}
	return params, state
}

// unquote reads a single-quoted SQL literal at the start of s, with ”
// for a quote. It returns the value, the text after the closing quote,
// and false if s ends before the closing quote. The value is a copy in ar
// when ar is not nil.
func unquote(s string, ar *textArena) (v, rest string, complete bool) {
	s = s[1:]
	i := strings.IndexByte(s, '\'')
	if i < 0 {
		return ar.keep(s), "", false
	}
	if i+1 >= len(s) || s[i+1] != '\'' {
		return ar.keep(s[:i]), s[i+1:], true // no doubled quote: no copy
	}
	// Quotes to undo: the length of the value first, then one copy.
	n, t := 0, s
	for {
		i := strings.IndexByte(t, '\'')
		if i < 0 {
			n += len(t)
			break
		}
		n += i
		if i+1 < len(t) && t[i+1] == '\'' {
			n++
			t = t[i+2:]
			continue
		}
		break
	}
	var b []byte
	if ar != nil {
		b = ar.alloc(n)[:0]
	} else {
		b = make([]byte, 0, n)
	}
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			b = append(b, s...)
			return unsafeString(b), "", false
		}
		b = append(b, s[:i]...)
		if i+1 < len(s) && s[i+1] == '\'' {
			b = append(b, '\'')
			s = s[i+2:]
			continue
		}
		return unsafeString(b), s[i+1:], true
	}
}

// hasPlaceholder reports whether query has a $n parameter reference. It
// does not skip literals: a '$1' inside a string only makes a missing
// DETAIL look like it mattered.
func hasPlaceholder(q string) bool {
	for i := strings.IndexByte(q, '$'); i >= 0 && i+1 < len(q); {
		if q[i+1] >= '1' && q[i+1] <= '9' {
			return true
		}
		j := strings.IndexByte(q[i+1:], '$')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}
