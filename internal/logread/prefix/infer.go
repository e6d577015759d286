package prefix

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Prefix inference reads the log_line_prefix off the first lines of a
// stderr log, for any combination of escapes and literal text: there is no
// list of known prefixes to pick from.
//
// The text before each line's severity is cut into tokens by their shape:
// times, epoch times, session ids, host(port), vxids, numbers, words, and
// the literal text between them. Lines of the same shape (the same kinds of
// token with the same literal text between them) line up token by token.
// The shape most lines have is the prefix (a line read only by taking
// a session id or a time for a name does not count: it is another
// prefix's); each of its tokens becomes an escape, chosen by
//   - its shape: a time with a fraction is %m, "6571e2a3.1f40" is %c, a
//     five-character code with a letter or a leading zero is %e, never %l;
//   - its label: "user=%u", "db=%d", ` sql_error_code = %e`, pid="%p";
//   - where it stands: "%u@%d/%a";
//   - for free text with none of these, what the messages say: a
//     "connection authorized: user=app database=shop" line names the user
//     and database the prefix printed on the same line.
//
// A token with the same value on every line is literal text (the "1" of
// "[%l-1]"), unless one of the above makes it a field. Lines of a shorter
// shape that stops early in the prefix are background processes, which
// print nothing after %q: the prefix gets a %q there.
//
// When two readings of the free-text fields fit every line equally well
// and extract different values, inference stops and says which candidates
// remain and which line tells them apart (errAmbiguousPrefix).

// ErrUnknownPrefix is returned (wrapped) when a stderr log's prefix could
// not be detected.
var ErrUnknownPrefix = errors.New("cannot detect the log_line_prefix: give it (SHOW log_line_prefix on the server)")

// ErrNoSeverity is returned (wrapped, with ErrUnknownPrefix) when no line
// of a stderr log's head holds a severity (LOG:, ERROR:, ...): every line
// a PostgreSQL server writes through its stderr has one, so the text is
// no server log of any prefix.
var ErrNoSeverity = errors.New("no line has a severity (LOG:, ERROR:, ...)")

// ErrNotEnglish is returned (wrapped) when the log's messages are in
// another language than English, which the reader cannot interpret.
var ErrNotEnglish = errors.New("log messages are not in English: set lc_messages = 'C' on the server (ALTER SYSTEM SET lc_messages = 'C'; SELECT pg_reload_conf();) and capture the log again")

// ErrAmbiguousPrefix is returned (wrapped) when more than one prefix fits
// the first lines of a stderr log and they read different fields.
var ErrAmbiguousPrefix = errors.New("the log_line_prefix is ambiguous: give it (SHOW log_line_prefix on the server)")

// tokKind is what a token of the text before a severity looks like.
type tokKind uint8

const (
	tkLit     tokKind = iota // literal text between values
	tkTime                   // 2026-11-22 08:11:02[.123] UTC
	tkEpoch                  // 1795335062.123
	tkSession                // 6571e2a3.1f40
	tkRemote                 // 10.0.0.1(5432), host.example(5432)
	tkVXID                   // 3/1234
	tkNum                    // 1234, -8112313845396740087, 00000, 42P01
	tkWord                   // free text: app, [unknown], 10.0.0.1, my_db
)

type token struct {
	kind tokKind
	text string
	key  string // the label before a value ("user" of "user="), lower case
	frac bool   // a tkTime with a fraction of a second
}

// tokenize cuts pre, the text of a line before its Severity, into tokens.
// With splitHyphen, a "-" between letters separates words ("%u-%d")
// instead of joining them ("my-db").
func tokenize(pre []byte, splitHyphen bool) []token {
	var toks []token
	var lit []byte
	key := ""          // a label waiting for its value
	keySpaced := false // the label is followed by " = ", not "="
	flush := func() {
		if len(lit) > 0 {
			toks = append(toks, token{kind: tkLit, text: string(lit)})
			lit = lit[:0]
		}
	}
	emit := func(k tokKind, v []byte) {
		flush()
		toks = append(toks, token{kind: k, text: string(v), key: key})
		key = ""
	}
	addLit := func(c byte) {
		if key != "" && !(c == '=' || c == '"' || c == '\'' || c == ' ' && keySpaced) {
			// "user=,db=": the label's value is empty.
			emit(tkWord, nil)
		}
		lit = append(lit, c)
	}
	for i := 0; i < len(pre); {
		b := pre[i:]
		c := b[0]
		if c == '@' {
			if len(toks) == 0 || toks[len(toks)-1].kind == tkLit || len(lit) > 0 {
				// "[1] @ LOG": %u@%d with both empty.
				emit(tkWord, nil)
			}
			addLit(c)
			i++
			if i >= len(pre) || !startsValue(pre[i:]) {
				emit(tkWord, nil)
			}
			continue
		}
		if c == '/' && len(lit) == 0 && hasAtBefore(toks) {
			// "%u@%d/%a": the application follows, possibly empty.
			addLit(c)
			i++
			if i >= len(pre) || !startsValue(pre[i:]) {
				emit(tkWord, nil)
			}
			continue
		}
		if i == 0 || !isAlnum(pre[i-1]) {
			if n, k, frac := valueAt(b, key, splitHyphen); n > 0 {
				if k == tkWord && n < len(b) && (b[n] == '=' || bytes.HasPrefix(b[n:], []byte(" = "))) && isLabel(b[:n]) {
					// A label: its text stays literal, its value follows.
					if key != "" {
						emit(tkWord, nil)
					}
					lit = append(lit, b[:n]...)
					key, keySpaced = strings.ToLower(string(b[:n])), b[n] == ' '

					i += n
					continue
				}
				if k == tkWord {
					n = wordsLen(b, n, key != "", openerBefore(toks, lit), splitHyphen)
				}
				emit(k, b[:n])
				toks[len(toks)-1].frac = frac
				i += n
				continue
			}
		}
		addLit(c)
		i++
	}
	if key != "" {
		emit(tkWord, nil)
	}
	flush()
	return toks
}

// openerBefore returns the bracket or quote the text before a value ends
// with, or 0.
func openerBefore(toks []token, lit []byte) byte {
	l := lit
	if len(l) == 0 && len(toks) > 0 && toks[len(toks)-1].kind == tkLit {
		l = []byte(toks[len(toks)-1].text)
	}
	if len(l) == 0 {
		return 0
	}
	switch c := l[len(l)-1]; c {
	case '[', '(', '"', '\'':
		return c
	}
	return 0
}

// wordsLen extends a free-text value of n bytes at b over the words that
// follow it after single spaces: the whole of "client backend" in
// "[client backend]", and of "batch job" in "app=batch job,host=" (a
// labelled value runs up to the next label).
func wordsLen(b []byte, n int, labelled bool, opener byte, splitHyphen bool) int {
	if !labelled && opener == 0 {
		return n
	}
	closer := map[byte]byte{'[': ']', '(': ')', '"': '"', '\'': '\''}[opener]
	if opener != 0 {
		// Up to the closer, if it comes before the end of the text.
		if i := bytes.IndexByte(b[n:], closer); i >= 0 && bytes.IndexByte(b[n:n+i], opener) < 0 {
			return n + i
		}
		return n
	}
	for n+1 < len(b) && b[n] == ' ' && b[n+1] != ' ' {
		m, k, _ := valueAt(b[n+1:], "", splitHyphen)
		if m == 0 || k != tkWord {
			break
		}
		w := b[n+1 : n+1+m]
		if n+1+m < len(b) && (b[n+1+m] == '=' || bytes.HasPrefix(b[n+1+m:], []byte(" = "))) && isLabel(w) {
			break // the next label
		}
		n += 1 + m
	}
	return n
}

func hasAtBefore(toks []token) bool {
	return len(toks) >= 2 && toks[len(toks)-2].kind == tkLit && strings.HasSuffix(toks[len(toks)-2].text, "@")
}

func startsValue(b []byte) bool {
	return len(b) > 0 && (isAlnum(b[0]) || b[0] == '[' || b[0] == '_')
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isLabel reports whether w can be the label of a "key=value" field.
func isLabel(w []byte) bool {
	if len(w) == 0 || !(w[0] >= 'a' && w[0] <= 'z' || w[0] >= 'A' && w[0] <= 'Z' || w[0] == '_') {
		return false
	}
	for _, c := range w {
		if !(isAlnum(c) || c == '_') || c >= 0x80 {
			return false
		}
	}
	return true
}

// valueAt recognizes the value at the start of b and returns its length
// and kind, 0 when b does not start with one. key is the pending label:
// after "queryid=" a number may be negative.
func valueAt(b []byte, key string, splitHyphen bool) (int, tokKind, bool) {
	c := b[0]
	if isDigit(c) {
		if v, _, ok := TakeTimestamp(b); ok {
			return len(v), tkTime, len(v) > 19 && v[19] == '.'
		}
		if v, _, ok := TakeEpoch(b); ok && len(v) >= 12 && bytes.IndexByte(v, '.') == 10 && endsValue(b, len(v)) {
			return len(v), tkEpoch, false
		}
	}
	if n := sessionIDLen(b); n > 0 {
		return n, tkSession, false
	}
	if n := remoteLen(b); n > 0 {
		return n, tkRemote, false
	}
	if c == '[' {
		for _, w := range []string{"[unknown]", "[local]"} {
			if bytes.HasPrefix(b, []byte(w)) {
				return len(w), tkWord, false
			}
		}
	}
	if isDigit(c) || c == '-' && key != "" && len(b) > 1 && isDigit(b[1]) {
		i := 1
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i < len(b) && b[i] == '/' && i+1 < len(b) && isDigit(b[i+1]) {
			j := i + 1
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			if endsValue(b, j) {
				return j, tkVXID, false
			}
		}
		if endsValue(b, i) {
			return i, tkNum, false
		}
	}
	if isSQLStateAt(b) {
		return 5, tkNum, false
	}
	if isAlnum(c) || c == '_' {
		i := 0
		for i < len(b) {
			d := b[i]
			if isAlnum(d) || d == '_' || d == '.' && i+1 < len(b) && isAlnum(b[i+1]) || d == '$' {
				i++
				continue
			}
			if d == '-' && !splitHyphen && i > 0 && i+1 < len(b) && isLetter(b[i-1]) && isLetter(b[i+1]) {
				i++
				continue
			}
			break
		}
		return i, tkWord, false
	}
	return 0, 0, false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// endsValue reports whether a value of n bytes ends there: not followed
// by more of a word, a number or a dotted address.
func endsValue(b []byte, n int) bool {
	if n >= len(b) {
		return true
	}
	c := b[n]
	return !isAlnum(c) && c != '_' && !(c == '.' && n+1 < len(b) && isDigit(b[n+1]))
}

// isSQLStateAt reports whether b starts with a SQLSTATE that cannot be a
// number: five digits or capitals with a letter ("42P01", "P0001") or a
// leading zero ("00000", which %l never prints).
func isSQLStateAt(b []byte) bool {
	if len(b) < 5 || !endsValue(b, 5) {
		return false
	}
	letter, digit := false, false
	for _, c := range b[:5] {
		switch {
		case c >= 'A' && c <= 'Z':
			letter = true
		case isDigit(c):
			digit = true
		default:
			return false
		}
	}
	return digit && (letter || b[0] == '0')
}

// sessionIDLen returns the length of a %c session id at b ("6571e2a3.1f40":
// the backend's start time and process id in hex), 0 if there is none.
func sessionIDLen(b []byte) int {
	i := 0
	for i < len(b) && isHex(b[i]) {
		i++
	}
	if i < 6 || i > 8 || i >= len(b) || b[i] != '.' {
		return 0
	}
	j := i + 1
	for j < len(b) && isHex(b[j]) {
		j++
	}
	if j == i+1 || j-i-1 > 8 || !endsValue(b, j) {
		return 0
	}
	return j
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' }

// remoteLen returns the length of a %r value at b, "host(port)", 0 if
// there is none.
func remoteLen(b []byte) int {
	i := 0
	for i < len(b) && (isAlnum(b[i]) || b[i] == '.' || b[i] == ':' || b[i] == '-' || b[i] == '_') {
		i++
	}
	if i == 0 || i >= len(b) || b[i] != '(' {
		return 0
	}
	j := i + 1
	for j < len(b) && isDigit(b[j]) {
		j++
	}
	if j == i+1 || j >= len(b) || b[j] != ')' {
		return 0
	}
	return j + 1
}

// sample is one line of the head used for inference: the text before the
// severity and what its message says about the session.
type sample struct {
	line []byte
	pre  []byte
	toks []token
	ev   evidence
}

// evidence is what a message says about the session that logged it: the
// prefix printed the same values on that line.
type evidence struct {
	user, database, host string
}

// evidenceOf reads the session's names off the messages that carry them.
func evidenceOf(msg []byte) evidence {
	var e evidence
	m := string(msg)
	switch {
	case strings.HasPrefix(m, "connection authorized: "):
		e.user, e.database = Field(m, "user="), Field(m, "database=")
	case strings.HasPrefix(m, "disconnection: "):
		e.user, e.database, e.host = Field(m, "user="), Field(m, "database="), Field(m, "host=")
	case strings.HasPrefix(m, "connection received: "):
		e.host = Field(m, "host=")
	}
	return e
}

// maxFreeColumns bounds the free-text words whose readings are all tried.
const maxFreeColumns = 6

// roles a free-text column can take.
const (
	roleNone  = iota // not decided
	roleUser         // %u
	roleDB           // %d
	roleApp          // %a
	roleHost         // %h
	roleOther        // %b and the like: free text the reader does not keep
	numRoles
)

var roleEscape = [numRoles]byte{0, 'u', 'd', 'a', 'h', 'b'}

// keyEscape maps the label of a "key=value" field to its escape.
func keyEscape(key string) byte {
	switch key {
	case "user", "usr", "u", "username", "user_name", "role", "usename":
		return 'u'
	case "db", "database", "dbname", "d", "datname", "database_name":
		return 'd'
	case "app", "application", "appli", "application_name", "a", "appname":
		return 'a'
	case "client", "host", "h", "remote", "client_addr", "clientaddr", "client_host":
		return 'h'
	case "connection_source", "remote_host", "r":
		return 'r'
	case "queryid", "query_id":
		return 'Q'
	case "session", "sid", "session_id", "sess":
		return 'c'
	case "xid", "tx", "txid", "tid", "trx_id", "transaction_id", "txn":
		return 'x'
	case "vxid", "vtid", "virtual_transaction_id":
		return 'v'
	case "line", "l", "log_line", "line_num", "lineno":
		return 'l'
	case "pid", "process", "process_id", "p":
		return 'p'
	case "ppid", "leader_pid", "leader":
		return 'P'
	case "e", "sqlstate", "state", "sql_error_code", "error_code", "code", "sql_state", "errcode", "state_code":
		return 'e'
	case "time", "time_ms", "ts", "timestamp", "t", "log_time":
		return 'm'
	case "proc_start_time", "session_start", "start", "session_start_time", "s":
		return 's'
	case "backend_type", "backend", "type", "b":
		return 'b'
	case "tag", "command_tag", "ps", "i":
		return 'i'
	}
	return 0
}

// Inference is the result of inferring a prefix: the prefix, and what the
// reader should say about how it was chosen.
type Inference struct {
	Prefix   string
	Warnings []string
	// votes counts the lines whose message agrees with a free-text
	// field's role: between two tokenizations that read as many lines,
	// the one the messages agree with more wins ("alice-shop" is %u-%d).
	votes int
}

// MaxSamples bounds the lines inference reads.
const MaxSamples = 2000

// detectPrefix infers the log_line_prefix of a stderr log from its head.
func detectPrefix(head []byte) (string, error) {
	inf, err := inferPrefixFromHead(head)
	return inf.Prefix, err
}

// HeadLines returns the lines of head that may start a message: not
// empty, not a tab continuation. The last line is kept even without its
// newline: a first line longer than the head is still the start of a
// message, and its prefix is in the head.
func HeadLines(head []byte, max int) [][]byte {
	var lines [][]byte
	for len(head) > 0 && len(lines) < max {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		if i < 0 {
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 || line[0] == '\t' {
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

func inferPrefixFromHead(head []byte) (Inference, error) {
	lines := HeadLines(head, MaxSamples)
	if len(lines) == 0 {
		return Inference{}, fmt.Errorf("%w (the log is empty)", ErrUnknownPrefix)
	}
	return Infer(lines)
}

// Infer infers the prefix of lines, the first lines of a log.
func Infer(lines [][]byte) (Inference, error) {
	if len(lines) == 0 {
		return Inference{}, fmt.Errorf("%w (no lines)", ErrUnknownPrefix)
	}
	var samples []sample
	for _, l := range lines {
		i := SeverityIndex(l)
		if i < 0 {
			continue
		}
		_, msg, _ := SplitSeverity(l[i:])
		samples = append(samples, sample{line: l, pre: l[:i], ev: evidenceOf(msg)})
	}
	if len(samples) == 0 {
		if w, n := foreignHead(lines); w != "" {
			return Inference{}, fmt.Errorf("line %d: %q is not English: %w", n, w, ErrNotEnglish)
		}
		return Inference{}, fmt.Errorf("%w: %w, e.g. %q", ErrUnknownPrefix, ErrNoSeverity, truncate(lines[0], 120))
	}
	var best Inference
	var bestErr error
	bestN, bestClean, bestVotes := -1, -1, 0
	for _, split := range []bool{false, true} {
		if split && !anyHyphen(samples) {
			break // "-" splits no word: the same tokens again
		}
		for i := range samples {
			samples[i].toks = tokenize(samples[i].pre, split)
		}
		order, groups := mainShapes(samples)
		for _, main := range order[:min(len(order), 4)] {
			inf, err := induce(samples, main, groups)
			ps, v := inf.Prefix, inf.votes
			if err != nil {
				var amb *ambiguity
				if !errors.As(err, &amb) {
					continue
				}
				ps = amb.first
			}
			// The prefix that reads most lines without taking another
			// prefix's session id or time for a name wins: when the
			// prefix changed in the first lines, the old one may read
			// the new one's lines too, "6b0b8e00.7d9c alice" as %u.
			clean, n := countReads(ps, lines)
			if clean > bestClean || clean == bestClean && (n > bestN || n == bestN && v > bestVotes) {
				best, bestN, bestClean, bestVotes, bestErr = inf, n, clean, v, err
			}
			if err == nil && clean == len(samples) && !anyHyphen(samples) {
				break // every line read: no other shape can do better
			}
		}
	}
	if bestErr != nil {
		return Inference{}, bestErr
	}
	if bestN < 0 {
		return Inference{}, fmt.Errorf("%w: no prefix fits the first lines, e.g. %q", ErrUnknownPrefix, truncate(lines[0], 120))
	}
	if bestN == 0 || bestN*2 < len(samples) {
		return Inference{}, fmt.Errorf("%w: the inferred %q matches %d of the first %d lines, e.g. not %q", ErrUnknownPrefix, best.Prefix, bestN, len(samples), truncate(firstUnmatched(best.Prefix, lines), 120))
	}
	return best, nil
}

// anyHyphen reports whether a word of the samples holds a "-", which
// tokenizing with splitHyphen would cut.
func anyHyphen(samples []sample) bool {
	for _, s := range samples {
		for _, t := range s.toks {
			if t.kind == tkWord && strings.IndexByte(t.text, '-') >= 0 {
				return true
			}
		}
	}
	return false
}

// countMatches counts the lines the prefix matches, followed by a severity.
func countMatches(ps string, lines [][]byte) int {
	p, err := Compile(ps)
	if err != nil {
		return 0
	}
	var f Fields
	n := 0
	for _, l := range lines {
		if rest, ok := p.Match(l, &f); ok {
			if _, _, ok := SplitSeverity(rest); ok {
				n++
			}
		}
	}
	return n
}

// countReads counts the lines the prefix matches, followed by a
// severity (n), and those among them where no name it reads holds a
// session id or a time as a word of its own (clean).
func countReads(ps string, lines [][]byte) (clean, n int) {
	p, err := Compile(ps)
	if err != nil {
		return 0, 0
	}
	var f Fields
	for _, l := range lines {
		if rest, ok := p.Match(l, &f); ok {
			if _, _, ok := SplitSeverity(rest); ok {
				n++
				if !holdsValue(f.User) && !holdsValue(f.Database) && !holdsValue(f.Application) {
					clean++
				}
			}
		}
	}
	return clean, n
}

// holdsValue reports whether free text holds a %c session id or a time
// as a word of its own: what a prefix that lacks those escapes reads as
// a name on the lines of one that prints them before it.
func holdsValue(v []byte) bool {
	for i := 0; i < len(v); i++ {
		if i > 0 && v[i-1] != ' ' || !isHex(v[i]) {
			continue
		}
		if n := sessionIDLen(v[i:]); n > 0 && (i+n == len(v) || v[i+n] == ' ') {
			return true
		}
		if t, _, ok := TakeTimestamp(v[i:]); ok && isDigit(v[i]) && isDigit(v[i+3]) && isDigit(v[i+5]) && isDigit(t[18]) {
			return true
		}
	}
	return false
}

func firstUnmatched(ps string, lines [][]byte) []byte {
	p, err := Compile(ps)
	if err != nil {
		return lines[0]
	}
	var f Fields
	for _, l := range lines {
		if _, ok := p.Match(l, &f); !ok {
			return l
		}
	}
	return lines[0]
}

// shapeKey is the shape of a line's tokens: kinds and literal text.
func shapeKey(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		switch t.kind {
		case tkLit:
			b.WriteString("L")
			b.WriteString(t.text)
			b.WriteByte(0)
		case tkTime:
			b.WriteString("T")
		default:
			b.WriteByte('0' + byte(t.kind))
		}
	}
	return b.String()
}

// mainShapes returns the shapes that may be the prefix's, best first, with
// the samples of each shape.
func mainShapes(samples []sample) ([]string, map[string][]int) {
	groups := make(map[string][]int)
	var order []string
	for i, s := range samples {
		k := shapeKey(s.toks)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	// The main shape is the one that reads most lines: its own, and
	// those of background processes that stop at its %q. Among equals,
	// the shorter: a value with spaces makes a longer shape of its own.
	cover := make(map[string]int, len(order))
	for _, k := range order {
		long := samples[groups[k][0]].toks
		cover[k] = len(groups[k])
		for _, k2 := range order {
			if k2 == k {
				continue
			}
			if _, _, ok := cutShort(long, samples[groups[k2][0]].toks); ok {
				cover[k] += len(groups[k2])
			}
		}
	}
	slices.SortStableFunc(order, func(a, b string) int {
		if cover[a] != cover[b] {
			return cover[b] - cover[a]
		}
		return len(a) - len(b)
	})
	return order, groups
}

// induce builds the prefix from the samples of shape main.
func induce(samples []sample, main string, groups map[string][]int) (Inference, error) {
	idx := groups[main]
	shape := samples[idx[0]].toks
	cols := make([][]string, len(shape))
	for j := range shape {
		for _, i := range idx {
			cols[j] = append(cols[j], samples[i].toks[j].text)
		}
	}
	esc := make([]byte, len(shape)) // the escape of each token, 0 for literal
	var warnings []string
	votes := 0

	timeEscapes(samples, idx, shape, esc)
	shapeEscapes(shape, cols, esc)
	// Free text: labels, then places, then what the messages say.
	var free []int
	for j, t := range shape {
		if t.kind != tkWord {
			continue
		}
		if k := keyEscape(t.key); k != 0 {
			if k == 'm' || k == 's' || k == 'p' || k == 'l' || k == 'x' || k == 'Q' || k == 'c' || k == 'e' || k == 'v' || k == 'P' {
				// A label whose value is not of its shape here (an
				// empty pid, say): keep the text, extract nothing.
				k = 'b'
			}
			esc[j] = k
			continue
		}
		if hasValue(cols[j], "[local]") || anyAddress(cols[j]) {
			// A client that came through the socket: the host, and a
			// field whatever its value on these lines.
			if k := keyEscape(t.key); k == 'h' || k == 'r' {
				esc[j] = k
			} else {
				esc[j] = 'r'
			}
			continue
		}
		if t.key == "" && placeRole(shape, j) != 0 {
			esc[j] = placeRole(shape, j)
			continue
		}
		if t.key != "" {
			// An unknown label: its value is free text the reader does not keep.
			if !constant(cols[j]) || cols[j][0] == "" {
				esc[j] = 'b'
			}
			continue
		}
		free = append(free, j)
	}
	if len(free) > 0 {
		roles, warn, v, err := assignRoles(samples, idx, shape, esc, free, cols)
		if err != nil {
			return Inference{}, err
		}
		votes = v
		for n, j := range free {
			esc[j] = roles[n]
		}
		warnings = append(warnings, warn...)
	}

	ps, n := withQ(shape, esc, samples)
	// A word that is the same on every line of the main shape is literal
	// text, unless other lines have another word there: "[client
	// backend]" is %b when background lines say "[checkpointer]".
	for j, t := range shape {
		if t.kind != tkWord || esc[j] != 0 || n == len(samples) {
			continue
		}
		esc[j] = 'b'
		if ps2, n2 := withQ(shape, esc, samples); n2 > n {
			ps, n = ps2, n2
		} else {
			esc[j] = 0
		}
	}
	return Inference{Prefix: ps, Warnings: warnings, votes: votes}, nil
}

// timeEscapes sets the escapes of the times of shape (esc[j] for
// shape[j]), read on the samples of idx: the one with a fraction is %m;
// without, the first is %t and others are the session start %s.
func timeEscapes(samples []sample, idx []int, shape []token, esc []byte) {
	timeSeen := false
	for j, t := range shape {
		if t.kind != tkTime {
			continue
		}
		frac := false
		for _, i := range idx {
			frac = frac || samples[i].toks[j].frac
		}
		if frac && !timeSeen {
			esc[j], timeSeen = 'm', true
		}
	}
	for j, t := range shape {
		if t.kind == tkTime && esc[j] == 0 {
			if !timeSeen {
				esc[j], timeSeen = 't', true
			} else {
				esc[j] = 's'
			}
		}
	}
}

// shapeEscapes sets the escapes of the tokens of shape that their shape
// or their label tells (esc[j] for shape[j], whose values are cols[j]):
// epochs, session ids, remote hosts, virtual transaction ids, and
// numbers (an SQLSTATE, the pid first, then the line number).
func shapeEscapes(shape []token, cols [][]string, esc []byte) {
	pidSeen := false
	for j, t := range shape {
		switch t.kind {
		case tkEpoch:
			esc[j] = 'n'
		case tkSession:
			esc[j] = 'c'
		case tkRemote:
			esc[j] = 'r'
		case tkVXID:
			esc[j] = 'v'
		case tkNum:
			k := keyEscape(t.key)
			switch {
			case allSQLStates(cols[j]):
				esc[j] = 'e'
			case k == 'p' || k == 'l' || k == 'x' || k == 'Q' || k == 'P' || k == 'e':
				esc[j] = k
			case constant(cols[j]) && cols[j][0] == "1" && j > 0 && shape[j-1].kind == tkLit && strings.HasSuffix(shape[j-1].text, "-"):
				// The "1" of "[%l-1]".
				esc[j] = 0
			case !pidSeen:
				esc[j] = 'p'
			default:
				esc[j] = 'l'
			}
			if esc[j] == 'p' {
				pidSeen = true
			}
		}
	}
}

// withQ renders the prefix, with a %q where it reads more samples, and
// returns how many samples it reads.
func withQ(shape []token, esc []byte, samples []sample) (string, int) {
	ps := renderWith(shape, esc, nil, nil)
	if q, ok := qPosition(shape, esc, samples); ok {
		ps = q
	}
	n := 0
	p, err := Compile(ps)
	if err != nil {
		return ps, 0
	}
	var f Fields
	for _, s := range samples {
		if rest, ok := p.Match(s.line, &f); ok {
			if _, _, ok := SplitSeverity(rest); ok {
				n++
			}
		}
	}
	return ps, n
}

// placeRole gives a free-text token its role by where it stands: the user
// before "@", the database after it, the application after "%u@%d/".
func placeRole(shape []token, j int) byte {
	next := ""
	if j+1 < len(shape) && shape[j+1].kind == tkLit {
		next = shape[j+1].text
	}
	prev := ""
	if j > 0 && shape[j-1].kind == tkLit {
		prev = shape[j-1].text
	}
	switch {
	case strings.HasPrefix(next, "@"):
		return 'u'
	case prev == "@" || strings.HasSuffix(prev, "@") && len(prev) == 1:
		return 'd'
	case prev == "/" && j >= 2 && shape[j-2].kind == tkWord && j >= 3 && shape[j-3].kind == tkLit && strings.HasSuffix(shape[j-3].text, "@"):
		return 'a'
	}
	return 0
}

// anyAddress reports whether a value is an IP address: a client, never
// literal text of the prefix.
func anyAddress(vs []string) bool {
	for _, v := range vs {
		if _, err := netip.ParseAddr(v); err == nil {
			return true
		}
	}
	return false
}

func hasValue(vs []string, v string) bool {
	return slices.Contains(vs, v)
}

func constant(vs []string) bool {
	for _, v := range vs[1:] {
		if v != vs[0] {
			return false
		}
	}
	return true
}

func allSQLStates(vs []string) bool {
	some := false
	for _, v := range vs {
		if len(v) != 5 || !IsSQLState(v) {
			return false
		}
		some = some || isSQLStateAt([]byte(v))
	}
	return some
}

// assignRoles decides the escapes of free-text tokens that have no label
// and no telling place, from what the messages say. It returns an error
// when two assignments fit equally well and read different values.
func assignRoles(samples []sample, idx []int, shape []token, esc []byte, free []int, cols [][]string) ([]byte, []string, int, error) {
	taken := map[byte]bool{}
	for _, e := range esc {
		taken[e] = true
	}
	votes, against := roleVotes(samples, idx, free, cols)
	constantCol := make([]bool, len(free))
	for n, j := range free {
		constantCol[n] = constant(cols[j]) && cols[j][0] != "[unknown]" && cols[j][0] != ""
	}
	type cand struct {
		roles  []byte
		votes  int
		others int
		conv   int // how far from the usual order u, d, a, h
	}
	var cands []cand
	cur := make([]byte, len(free))
	var walk func(n int, used map[byte]bool, v, o, conv int)
	walk = func(n int, used map[byte]bool, v, o, conv int) {
		if n == len(free) {
			cands = append(cands, cand{roles: slices.Clone(cur), votes: v, others: o, conv: conv})
			return
		}
		if constantCol[n] && votes[n] == [numRoles]int{} {
			// The same text on every line and nothing says it is a
			// name: literal text ("PG" of "PG-%e").
			cur[n] = 0
			walk(n+1, used, v, o, conv)
			return
		}
		for r := roleUser; r < numRoles; r++ {
			e := roleEscape[r]
			if r != roleOther && (used[e] || taken[e]) {
				continue
			}
			if against[n][r] > 0 && r != roleOther {
				continue
			}
			if r == roleApp && votes[n][roleUser]+votes[n][roleDB]+votes[n][roleHost] > 0 {
				continue
			}
			cur[n] = e
			o2 := o
			if r == roleOther {
				o2++
			}
			if r != roleOther {
				used[e] = true
			}
			walk(n+1, used, v+votes[n][r], o2, conv+n*int(numRoles)+r)
			if r != roleOther {
				delete(used, e)
			}
		}
	}
	if len(free) <= maxFreeColumns {
		walk(0, map[byte]bool{}, 0, 0, 0)
	} else {
		// Too many words to try every reading (5^n).
		roles, v := namedRoles(constantCol, votes, against, taken)
		cands = append(cands, cand{roles: roles, votes: v})
	}
	if len(cands) == 0 {
		// Nothing fits: free text the reader does not keep.
		roles := make([]byte, len(free))
		for n := range roles {
			roles[n] = 'b'
		}
		return roles, nil, 0, nil
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.votes != b.votes {
			return b.votes - a.votes
		}
		// Fewer literals first: a varying word is a field.
		la, lb := bytes.Count(a.roles, []byte{0}), bytes.Count(b.roles, []byte{0})
		if la != lb {
			return la - lb
		}
		if a.others != b.others {
			return a.others - b.others
		}
		return a.conv - b.conv
	})
	best := cands[0]
	// Another candidate as good that reads other values on some line
	// leaves the prefix ambiguous.
	for _, c := range cands[1:] {
		if c.votes != best.votes || c.others != best.others || bytes.Count(c.roles, []byte{0}) != bytes.Count(best.roles, []byte{0}) {
			break
		}
		if line, differs := readsDifferently(samples, idx, free, cols, best.roles, c.roles); differs {
			a, b := renderWith(shape, esc, free, best.roles), renderWith(shape, esc, free, c.roles)
			return nil, nil, 0, &ambiguity{first: a, second: b, line: truncate(line, 160)}
		}
	}
	var warn []string
	if len(cands) > 1 {
		c := cands[1]
		if c.votes == best.votes && c.others == best.others && !bytes.Equal(c.roles, best.roles) && bytes.Count(c.roles, []byte{0}) == bytes.Count(best.roles, []byte{0}) {
			warn = append(warn, fmt.Sprintf("log_line_prefix: took %q rather than %q: they read the first lines alike, and no line says which field is which", renderWith(shape, esc, free, best.roles), renderWith(shape, esc, free, c.roles)))
		}
	}
	return best.roles, warn, best.votes, nil
}

// roleVotes counts, per free column free[n] and role r, the lines
// (samples[idx[k]], whose column j holds cols[j][k]) where the column
// holds what the message says role r is (votes[n][r]) and those where it
// holds something else (against[n][r]).
func roleVotes(samples []sample, idx []int, free []int, cols [][]string) (votes, against [][numRoles]int) {
	votes = make([][numRoles]int, len(free))
	against = make([][numRoles]int, len(free))
	for n, j := range free {
		for k, i := range idx {
			v := cols[j][k]
			if v == "" || v == "[unknown]" {
				continue
			}
			ev := samples[i].ev
			for r, want := range [...]string{roleUser: ev.user, roleDB: ev.database, roleHost: ev.host} {
				if want == "" {
					continue
				}
				if v == want {
					votes[n][r]++
				} else {
					against[n][r]++
				}
			}
		}
	}
	return votes, against
}

// namedRoles reads the free columns without trying every reading: the
// words the messages name (and nothing contradicts) take their roles,
// the constant words no message names are literal text (0), the others
// free text the reader does not keep. It returns the escapes and the
// votes they won.
func namedRoles(constantCol []bool, votes, against [][numRoles]int, taken map[byte]bool) ([]byte, int) {
	roles := make([]byte, len(constantCol))
	used := map[byte]bool{}
	v := 0
	for n := range constantCol {
		roles[n] = roleEscape[roleOther]
		if constantCol[n] && votes[n] == [numRoles]int{} {
			roles[n] = 0
			continue
		}
		for r := roleUser; r <= roleHost; r++ {
			if e := roleEscape[r]; votes[n][r] > 0 && against[n][r] == 0 && !used[e] && !taken[e] {
				roles[n], used[e] = e, true
				v += votes[n][r]
				break
			}
		}
	}
	return roles, v
}

// ambiguity is the error of two prefixes that fit equally well.
type ambiguity struct {
	first, second string
	line          string
}

func (a *ambiguity) Error() string {
	return fmt.Sprintf("%v: %q and %q both fit the first lines and read line %q differently; a \"connection authorized\" line (log_connections = on) of a user whose database has another name would tell them apart", ErrAmbiguousPrefix, a.first, a.second, a.line)
}

func (a *ambiguity) Unwrap() error { return ErrAmbiguousPrefix }

// readsDifferently reports whether two role assignments extract other
// user, database or application values from some sample line.
func readsDifferently(samples []sample, idx []int, free []int, cols [][]string, a, b []byte) ([]byte, bool) {
	for k, i := range idx {
		var fa, fb [numRoles]string
		for n, j := range free {
			v := cols[j][k]
			for r := roleUser; r <= roleApp; r++ {
				if a[n] == roleEscape[r] {
					fa[r] = v
				}
				if b[n] == roleEscape[r] {
					fb[r] = v
				}
			}
		}
		if fa != fb {
			return samples[i].line, true
		}
	}
	return nil, false
}

func renderWith(shape []token, esc []byte, free []int, roles []byte) string {
	e := slices.Clone(esc)
	for n, j := range free {
		e[j] = roles[n]
	}
	var b strings.Builder
	for j, t := range shape {
		if e[j] == 0 {
			b.WriteString(strings.ReplaceAll(t.text, "%", "%%"))
		} else {
			b.WriteByte('%')
			b.WriteByte(e[j])
		}
	}
	return b.String()
}

// qPosition puts a %q where the lines of background processes stop, if
// that reads more of the samples: at each place before a session field
// (a label, "@", a session id, a client), the prefix with %q there is
// tried on every sample.
func qPosition(shape []token, esc []byte, samples []sample) (string, bool) {
	render := func(at, cut int) string {
		var b strings.Builder
		for j, t := range shape {
			text := strings.ReplaceAll(t.text, "%", "%%")
			if j == at {
				if esc[j] == 0 && t.kind == tkLit && cut > 0 {
					c := strings.ReplaceAll(t.text[:cut], "%", "%%")
					b.WriteString(c)
					b.WriteString("%q")
					b.WriteString(text[len(c):])
					continue
				}
				b.WriteString("%q")
			}
			if esc[j] == 0 {
				b.WriteString(text)
			} else {
				b.WriteByte('%')
				b.WriteByte(esc[j])
			}
		}
		return b.String()
	}
	var pres [][]byte
	for _, s := range samples {
		pres = append(pres, s.line)
	}
	base := countMatches(render(-1, 0), pres)
	if base == len(pres) {
		// Every line read: no background process in the first lines.
		// They will come (checkpoints, autovacuum), and print nothing
		// after %q: put it before the first field that names the session.
		if at, cut, ok := defaultQ(shape, esc); ok && !anyEmpty(shape, samples, at) {
			return render(at, cut), true
		}
		return "", false
	}
	best, bestN := "", base
	for j := 1; j < len(shape); j++ {
		if !sessionOnly(shape[j:]) {
			break
		}
		cuts := []int{0}
		if shape[j].kind == tkLit && esc[j] == 0 {
			// Inside a literal: "] [user=" may stop after "] ".
			for k := 1; k < len(shape[j].text); k++ {
				if shape[j].text[k-1] == ' ' {
					cuts = append(cuts, k)
				}
			}
		}
		for _, cut := range cuts {
			ps := render(j, cut)
			if n := countMatches(ps, pres); n > bestN {
				best, bestN = ps, n
			}
		}
	}
	return best, best != ""
}

// defaultQ returns where %q goes when no line shows it: before "%u@%d"
// when that is the first field only sessions have, with a value on every
// line, as in Debian's "%m [%p] %q%u@%d ". Prefixes whose first such
// field is a label, a client or a session id print it empty, or print it,
// for background processes: no %q is guessed there.
func defaultQ(shape []token, esc []byte) (at, cut int, ok bool) {
	for k, t := range shape {
		if t.kind == tkSession || t.kind == tkRemote || t.kind == tkVXID || t.key != "" || esc[k] == 'r' || esc[k] == 'h' {
			return 0, 0, false
		}
		if t.kind == tkWord && esc[k] == 'u' && k > 0 && k+1 < len(shape) && shape[k+1].kind == tkLit && strings.HasPrefix(shape[k+1].text, "@") {
			return k, 0, true
		}
	}
	return 0, 0, false
}

// anyEmpty reports whether a sample prints an empty user before "@": then
// background lines print the field, empty, and need no %q.
func anyEmpty(shape []token, samples []sample, at int) bool {
	for _, s := range samples {
		for k, t := range s.toks {
			if t.kind == tkWord && t.text == "" && k+1 < len(s.toks) && s.toks[k+1].kind == tkLit && strings.HasPrefix(s.toks[k+1].text, "@") {
				return true
			}
		}
	}
	return false
}

// cutShort reports whether short is shape cut at some point: the same
// tokens, the last literal possibly cut. It returns the token of shape
// where %q goes and, for a literal, after how many of its bytes.
func cutShort(shape, short []token) (at, cut int, ok bool) {
	if len(short) > len(shape) {
		return 0, 0, false
	}
	for j, t := range short {
		s := shape[j]
		if t.kind != s.kind {
			return 0, 0, false
		}
		if t.kind == tkLit && t.text != s.text {
			if j != len(short)-1 || !strings.HasPrefix(s.text, t.text) {
				return 0, 0, false
			}
			if !sessionOnly(shape[j:]) && !strings.ContainsAny(s.text[len(t.text):], "@=") {
				return 0, 0, false
			}
			return j, len(t.text), true
		}
	}
	if len(short) == len(shape) {
		return 0, 0, false
	}
	if !sessionOnly(shape[len(short):]) {
		return 0, 0, false
	}
	return len(short), 0, true
}

// sessionOnly reports whether the tokens cut off a background process's
// line name the session (labels, "@", a session id, a client): what %q
// leaves out. A longer line that adds only words has a value with spaces.
func sessionOnly(tail []token) bool {
	for _, t := range tail {
		switch {
		case t.key != "":
			return true
		case t.kind == tkSession || t.kind == tkRemote || t.kind == tkVXID:
			return true
		case t.kind == tkLit && strings.Contains(t.text, "@"):
			return true
		}
	}
	return false
}

// foreignHead looks for a translated severity in lines that have no
// English one: a word in capitals or in another script, then ":  ".
func foreignHead(lines [][]byte) (string, int) {
	for n, l := range lines {
		if w, ok := foreignSeverityIn(l); ok {
			return w, n + 1
		}
	}
	return "", 0
}

// Field returns the value of "key=" in a space-separated message (a
// connection log line's "user=... database=...").
func Field(msg, key string) string {
	i := strings.Index(msg, key)
	if i < 0 || i > 0 && msg[i-1] != ' ' {
		return ""
	}
	v := msg[i+len(key):]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
}

// IsSQLState reports whether s is made of digits and capitals only, as a
// SQLSTATE is.
func IsSQLState(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
