package prefix

import (
	"bytes"
	"fmt"
	"strconv"
)

// A Prefix is a compiled log_line_prefix: a sequence of literal text and
// escapes that matches the start of a stderr log line and extracts the
// fields the interpreter needs. Matching is hand-written rather than a
// regular expression because it runs once per line on the hot path.
type Prefix struct {
	// tries counts the places free-text escapes tried in one match: the
	// search backtracks, and a hostile line must not make it exponential.
	tries int
	src   string
	items []item
	// HasPID is false when the prefix has no %p: DETAIL and STATEMENT
	// lines then attach to the previous entry whatever its process.
	HasPID bool
}

type item struct {
	lit []byte // literal text, when esc == 0
	esc byte   // escape letter: 'm', 'p', 'u', ...
	// width is the padding from %10u (> 0: spaces before the value) or
	// %-10u (< 0: spaces after it), 0 when none.
	width int
}

// Fields are the values a matched prefix yields, as slices of the line.
type Fields struct {
	Time        []byte // %m, %t or %n, with the zone
	TimeKind    byte   // 'm', 't' or 'n'
	PID         []byte
	Session     []byte
	User        []byte
	Database    []byte
	Application []byte
	SQLState    []byte
	// BackendType (%b) and LeaderPID (%P, the leader's pid in a
	// parallel worker's lines, empty in every other process's).
	BackendType []byte
	LeaderPID   []byte
	// QCut is set when the line stopped at %q: a background process,
	// whose short tail the tail cache keeps out of its fast table.
	QCut bool
}

// String returns the log_line_prefix the prefix was compiled from.
func (p *Prefix) String() string { return p.src }

// Compile parses a log_line_prefix as PostgreSQL's log_line_prefix
// documents it: %-escapes with an optional padding width, %% for a percent
// sign, and %q, after which background processes print nothing.
func Compile(s string) (*Prefix, error) {
	p := &Prefix{src: s}
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			p.items = append(p.items, item{lit: lit})
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			lit = append(lit, c)
			continue
		}
		i++
		if i >= len(s) {
			return nil, fmt.Errorf("log_line_prefix %q ends with a lone %%", s)
		}
		if s[i] == '%' {
			lit = append(lit, '%')
			continue
		}
		// Padding: %-10u or %10u (PostgreSQL 9.6+).
		j := i
		if s[j] == '-' {
			j++
		}
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		width := 0
		if j > i {
			n, err := strconv.Atoi(s[i:j])
			if err != nil {
				return nil, fmt.Errorf("log_line_prefix %q: bad padding %q", s, s[i:j])
			}
			width = n
		}
		if j >= len(s) {
			return nil, fmt.Errorf("log_line_prefix %q ends inside an escape", s)
		}
		esc := s[j]
		i = j
		switch esc {
		case 'a', 'u', 'd', 'r', 'h', 'b', 'p', 'P', 't', 'm', 'n', 'i', 'e', 'c', 'l', 's', 'v', 'x', 'q', 'Q':
		default:
			// The server prints nothing for an unknown escape.
			continue
		}
		flush()
		if esc == 'p' {
			p.HasPID = true
		}
		p.items = append(p.items, item{esc: esc, width: width})
	}
	flush()
	return p, nil
}

// HasTime reports whether the prefix prints the time of each line.
func (p *Prefix) HasTime() bool { return p.TimeEscape() != 0 }

// TimeEscape returns the escape of the time of each line: 'm' (with
// milliseconds), 't' (whole seconds) or 'n' (epoch, with milliseconds),
// the first the prefix has; 0 when it has none.
func (p *Prefix) TimeEscape() byte {
	for _, it := range p.items {
		if it.esc == 'm' || it.esc == 't' || it.esc == 'n' {
			return it.esc
		}
	}
	return 0
}

// Cacheable reports whether lines can be told apart by the text after a
// leading time (see stderrReader.tails), and which time escape leads:
// the prefix must start with %m, %t or %n and hold no escape that changes
// from line to line of a session (%l, %x, %v, %Q, or a second time).
func (p *Prefix) Cacheable() (byte, bool) {
	if len(p.items) == 0 || p.items[0].width != 0 {
		return 0, false
	}
	lead := p.items[0].esc
	if lead != 'm' && lead != 't' && lead != 'n' {
		return 0, false
	}
	for _, it := range p.items[1:] {
		switch it.esc {
		case 'l', 'x', 'v', 'Q', 'm', 't', 'n':
			return 0, false
		}
	}
	return lead, true
}

// Match matches the prefix at the start of line and returns the rest of
// the line (severity and message) and the fields. It reports false when
// the line does not start with this prefix.
func (p *Prefix) Match(line []byte, f *Fields) ([]byte, bool) {
	*f = Fields{}
	p.tries = 0
	return p.matchFrom(0, line, f)
}

// maxTries bounds the backtracking of one match; real lines need one try
// per free-text escape, or a few when a value contains the next literal.
const maxTries = 64

// AtSeverity reports whether b starts with a Severity, in English or in a
// language the reader reports as unsupported: the end of a whole prefix.
func AtSeverity(b []byte) bool {
	if _, _, ok := SplitSeverity(b); ok {
		return true
	}
	return ForeignSeverity(b) != ""
}

func (p *Prefix) matchFrom(k int, b []byte, f *Fields) ([]byte, bool) {
	for ; k < len(p.items); k++ {
		it := &p.items[k]
		if it.esc == 0 {
			if !bytes.HasPrefix(b, it.lit) {
				return nil, false
			}
			b = b[len(it.lit):]
			continue
		}
		if it.esc == 'q' {
			// Background processes stop the prefix at %q. Try the full
			// prefix first, then the short one; the message that follows
			// must start with a severity either way.
			save := *f
			if rest, ok := p.matchFrom(k+1, b, f); ok {
				return rest, true
			}
			*f = save
			if AtSeverity(b) {
				f.QCut = true
				return b, true
			}
			return nil, false
		}
		if it.width > 0 {
			// %10p: spaces before the value.
			for len(b) > 0 && b[0] == ' ' {
				b = b[1:]
			}
		}
		var v []byte
		var ok bool
		switch it.esc {
		case 'p', 'l', 'x', 'P', 'Q':
			v, b, ok = takeInt(b)
			if it.esc == 'P' || it.esc == 'x' {
				ok = true // empty outside parallel workers / transactions
			}
		case 'm', 't', 's':
			v, b, ok = TakeTimestamp(b)
		case 'n':
			v, b, ok = TakeEpoch(b)
		case 'c':
			v, b, ok = takeSessionID(b)
		case 'e':
			if len(b) >= 5 {
				v, b, ok = b[:5], b[5:], true
			}
		case 'v':
			v, b, ok = takeVXID(b)
		default:
			// Free text (%u %d %a %h %r %b %i): runs to where the next
			// literal matches and the rest of the prefix matches after it.
			return p.matchFree(k, b, f)
		}
		if !ok {
			return nil, false
		}
		if it.width < 0 {
			// %-10p: spaces after the value, up to the width.
			for n := len(v); n < -it.width && len(b) > 0 && b[0] == ' '; n++ {
				b = b[1:]
			}
		}
		p.set(it.esc, v, f)
	}
	// A whole prefix is followed by the severity; without this check a
	// free-text value holding the next literal ("PostgreSQL JDBC Driver"
	// before " ") would end too early and the line would be lost.
	if !AtSeverity(b) {
		return nil, false
	}
	return b, true
}

// matchFree matches the free-text escape at item k, which may contain any
// character, by trying each place where the following literal occurs.
func (p *Prefix) matchFree(k int, b []byte, f *Fields) ([]byte, bool) {
	it := &p.items[k]
	if k+1 == len(p.items) {
		// Free text at the very end of the prefix: it runs to the severity.
		i := SeverityIndex(b)
		if i < 0 {
			return nil, false
		}
		p.set(it.esc, bytes.TrimSpace(b[:i]), f)
		return b[i:], true
	}
	next := &p.items[k+1]
	if next.esc != 0 {
		// Two escapes back to back: the free text takes nothing it can
		// leave; give it the empty value and go on.
		p.set(it.esc, nil, f)
		return p.matchFrom(k+1, b, f)
	}
	off := 0
	for ; p.tries < maxTries; p.tries++ {
		var i int
		if len(next.lit) == 1 {
			i = bytes.IndexByte(b[off:], next.lit[0])
		} else {
			i = bytes.Index(b[off:], next.lit)
		}
		if i < 0 {
			return nil, false
		}
		// No need to undo what a failed try set: a later try sets the
		// same fields again (only %q can leave fields unset, and it
		// restores them itself).
		p.set(it.esc, bytes.TrimSpace(b[:off+i]), f)
		if rest, ok := p.matchFrom(k+1, b[off+i:], f); ok {
			return rest, true
		}
		off += i + 1
	}
	return nil, false
}

func (p *Prefix) set(esc byte, v []byte, f *Fields) {
	switch esc {
	case 'm', 't', 'n':
		f.Time, f.TimeKind = v, esc
	case 'p':
		f.PID = v
	case 'c':
		f.Session = v
	case 'u':
		f.User = v
	case 'd':
		f.Database = v
	case 'a':
		f.Application = v
	case 'e':
		f.SQLState = v
	case 'b':
		f.BackendType = v
	case 'P':
		f.LeaderPID = v
	}
}

// ParallelWorker reports whether a line's fields are a parallel worker's:
// its backend type (%b) says so, or it has a leader (%P) other than
// itself.
func (f *Fields) ParallelWorker() bool {
	return string(f.BackendType) == "parallel worker" || len(f.LeaderPID) > 0 && string(f.LeaderPID) != string(f.PID)
}

func takeInt(b []byte) (v, rest []byte, ok bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return b[:i], b[i:], i > 0 && b[i-1] != '-'
}

// TakeTimestamp takes "2026-11-22 08:11:02[.123] ZONE". The zone is an
// abbreviation (UTC, CEST, ChST) or a numeric offset (+03, -0530, +05:30),
// which is how the server prints %Z; what follows it is the next literal
// of the prefix, even a "-" or a digit ("%t-%c-": "UTC-5eefe116.22f4-").
func TakeTimestamp(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[10] != ' ' || b[13] != ':' || b[16] != ':' {
		return nil, nil, false
	}
	i := 19
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i+1 < len(b) && b[i] == ' ' {
		if n := ZoneLen(b[i+1:]); n > 0 {
			i += 1 + n
		}
	}
	return b[:i], b[i:], true
}

// ZoneLen returns the length of the zone at the start of b: letters, or
// a sign, two digits and optionally two more, with or without a colon. 0
// when b does not start with a zone.
func ZoneLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	if c := b[0]; c == '+' || c == '-' {
		i := 1
		for i < len(b) && i < 3 && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i != 3 {
			return 0
		}
		j := i
		if j < len(b) && b[j] == ':' {
			j++
		}
		if j+2 <= len(b) && b[j] >= '0' && b[j] <= '9' && b[j+1] >= '0' && b[j+1] <= '9' {
			i = j + 2
		}
		return i
	}
	i := 0
	for i < len(b) && i <= 6 && (b[i] >= 'A' && b[i] <= 'Z' || b[i] >= 'a' && b[i] <= 'z') {
		i++
	}
	if i > 6 {
		return 0 // a word, not a zone
	}
	return i
}

// IsZoneByte reports whether c may continue a zone: the fast paths that
// compare a remembered zone check that the zone ends after it.
func IsZoneByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func TakeEpoch(b []byte) (v, rest []byte, ok bool) {
	i := 0
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '.') {
		i++
	}
	return b[:i], b[i:], i > 0
}

// takeSessionID takes "6571e2a3.1f40": hex start time, dot, hex pid.
func takeSessionID(b []byte) (v, rest []byte, ok bool) {
	i := 0
	dot := false
	for i < len(b) {
		c := b[i]
		if c == '.' && !dot && i > 0 {
			dot = true
		} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			break
		}
		i++
	}
	return b[:i], b[i:], dot && b[i-1] != '.'
}

// takeVXID takes "3/1234", empty for processes without one.
func takeVXID(b []byte) (v, rest []byte, ok bool) {
	i := 0
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '/' || b[i] == '-') {
		i++
	}
	return b[:i], b[i:], true
}
