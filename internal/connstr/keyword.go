package connstr

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// accepted are the keywords a connection string may give: libpq's, which
// pgconn reads or passes to the server (application_name, options,
// client_encoding), pgconn's own few (servicefile, krbspn) and pgx's
// (statement_cache_capacity, ...). Names are case-sensitive, as libpq's.
var accepted = append(slices.Clone(keywords), "servicefile", "krbspn", "min_protocol_version",
	"max_protocol_version", "sslkeylogfile", "oauth_issuer", "oauth_client_id", "oauth_client_secret",
	"oauth_scope", "scram_client_key", "scram_server_key")

// UnknownKeywordError is a keyword libpq does not know. pgconn takes such
// a word for a run-time parameter to send to the server, so that a
// misspelt "hostname=db1" connects to the default socket and fails there,
// sending the user after listen_addresses; libpq refuses it with
// "invalid connection option", and so does Parse.
type UnknownKeywordError struct {
	// Keyword is the word as the string gave it: a name, never a value.
	Keyword string
}

func (e *UnknownKeywordError) Error() string {
	return fmt.Sprintf("invalid connection option %q", e.Keyword)
}

// unknownKeyword returns the first keyword s gives that libpq does not
// know, or "". s has parsed: its keywords are where pgconn found them.
func unknownKeyword(s string) string {
	if isURI(s) {
		_, query, _ := strings.Cut(s, "?")
		for _, kv := range strings.Split(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			if dk, err := url.QueryUnescape(k); err == nil && dk != "" && !slices.Contains(accepted, dk) {
				return dk
			}
		}
		return ""
	}
	for _, kv := range keywordValues(s) {
		if !slices.Contains(accepted, kv[0]) {
			return kv[0]
		}
	}
	return ""
}
