package midstream

import "strings"

// stateOp is what a statement does to the session state a recording
// that starts later must recreate (see State).
type stateOp uint8

const (
	// opNone: nothing the proxy keeps (SET LOCAL, SET TRANSACTION),
	// though it answers with a tag of its class.
	opNone stateOp = iota
	// opSet sets key (a setting, the role, the session authorization,
	// the session's transaction characteristics) to what the
	// statement's text says; transactional.
	opSet
	// opReset resets key; transactional.
	opReset
	// opResetAll resets every setting but the role and the session
	// authorization, as RESET ALL does; transactional.
	opResetAll
	// opDiscardAll forgets everything: DISCARD ALL.
	opDiscardAll
	// opDeallocate removes the prepared statement key; opDeallocateAll
	// every prepared statement.
	opDeallocate
	opDeallocateAll
	// opPrepare adds the SQL-level prepared statement key.
	opPrepare
)

// tagClass is the CommandComplete tag a session-state statement is
// answered with: answers are matched to statements of their class, in
// order.
type tagClass uint8

const (
	tagNone tagClass = iota
	tagSet
	tagReset
	tagDiscardAll
	tagDeallocate
	tagPrepare
	numTagClasses
)

// stateCmd is a statement of a Query, or the query of a Parse, that
// changes the session's state once the server completes it.
type stateCmd struct {
	class tagClass
	op    stateOp
	key   string
	sql   string
}

// classOfTag is the class of a CommandComplete tag, tagNone for the
// tags of statements that do not change what the proxy keeps.
func classOfTag(tag string) tagClass {
	switch tag {
	case "SET":
		return tagSet
	case "RESET":
		return tagReset
	case "DISCARD ALL":
		return tagDiscardAll
	case "DEALLOCATE", "DEALLOCATE ALL":
		return tagDeallocate
	case "PREPARE":
		return tagPrepare
	}
	return tagNone
}

// stateCmds appends to out the session-state statements of a simple
// Query's text, in order. A text without a semicolon is one statement
// and only its first words are read; otherwise the text is split at its
// top-level semicolons, past quotes, dollar quotes and comments.
func stateCmds(out []stateCmd, q string) []stateCmd {
	if strings.IndexByte(q, ';') < 0 {
		if c, ok := classify(q); ok {
			out = append(out, c)
		}
		return out
	}
	for len(q) > 0 {
		end := statementEnd(q)
		if c, ok := classify(q[:end]); ok {
			out = append(out, c)
		}
		if end < len(q) {
			end++ // the semicolon
		}
		q = q[end:]
	}
	return out
}

// statementEnd is the index of the first top-level semicolon of q, or
// len(q).
func statementEnd(q string) int {
	for i := 0; i < len(q); i++ {
		switch c := q[i]; c {
		case ';':
			return i
		case '\'', '"':
			i = quoteEnd(q, i, c)
		case '-':
			if i+1 < len(q) && q[i+1] == '-' {
				if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
					i += j
				} else {
					return len(q)
				}
			}
		case '/':
			if i+1 < len(q) && q[i+1] == '*' {
				i = commentEnd(q, i)
			}
		case '$':
			i = dollarEnd(q, i)
		}
	}
	return len(q)
}

// quoteEnd is the index of the quote closing the one at i (a doubled
// quote stands for itself; E” strings' backslash escapes are honoured
// when the string starts with E), or len(q)-1.
func quoteEnd(q string, i int, c byte) int {
	escapes := c == '\'' && i > 0 && (q[i-1] == 'E' || q[i-1] == 'e') && (i < 2 || !isIdent(q[i-2]))
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			if escapes {
				j++
			}
		case c:
			if j+1 < len(q) && q[j+1] == c {
				j++
				continue
			}
			return j
		}
	}
	return len(q) - 1
}

// commentEnd is the index of the last byte of the (nested) block
// comment that starts at i, or len(q)-1.
func commentEnd(q string, i int) int {
	depth := 0
	for j := i; j+1 < len(q); j++ {
		switch {
		case q[j] == '/' && q[j+1] == '*':
			depth++
			j++
		case q[j] == '*' && q[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j
			}
		}
	}
	return len(q) - 1
}

// dollarEnd is the index of the last byte of the dollar-quoted string
// that starts at i ($tag$...$tag$), or i when no such string starts
// there (a parameter $1, or a $ inside an identifier).
func dollarEnd(q string, i int) int {
	if i > 0 && isIdent(q[i-1]) {
		return i
	}
	j := i + 1
	for j < len(q) && isIdent(q[j]) && !(j == i+1 && q[j] >= '0' && q[j] <= '9') {
		j++
	}
	if j >= len(q) || q[j] != '$' {
		return i
	}
	tag := q[i : j+1]
	if k := strings.Index(q[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag) - 1
	}
	return len(q) - 1
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// words reads the words of a statement: SQL keywords and identifiers,
// folded to lower case unless quoted, past whitespace and comments.
type words struct {
	s string
	i int
}

// skipSpace moves past whitespace, comments and opening parentheses.
func (w *words) skipSpace() {
	for w.i < len(w.s) {
		switch c := w.s[w.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '(':
			w.i++
		case c == '-' && w.i+1 < len(w.s) && w.s[w.i+1] == '-':
			if j := strings.IndexByte(w.s[w.i:], '\n'); j >= 0 {
				w.i += j + 1
			} else {
				w.i = len(w.s)
			}
		case c == '/' && w.i+1 < len(w.s) && w.s[w.i+1] == '*':
			w.i = commentEnd(w.s, w.i) + 1
		default:
			return
		}
	}
}

// next returns the next word ("" at the end or before punctuation),
// lower-cased unless it is a quoted identifier, whose quotes it drops.
func (w *words) next() string {
	w.skipSpace()
	if w.i >= len(w.s) {
		return ""
	}
	if w.s[w.i] == '"' {
		end := quoteEnd(w.s, w.i, '"')
		if end <= w.i || w.s[end] != '"' {
			// Unterminated: the server refuses it.
			w.i = len(w.s)
			return ""
		}
		name := strings.ReplaceAll(w.s[w.i+1:end], `""`, `"`)
		w.i = end + 1
		return name
	}
	j := w.i
	for j < len(w.s) && isIdent(w.s[j]) {
		j++
	}
	word := strings.ToLower(w.s[w.i:j])
	w.i = j
	return word
}

// name reads a possibly qualified name (a custom setting's
// "myapp.tenant"): words joined by dots.
func (w *words) name() string {
	n := w.next()
	for n != "" && w.i < len(w.s) && w.s[w.i] == '.' {
		w.i++
		n += "." + w.next()
	}
	return n
}

// classify says whether stmt changes the session state the proxy keeps
// once completed, and how.
func classify(stmt string) (stateCmd, bool) {
	w := words{s: stmt}
	// The first word, compared without folding it: every Query and
	// Parse comes here, and few are session statements.
	w.skipSpace()
	start := w.i
	for w.i < len(w.s) && isIdent(w.s[w.i]) {
		w.i++
	}
	var first string
	for _, kw := range stateKeywords {
		if strings.EqualFold(stmt[start:w.i], kw) {
			first = kw
		}
	}
	if first == "" {
		return stateCmd{}, false
	}
	// The statement may be in the pump's buffer: what is kept is copied.
	sql := strings.Clone(strings.TrimSpace(stmt))
	switch first {
	case "set":
		c := stateCmd{class: tagSet, sql: sql}
		kw := w.next()
		switch kw {
		case "local", "transaction":
			return c, true // transaction-level: answered SET, nothing kept
		case "constraints":
			return stateCmd{}, false // answered SET CONSTRAINTS
		case "session":
			save := w.i
			switch w.next() {
			case "authorization":
				c.op, c.key = opSet, "session_authorization"
				return c, true
			case "characteristics":
				c.op, c.key = opSet, "characteristics"
				return c, true
			}
			w.i = save
			kw = w.name()
		case "role":
			c.op, c.key = opSet, "role"
			return c, true
		default:
			w.i = 0
			w.next()
			kw = w.name()
		}
		key := settingKey(kw, &w)
		if key == "" {
			return stateCmd{}, false
		}
		c.op, c.key = opSet, key
		return c, true
	case "reset":
		c := stateCmd{class: tagReset, op: opReset}
		switch kw := w.name(); kw {
		case "all":
			c.op = opResetAll
		case "role":
			c.key = "role"
		case "session":
			if w.next() != "authorization" {
				return stateCmd{}, false
			}
			c.key = "session_authorization"
		default:
			if c.key = settingKey(kw, &w); c.key == "" {
				return stateCmd{}, false
			}
		}
		return c, true
	case "discard":
		if w.next() == "all" {
			return stateCmd{class: tagDiscardAll, op: opDiscardAll}, true
		}
	case "deallocate":
		name := w.next()
		if name == "prepare" {
			name = w.next()
		}
		switch name {
		case "":
			return stateCmd{}, false
		case "all":
			return stateCmd{class: tagDeallocate, op: opDeallocateAll}, true
		}
		return stateCmd{class: tagDeallocate, op: opDeallocate, key: stmtKey(name)}, true
	case "prepare":
		name := w.next()
		if name == "" || name == "transaction" {
			return stateCmd{}, false
		}
		return stateCmd{class: tagPrepare, op: opPrepare, key: stmtKey(name), sql: sql}, true
	}
	return stateCmd{}, false
}

// stateKeywords are the first words of the statements classify knows.
var stateKeywords = [...]string{"set", "reset", "discard", "deallocate", "prepare"}

// settingKey is the key of the setting named kw ("time zone", "names"
// and the like are other names of settings), "" when kw names none.
func settingKey(kw string, w *words) string {
	switch kw {
	case "":
		return ""
	case "time":
		if w.next() != "zone" {
			return ""
		}
		kw = "timezone"
	case "names":
		kw = "client_encoding"
	case "schema":
		kw = "search_path"
	case "xml":
		if w.next() != "option" {
			return ""
		}
		kw = "xmloption"
	}
	return "guc:" + kw
}

// stmtKey is the key of the prepared statement name: protocol-level and
// SQL-level prepared statements share one namespace on the server.
func stmtKey(name string) string { return "stmt:" + name }
