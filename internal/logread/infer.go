package logread

import (
	"bytes"
	"strings"
)

// inferPrefix guesses the log_line_prefix that produced line, by reading
// the text before the severity: timestamps, the process id, session ids,
// "key=value" fields with well-known keys and "user@database". It returns
// "" when line has no severity. The guess is only a candidate: detection
// keeps it only if it matches the other lines too.
func inferPrefix(line []byte) (string, bool) {
	i := severityIndex(line)
	if i < 0 {
		return "", false
	}
	pre := line[:i]
	var out strings.Builder
	sawPID := false
	for len(pre) > 0 {
		c := pre[0]
		if c >= '0' && c <= '9' {
			if _, rest, ok := takeTimestamp(pre); ok && len(pre) >= 19 && pre[4] == '-' {
				if len(pre) > 19 && pre[19] == '.' {
					out.WriteString("%m")
				} else {
					out.WriteString("%t")
				}
				pre = rest
				continue
			}
			if v, rest, ok := takeEpoch(pre); ok && len(v) >= 14 && bytes.IndexByte(v, '.') == 10 {
				out.WriteString("%n")
				pre = rest
				continue
			}
			if v, rest, ok := takeSessionID(pre); ok && bytes.IndexByte(v, '.') >= 8 {
				out.WriteString("%c")
				pre = rest
				continue
			}
			if h, rest, ok := takeRemote(pre); ok {
				_ = h
				out.WriteString("%r")
				pre = rest
				continue
			}
			if len(pre) >= 6 && pre[5] == ' ' && isSQLState(string(pre[:5])) {
				out.WriteString("%e")
				pre = pre[5:]
				continue
			}
			v, rest, _ := takeInt(pre)
			if !sawPID {
				out.WriteString("%p")
				sawPID = true
			} else {
				out.WriteString("%l")
			}
			_ = v
			pre = rest
			continue
		}
		if bytes.HasPrefix(pre, []byte("[unknown]")) || isWordByte(c) && strings.HasSuffix(out.String(), "%d/") {
			// "app@shop/web": after user@database, a slash and the
			// application; "[unknown]" is how the server prints a field
			// it does not know yet.
			out.WriteString("%a")
			pre = skipValue(pre[1:])
			continue
		}
		if isWordByte(c) {
			// "user=app," / "db=shop " / "app@shop "
			j := 0
			for j < len(pre) && isWordByte(pre[j]) {
				j++
			}
			word := string(pre[:j])
			if j < len(pre) && pre[j] == '=' {
				if esc := keyEscape(word); esc != "" {
					out.WriteString(word + "=" + esc)
					pre = skipValue(pre[j+1:])
					continue
				}
			}
			if j < len(pre) && pre[j] == '@' {
				out.WriteString("%u@%d")
				pre = skipValue(pre[j+1:])
				continue
			}
			if j == len(pre) || pre[j] == ' ' || pre[j] == ':' {
				// A lone word before the severity, e.g. an application.
				out.WriteString(word)
				pre = pre[j:]
				continue
			}
			out.WriteString(word)
			pre = pre[j:]
			continue
		}
		if c == '%' {
			out.WriteString("%%")
		} else {
			out.WriteByte(c)
		}
		pre = pre[1:]
	}
	ps := out.String()
	// Every server log line starts with its time in practice; a guess
	// without one is another format (syslog, Heroku's logplex), whose
	// day and hour would be read as process ids.
	if !strings.HasPrefix(ps, "%m") && !strings.HasPrefix(ps, "%t") && !strings.HasPrefix(ps, "%n") {
		return "", false
	}
	return ps, true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9'
}

// keyEscape maps the key of a "key=value" prefix field to its escape.
func keyEscape(key string) string {
	switch strings.ToLower(key) {
	case "user", "usr", "u", "username", "user_name", "role":
		return "%u"
	case "db", "database", "dbname", "d":
		return "%d"
	case "app", "application", "appli", "application_name", "a":
		return "%a"
	case "client", "host", "h", "remote", "client_addr":
		return "%h"
	case "queryid", "query_id":
		return "%Q"
	case "session", "sid", "session_id":
		return "%c"
	case "xid", "tx", "txid":
		return "%x"
	case "vxid":
		return "%v"
	case "line", "l":
		return "%l"
	case "pid":
		return "%p"
	case "e", "sqlstate", "state":
		return "%e"
	}
	return ""
}

// skipValue skips a prefix field value up to the next separator; a value
// in brackets ("[local]") is skipped whole.
func skipValue(b []byte) []byte {
	if len(b) > 0 && b[0] == '[' {
		if i := bytes.IndexByte(b, ']'); i >= 0 {
			return b[i+1:]
		}
	}
	for i, c := range b {
		if c == ',' || c == ' ' || c == ']' || c == ')' || c == ';' || c == '@' || c == '/' || c == ':' {
			return b[i:]
		}
	}
	return nil
}

// takeRemote takes "10.0.0.1(5432)", a %r host and port.
func takeRemote(b []byte) ([]byte, []byte, bool) {
	i := 0
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '.' || b[i] == ':' || b[i] >= 'a' && b[i] <= 'f') {
		i++
	}
	if i == 0 || i >= len(b) || b[i] != '(' || bytes.IndexByte(b[:i], '.') < 0 && bytes.IndexByte(b[:i], ':') < 0 {
		return nil, nil, false
	}
	j := bytes.IndexByte(b[i:], ')')
	if j < 0 {
		return nil, nil, false
	}
	return b[:i+j+1], b[i+j+1:], true
}

// withQ returns ps with %q inserted before its first session-only field,
// so that background processes' shorter lines match too.
func withQ(ps string) string {
	if strings.Contains(ps, "%q") {
		return ps
	}
	best := -1
	for _, esc := range []string{"%u", "%d", "%a", "%h", "%r", "%c", "%x", "%v", "%Q"} {
		if i := strings.Index(ps, esc); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return ps
	}
	// Start %q at the beginning of the field: after the last space or
	// bracket before it, so "user=%u" keeps its key inside.
	j := strings.LastIndexAny(ps[:best], " [(:") + 1
	return ps[:j] + "%q" + ps[j:]
}
