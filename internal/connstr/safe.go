package connstr

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Parse parses a connection string as pgconn does, but refuses, as
// libpq does, a keyword libpq does not know (*UnknownKeywordError). When
// it cannot, the error it returns never holds the string itself: see
// SafeError.
func Parse(connString string) (*pgconn.Config, error) {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return nil, SafeError(err)
	}
	if k := unknownKeyword(connString); k != "" {
		return nil, &UnknownKeywordError{Keyword: k}
	}
	return cfg, nil
}

// ParseError is a connection string that does not parse, described
// without its values: which keywords it gave and what was wrong.
type ParseError struct {
	// Form is "URI" or "keyword/value".
	Form string
	// Keywords are the libpq keywords the string gave, in order, each
	// once; never their values, nor words libpq does not know.
	Keywords []string
	// Reason is what the parser found wrong, with any password the
	// string held masked.
	Reason string
	err    error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("cannot parse the ")
	b.WriteString(e.Form)
	b.WriteString(" connection string")
	if len(e.Keywords) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(e.Keywords, ", "))
		b.WriteString(")")
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

// Unwrap returns pgconn's error. Its own text may quote the connection
// string, password included: print e, never what it wraps.
func (e *ParseError) Unwrap() error { return e.err }

// SafeError returns err with any connection string it quotes left out.
// pgconn's ParseConfigError quotes the string it could not parse and
// masks the password on a best-effort basis, which fails on strings that
// libpq accepts ("password = x" with spaces around the equals sign) as
// soon as something else in them is wrong. Every message pgrehearse
// prints about a connection string is built here, from the names it
// gave, never from the string. Other errors are returned as they are.
func SafeError(err error) error {
	var pe *pgconn.ParseConfigError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	secrets := Passwords(pe.ConnString)
	// pgconn writes "cannot parse `<string>`: <reason>": the reason is
	// what follows the prefix it would write for an empty reason.
	reason := pe.Error()
	prefix := pgconn.NewParseConfigError(pe.ConnString, "", nil).Error()
	if strings.HasPrefix(reason, prefix) {
		reason = reason[len(prefix):]
	} else {
		reason = "not a valid connection string"
	}
	// The reason may quote a word of the string ("missing "=" after
	// "x""), which in a malformed string can be part of a password
	// written with spaces: quoted words are left out, as is any password
	// found.
	reason = quoted.ReplaceAllStringFunc(reason, func(q string) string {
		if q == `"="` {
			return q
		}
		return `"…"`
	})
	for _, s := range secrets {
		if s != "" {
			reason = strings.ReplaceAll(reason, s, "xxxxx")
		}
	}
	form, keys := describe(pe.ConnString)
	return &ParseError{Form: form, Keywords: keys, Reason: reason, err: err}
}

var quoted = regexp.MustCompile(`"[^"]*"`)

// keywords are the names libpq knows; describe lists only these, so that
// a word of a malformed string (part of a value) is never named.
var keywords = []string{
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
	"channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
	"fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
	"keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode",
	"sslnegotiation", "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode",
	"sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version",
	"ssl_max_protocol_version", "krbsrvname", "gsslib", "gssdelegation", "service",
	"target_session_attrs", "load_balance_hosts", "database", "min_read_buffer_size",
	"statement_cache_capacity", "default_query_exec_mode", "description_cache_capacity",
}

// known returns k's canonical name when libpq knows it.
func known(k string) (string, bool) {
	for _, w := range keywords {
		if strings.EqualFold(w, k) {
			return w, true
		}
	}
	return "", false
}

// isURI reports whether s is a connection URI, as libpq decides.
func isURI(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// describe returns the form of s and the keyword names it gives.
func describe(s string) (string, []string) {
	if isURI(s) {
		var keys []string
		rest, query, _ := strings.Cut(s, "?")
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			keys = append(keys, "user")
			if strings.Contains(rest[:at], ":") {
				keys = append(keys, "password")
			}
		}
		for _, kv := range strings.Split(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			if k, err := url.QueryUnescape(k); err == nil {
				if k, ok := known(k); ok && !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		return "URI", keys
	}
	var keys []string
	for _, kv := range keywordValues(s) {
		if k, ok := known(kv[0]); ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return "keyword/value", keys
}

// Passwords returns the password values s holds (password and
// sslpassword, in a URI's user information or query, or as keywords),
// read as leniently as libpq reads them: spaces around "=", quoted
// values with backslash escapes. A string that does not parse may still
// hold one; what cannot be told apart is returned whole rather than
// missed.
func Passwords(s string) []string {
	var out []string
	if isURI(s) {
		rest, query, _ := strings.Cut(s[strings.Index(s, "://")+3:], "?")
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
				out = append(out, pw)
				if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
					out = append(out, dec)
				}
			}
		}
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if dk, err := url.QueryUnescape(k); err == nil && isPasswordKey(dk) && v != "" {
				out = append(out, v)
				if dec, err := url.QueryUnescape(v); err == nil && dec != v {
					out = append(out, dec)
				}
			}
		}
		return out
	}
	for _, kv := range keywordValues(s) {
		if isPasswordKey(kv[0]) && kv[1] != "" {
			out = append(out, kv[1])
			if kv[2] != kv[1] {
				out = append(out, kv[2])
			}
		}
	}
	return out
}

func isPasswordKey(k string) bool {
	return strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword")
}

// keywordValues splits a keyword/value string as libpq does, leniently:
// each item is {keyword, value as written (quotes and escapes removed),
// raw value}. A token without "=" is kept as a keyword with no value.
func keywordValues(s string) [][3]string {
	var out [][3]string
	i, n := 0, len(s)
	skip := func() {
		for i < n && isSpace(s[i]) {
			i++
		}
	}
	for {
		skip()
		if i >= n {
			return out
		}
		start := i
		for i < n && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[start:i]
		skip()
		if i >= n || s[i] != '=' {
			out = append(out, [3]string{key, "", ""})
			continue
		}
		i++ // '='
		skip()
		var val strings.Builder
		rawStart := i
		if i < n && s[i] == '\'' {
			i++
			for i < n && s[i] != '\'' {
				if s[i] == '\\' && i+1 < n {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
			if i < n {
				i++ // closing quote
			}
		} else {
			for i < n && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < n {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
		}
		raw := strings.Trim(s[rawStart:i], "'")
		out = append(out, [3]string{key, val.String(), raw})
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// ParsePgx parses a connection string as pgx does, for a pgx.Conn, and
// refuses an unknown keyword as Parse does. When it cannot, the error
// never holds the string itself: see SafeError.
func ParsePgx(connString string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, SafeError(err)
	}
	if k := unknownKeyword(connString); k != "" {
		return nil, &UnknownKeywordError{Keyword: k}
	}
	return cfg, nil
}
