package logread

import (
	"strconv"
	"strings"
)

// FastPathPrefix begins the text of every event made of a fast-path
// function call ("fastpath function call: "lo_open" (OID 952)"): package
// replay skips an Execute whose parameters are missing and whose text
// begins with it as a "fast-path function call" (replay.FastPathPrefix
// is the same string; TestFastPathSkipped of package replay reads this
// package's events).
const FastPathPrefix = "/* fastpath function call */ "

// fastPathArgs are the numbers of arguments of the functions libpq calls
// through the fast-path protocol (fe-lobj.c), so that their calls read
// as the SQL that would make them, with parameters whose values the log
// does not hold.
var fastPathArgs = map[string]int{
	"lo_open": 2, "lo_close": 1, "loread": 2, "lowrite": 2,
	"lo_lseek": 3, "lo_lseek64": 3, "lo_creat": 1, "lo_create": 1,
	"lo_tell": 1, "lo_tell64": 1, "lo_truncate": 2, "lo_truncate64": 2,
	"lo_unlink": 1,
}

// FastPathQuery is the text of a fast-path call of the function name:
// FastPathPrefix and SELECT pg_catalog.lo_open($1, $2) for libpq's
// large-object functions, and a call whose arguments are unknown for
// any other function.
func FastPathQuery(name string) string {
	var b strings.Builder
	b.WriteString(FastPathPrefix)
	b.WriteString("SELECT ")
	n, known := fastPathArgs[name]
	if known {
		b.WriteString("pg_catalog.")
		b.WriteString(name)
	} else {
		b.WriteString(quoteIdent(name))
	}
	b.WriteByte('(')
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(i))
	}
	if !known {
		b.WriteString("/* arguments not logged */")
	}
	b.WriteByte(')')
	return b.String()
}

// quoteIdent quotes a function's name unless it is a plain lower-case
// identifier.
func quoteIdent(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9'
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// fastPathName reads the function's name of a fast-path call's message,
// `"lo_open" (OID 952)`, as fastpath.c writes it (the name between
// double quotes, never escaped, then the OID).
func fastPathName(rest string) (string, bool) {
	if len(rest) < 2 || rest[0] != '"' {
		return "", false
	}
	end := strings.LastIndex(rest, `" (OID `)
	if end < 2 || !strings.HasSuffix(rest, ")") {
		return "", false
	}
	if _, err := strconv.ParseUint(rest[end+len(`" (OID `):len(rest)-1], 10, 32); err != nil {
		return "", false
	}
	return rest[1:end], true
}
