// Package redact removes values from texts that pgrehearse prints: server
// error messages quote the values that failed ("invalid input syntax for
// type integer: \"bob@example.com\""), and values may be personal data or
// passwords. Query texts are redacted by their normalization (package
// fingerprint), which replaces constants with $n.
//
// The package is pure text handling: no I/O, no knowledge of where a text
// goes.
package redact

import (
	"regexp"
	"strings"
)

// Hidden replaces a value.
const Hidden = "…"

// The places where PostgreSQL's messages quote a value rather than a
// name: after a colon at the end ("invalid input syntax for type uuid:
// \"x\"", "date/time field value out of range: \"x\"", "malformed array
// literal: \"x\""), after "value" ("value \"x\" is out of range for type
// integer", "invalid value \"x\" for \"y\""), and the token a syntax error
// is near, which may be a literal.
var valuePatterns = []*regexp.Regexp{
	regexp.MustCompile(`(: )"(?:[^"]|"")*"((?: at character \d+)?)$`),
	regexp.MustCompile(`(\bvalue )"(?:[^"]|"")*"()`),
	regexp.MustCompile(`(\bat or near )"(?:[^"]|"")*"()`),
}

// Message returns a server error message with the values it quotes
// replaced by Hidden; names (of relations, columns, constraints, roles)
// are kept, being what a reader needs to act on the error.
func Message(msg string) string {
	if !strings.Contains(msg, `"`) {
		return msg
	}
	for _, re := range valuePatterns {
		msg = re.ReplaceAllString(msg, `$1"`+Hidden+`"$2`)
	}
	return msg
}
