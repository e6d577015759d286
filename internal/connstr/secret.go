package connstr

import (
	"errors"
	"net/url"
	"strings"
)

// ErrSSLPassword refuses a connection string with an sslpassword for a
// program started with it: libpq reads a password from its environment
// (PGPASSWORD) but has no variable for an sslpassword, so it could only
// be passed on the program's command line, which every user of the
// machine reads (ps).
var ErrSSLPassword = errors.New("an sslpassword cannot be passed to another program without its command line: give the key's passphrase another way (an unencrypted key readable only by you)")

// WithoutPassword splits connString into the same connection string
// without its password and the password (decoded, "" without one), so
// that a program started with it, such as pgbench, gets the password
// through its environment (PGPASSWORD), out of sight of ps, and the rest
// on its command line. A keyword/value string with a password is
// rewritten with its values quoted (one without is returned as given); a URI loses the password of its user information and of
// its query. A string with an sslpassword is refused (ErrSSLPassword).
func WithoutPassword(connString string) (rest, password string, err error) {
	if isURI(connString) {
		return uriWithoutPassword(connString)
	}
	var items []string
	found := false
	for _, kv := range keywordValues(connString) {
		switch {
		case strings.EqualFold(kv[0], "sslpassword"):
			return "", "", ErrSSLPassword
		case strings.EqualFold(kv[0], "password"):
			password, found = kv[1], true
		default:
			items = append(items, kv[0]+"="+QuoteValue(kv[1]))
		}
	}
	if !found {
		// Nothing to take out: the string as given.
		return connString, "", nil
	}
	return strings.Join(items, " "), password, nil
}

func uriWithoutPassword(s string) (rest, password string, err error) {
	i := strings.Index(s, "://") + 3
	authPath, query, hasQuery := strings.Cut(s[i:], "?")
	if at := strings.LastIndex(authPath, "@"); at >= 0 {
		if user, pw, ok := strings.Cut(authPath[:at], ":"); ok {
			password = pw
			if dec, err := url.PathUnescape(pw); err == nil {
				password = dec
			}
			authPath = user + authPath[at:]
		}
	}
	var params []string
	if hasQuery {
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			dk, err := url.QueryUnescape(k)
			if err != nil {
				dk = k
			}
			switch {
			case strings.EqualFold(dk, "sslpassword"):
				return "", "", ErrSSLPassword
			case strings.EqualFold(dk, "password"):
				password = v
				if dec, err := url.QueryUnescape(v); err == nil {
					password = dec
				}
			default:
				params = append(params, kv)
			}
		}
	}
	rest = s[:i] + authPath
	if len(params) > 0 {
		rest += "?" + strings.Join(params, "&")
	}
	return rest, password, nil
}

// QuoteValue quotes a value of a keyword/value connection string as
// libpq reads it: bare when it holds no space, quote or backslash, else
// in single quotes with those escaped.
func QuoteValue(s string) string {
	if s != "" && !strings.ContainsAny(s, " '\\\t\n\r\f\v") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
