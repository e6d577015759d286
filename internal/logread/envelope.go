package logread

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// Envelopes are what other programs wrap around the server's stderr lines
// before they reach a file:
//
//	Feb 11 13:15:39 test-pc postgres[10808]: [7-1] db=shop,user=app LOG:  statement: SELECT 1
//	2026-11-22T08:11:02.123456+01:00 host postgres[10808]: [7-2] #011FROM t
//	<134>1 2026-11-22T08:11:02.123456+01:00 host postgres 10808 - - [7-1] ...
//	2019-03-14T00:22:56+00:00 app[postgres.4882]: [GREEN] [15-1]  sql_error_code = 00000 LOG:  ...
//	2023-06-01T10:10:10.123Z 2023-06-01 10:10:10 UTC:10.0.0.1(5432):app@shop:[123]:LOG:  ...
//
// The first is syslog as rsyslog writes it by default (RFC 3164, as also
// journalctl prints the journal), the second rsyslog's high-precision
// format (and journalctl -o short-iso), the third RFC 5424, the fourth
// Heroku's logplex, the last an ISO time column in front of each line, as
// CloudWatch and S3 exports of RDS and Aurora logs and
// `gcloud logging read --format='value(timestamp,textPayload)'` write it.
//
// With syslog, the server itself numbers its messages: "[7-1]" is part 1
// of message 7 of that process. It writes a message that spans lines (a
// DETAIL, a multi-line statement) as parts of its own, and cuts a line
// longer than about 900 bytes into parts at a space. envReader joins the
// parts of each message again and gives the stderr reader the lines the
// server would have written to stderr, with the header's time and process
// id in front when the server's own prefix does not print them.

// envKind is the kind of envelope around a log's lines.
type envKind uint8

const (
	envNone    envKind = iota
	envSyslog          // time, [host,] tag[pid]: message (RFC 3164, rsyslog, journalctl, logplex)
	envRFC5424         // <PRI>1 time host app procid msgid sd message
	envISO             // ISO time column, then the server's line (CloudWatch, S3, gcloud)
)

var envNames = [...]string{envNone: "", envSyslog: "syslog", envRFC5424: "syslog (RFC 5424)", envISO: "with an ISO time column (CloudWatch, S3 or gcloud export)"}

// envLine is one physical line of an envelope, taken apart.
type envLine struct {
	// time: µs since the epoch when zoned; for an RFC 3164 time, which
	// has neither year nor zone, its parts.
	us                  int64
	hasTime, zoned      bool
	fraction            bool // the time has a fraction of a second
	month, day          int
	hour, minute, sec   int
	frac                int64
	ident               []byte // program name ("postgres", "app[postgres")
	host                []byte // the machine, when the header names it
	pid                 int32
	hasPID              bool
	seq                 int64 // syslog sequence number; -1 when none
	part                int   // part of the message, from 1
	body                []byte
	logplexColor, empty bool
}

var months = map[string]int{"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12}

// parseBSDTime reads "Feb 11 13:15:39", "Feb  1 13:15:39" or, from
// journalctl -o short-precise, "Feb 11 13:15:39.123456".
func parseBSDTime(b []byte, el *envLine) (int, bool) {
	if len(b) < 15 || b[3] != ' ' || b[6] != ' ' || b[9] != ':' || b[12] != ':' {
		return 0, false
	}
	m, ok := months[string(b[:3])]
	if !ok {
		return 0, false
	}
	d0 := b[4]
	if d0 == ' ' {
		d0 = '0'
	}
	day, ok1 := digits([]byte{d0, b[5]})
	h, ok2 := digits(b[7:9])
	mi, ok3 := digits(b[10:12])
	s, ok4 := digits(b[13:15])
	if !(ok1 && ok2 && ok3 && ok4) || day < 1 || day > 31 || h > 23 || mi > 59 || s > 60 {
		return 0, false
	}
	n := 15
	var frac int64
	if n < len(b) && b[n] == '.' {
		n++
		scale := int64(100000)
		start := n
		for n < len(b) && isDigit(b[n]) {
			frac += int64(b[n]-'0') * scale
			scale /= 10
			n++
		}
		if n == start {
			return 0, false
		}
	}
	el.hasTime, el.zoned, el.fraction = true, false, n > 15
	el.month, el.day, el.hour, el.minute, el.sec, el.frac = m, int(day), int(h), int(mi), int(s), frac
	return n, true
}

// parseISOTime reads an RFC 3339 time: "2019-03-14T00:22:56+00:00",
// "2020-05-02T13:00:20.382318Z", "2026-11-22T08:11:02+0100".
func parseISOTime(b []byte) (us int64, n int, ok bool) {
	if len(b) < 20 || b[10] != 'T' || b[4] != '-' {
		return 0, 0, false
	}
	sec, ok := civilSeconds(b[:19])
	if !ok {
		return 0, 0, false
	}
	n = 19
	var frac int64
	if n < len(b) && b[n] == '.' {
		n++
		start := n
		scale := int64(100000)
		for n < len(b) && isDigit(b[n]) {
			if scale > 0 {
				frac += int64(b[n]-'0') * scale
				scale /= 10
			}
			n++
		}
		if n == start {
			return 0, 0, false
		}
	}
	if n >= len(b) {
		return 0, 0, false
	}
	switch b[n] {
	case 'Z', 'z':
		n++
	case '+', '-':
		z := prefix.ZoneLen(b[n:])
		if z < 3 {
			return 0, 0, false
		}
		off, ok := zoneOffset(b[n : n+z])
		if !ok {
			return 0, 0, false
		}
		sec -= off
		n += z
	default:
		return 0, 0, false
	}
	return sec*1e6 + frac, n, true
}

// parseEnvLine takes line apart as an envelope of kind k. It reports false
// for a line that is not one (a continuation of the previous line, for an
// ISO column; another format otherwise).
func parseEnvLine(k envKind, line []byte, el *envLine) bool {
	*el = envLine{seq: -1}
	switch k {
	case envSyslog:
		return parseSyslog(line, el)
	case envRFC5424:
		return parseRFC5424(line, el)
	case envISO:
		us, n, ok := parseISOTime(line)
		if !ok || n >= len(line) || line[n] != ' ' && line[n] != '\t' {
			return false
		}
		el.us, el.hasTime, el.zoned, el.fraction = us, true, true, line[19] == '.'
		el.body = line[n+1:]
		return true
	}
	return false
}

// parseSyslog reads "TIME [HOST] TAG[PID]: MESSAGE".
func parseSyslog(line []byte, el *envLine) bool {
	var n int
	if us, m, ok := parseISOTime(line); ok {
		el.us, el.hasTime, el.zoned, el.fraction = us, true, true, line[19] == '.'
		n = m
	} else if m, ok := parseBSDTime(line, el); ok {
		n = m
	} else {
		return false
	}
	if n >= len(line) || line[n] != ' ' {
		return false
	}
	rest := line[n+1:]
	// "host tag[pid]: " or "tag[pid]: ": the tag is the first or second
	// word, ending in ":".
	tag, after, ok := takeTag(rest)
	if !ok {
		sp := bytes.IndexByte(rest, ' ')
		if sp <= 0 {
			return false
		}
		if tag, after, ok = takeTag(rest[sp+1:]); !ok {
			return false
		}
		el.host = rest[:sp]
	}
	if !parseTag(tag, el) {
		return false
	}
	if len(after) > 0 && after[0] == ' ' {
		after = after[1:]
	}
	parseBody(after, el)
	return true
}

// takeTag takes "tag[pid]:" or "tag:" from the start of b, up to a space;
// logplex drains write "app[postgres.5925]" without the colon.
func takeTag(b []byte) (tag, rest []byte, ok bool) {
	sp := bytes.IndexByte(b, ' ')
	w := b
	if sp >= 0 {
		w = b[:sp]
	}
	if len(w) >= 2 && w[len(w)-1] == ':' {
		return w[:len(w)-1], b[len(w):], true
	}
	if len(w) >= 4 && w[len(w)-1] == ']' && bytes.IndexByte(w, '[') > 0 {
		return w, b[len(w):], true
	}
	return nil, nil, false
}

// parseTag reads "postgres[10808]", "app[postgres.4882]" or "postgres".
func parseTag(tag []byte, el *envLine) bool {
	if len(tag) == 0 || tag[0] == '[' {
		return false
	}
	i := bytes.IndexByte(tag, '[')
	if i < 0 {
		el.ident = tag
		return isTagName(tag)
	}
	if tag[len(tag)-1] != ']' {
		return false
	}
	name, proc := tag[:i], tag[i+1:len(tag)-1]
	if !isTagName(name) {
		return false
	}
	el.ident = tag[:i]
	// "postgres.4882": the process id after the last dot.
	if d := bytes.LastIndexByte(proc, '.'); d >= 0 {
		el.ident = tag[:i+1+d] // "app[postgres"
		proc = proc[d+1:]
	}
	pid, ok := parsePID(proc)
	if !ok || len(proc) == 0 {
		return false
	}
	el.pid, el.hasPID = pid, true
	return true
}

func isTagName(b []byte) bool {
	if len(b) == 0 || len(b) > 64 {
		return false
	}
	for _, c := range b {
		if !(isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// parseRFC5424 reads "<PRI>1 TIME HOST APP PROCID MSGID SD MESSAGE".
func parseRFC5424(line []byte, el *envLine) bool {
	b := line
	if len(b) > 0 && b[0] == '<' {
		i := bytes.IndexByte(b, '>')
		if i < 2 || i > 4 {
			return false
		}
		b = b[i+1:]
	}
	if len(b) < 3 || b[0] != '1' || b[1] != ' ' {
		return false
	}
	b = b[2:]
	var fields [5][]byte // time host app procid msgid
	for k := range fields {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 {
			return false
		}
		fields[k], b = b[:sp], b[sp+1:]
	}
	if us, n, ok := parseISOTime(fields[0]); ok && n == len(fields[0]) {
		el.us, el.hasTime, el.zoned, el.fraction = us, true, true, fields[0][19] == '.'

	} else if string(fields[0]) != "-" {
		return false
	}
	el.ident = fields[2]
	if h := fields[1]; string(h) != "-" {
		el.host = h
	}
	proc := fields[3]
	if d := bytes.LastIndexByte(proc, '.'); d >= 0 {
		el.ident = append(append(append([]byte(nil), fields[2]...), '['), proc[:d]...)
		proc = proc[d+1:]
	}
	if pid, ok := parsePID(proc); ok && len(proc) > 0 {
		el.pid, el.hasPID = pid, true
	}
	// Structured data: "-" or one or more "[id k="v" ...]".
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	} else {
		for len(b) > 0 && b[0] == '[' {
			i := 1
			for i < len(b) && b[i] != ']' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return false
			}
			b = b[i+1:]
		}
	}
	if len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a BOM before a UTF-8 message
	if len(b) > 1 && b[0] == ' ' && b[1] == '[' {
		// rsyslog's message keeps the space that followed the tag's
		// colon: " [7-1] ...".
		b = b[1:]
	}
	parseBody(b, el)
	return true
}

// parseBody reads what the server put in front of its message in syslog:
// Heroku's "[COLOR] " database name, then "[7-1] " (message 7, part 1) or
// "[7] " (message 7, in one part).
func parseBody(b []byte, el *envLine) {
	if len(b) > 3 && b[0] == '[' && b[1] >= 'A' && b[1] <= 'Z' {
		if i := bytes.IndexByte(b, ']'); i > 1 && i+1 < len(b) && b[i+1] == ' ' && isColor(b[1:i]) {
			b = b[i+2:]
			el.logplexColor = true
		}
	}
	if len(b) > 2 && b[0] == '[' && isDigit(b[1]) {
		i := 1
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		seq, _ := strconv.ParseInt(string(b[1:i]), 10, 64)
		part := 1
		ok := false
		if i < len(b) && b[i] == '-' {
			j := i + 1
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			if j > i+1 && j < len(b) && b[j] == ']' {
				part, _ = strconv.Atoi(string(b[i+1 : j]))
				i, ok = j, true
			}
		} else if i < len(b) && b[i] == ']' {
			ok = true
		}
		if ok && part >= 1 && (i+1 == len(b) || b[i+1] == ' ') {
			el.seq, el.part = seq, part
			b = b[min(i+2, len(b)):]
		}
	}
	el.body = b
}

func isColor(b []byte) bool {
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// unescapeSyslog undoes rsyslog's escaping of control characters, "#011"
// for a tab: the tab that starts a continuation line above all.
func unescapeSyslog(b []byte, out []byte) ([]byte, bool) {
	if bytes.IndexByte(b, '#') < 0 {
		return b, false
	}
	changed := false
	start := len(out)
	for i := 0; i < len(b); i++ {
		if b[i] == '#' && i+3 < len(b) && b[i+1] == '0' && b[i+2] >= '0' && b[i+2] <= '3' && b[i+3] >= '0' && b[i+3] <= '7' {
			out = append(out, (b[i+2]-'0')*8+(b[i+3]-'0'))
			i += 3
			changed = true
			continue
		}
		out = append(out, b[i])
	}
	if !changed {
		return b, false
	}
	return out[start:], true
}

// detectEnvelope looks at the first lines of a text log for an envelope.
// It returns the kind that most lines have (envNone when fewer than half
// have one), the program whose lines are the server's, and those lines'
// bodies, for prefix inference.
func detectEnvelope(lines [][]byte) (envKind, string, [][]byte) {
	best, bestN := envNone, 0
	var el envLine
	for _, k := range []envKind{envSyslog, envRFC5424, envISO} {
		n := 0
		for _, l := range lines {
			if parseEnvLine(k, l, &el) {
				n++
			}
		}
		if n > bestN {
			best, bestN = k, n
		}
	}
	if bestN == 0 || bestN*2 < len(lines) {
		return envNone, "", nil
	}
	// The server's program: the one whose bodies have a severity most.
	counts := map[string]int{}
	for _, l := range lines {
		if parseEnvLine(best, l, &el) && prefix.SeverityIndex(el.body) >= 0 {
			counts[string(el.ident)]++
		}
	}
	ident := ""
	for id, n := range counts {
		if n > counts[ident] || n == counts[ident] && id < ident {
			ident = id
		}
	}
	var bodies [][]byte
	var scratch []byte
	for _, l := range lines {
		if !parseEnvLine(best, l, &el) || string(el.ident) != ident || el.part > 1 {
			continue
		}
		b := el.body
		if best != envISO {
			if u, ok := unescapeSyslog(b, scratch[:0]); ok {
				b = append([]byte(nil), u...)
			}
		}
		if len(b) > 0 && b[0] != '\t' {
			bodies = append(bodies, b)
		}
	}
	return best, ident, bodies
}

// syslogClock turns RFC 3164 times, which have no year and no zone, into
// µs: in the zone given or UTC, and in the year that puts each line
// nearest the line before it. The log's first line takes the year given
// or guessed; from then on the year follows the lines: it rises when
// December goes on to January, and a line of December 31 that arrives
// just after one of January 1 (a late line: syslog daemons do not order
// their senders' lines) is read as the year before, which it is, without
// moving the lines after it.
type syslogClock struct {
	year int
	loc  *time.Location
	// last is the time of the line before, 0 before the first.
	last int64
	// the second last converted, for lines of the same second
	lastKey int64
	lastUS  int64
}

func (c *syslogClock) us(el *envLine) int64 {
	key := int64(el.month)<<32 | int64(el.day)<<24 | int64(el.hour)<<16 | int64(el.minute)<<8 | int64(el.sec)
	if key != c.lastKey || c.lastUS == 0 {
		c.lastKey = key
		at := func(y int) int64 {
			return time.Date(y, time.Month(el.month), el.day, el.hour, el.minute, el.sec, 0, c.loc).UnixMicro()
		}
		us := at(c.year)
		if c.last != 0 {
			// The year of the three around that is nearest the line before.
			for _, y := range [...]int{c.year - 1, c.year + 1} {
				if u := at(y); absDiff(u, c.last) < absDiff(us, c.last) {
					us, c.year = u, y
				}
			}
		}
		c.lastUS = us
	}
	c.last = c.lastUS
	return c.lastUS + el.frac
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// lineSource gives the stderr reader the lines of a log in an envelope:
// syslog and the like (envReader), Cloud Logging's entries
// (cloudEnvelope), Azure's records (azureEnvelope).
type lineSource interface {
	// next returns the next line; false at the end of the log.
	next() (outLine, bool)
	// err returns the error that ended the log early, if any.
	err() error
}

// outLine is a line an envelope gives the stderr reader: a line the
// server would have written to stderr, the physical line it starts on
// and how many physical lines it stands for (0 for the further lines of
// one record).
type outLine struct {
	b           []byte
	first, span int64
	// f, when not nil, is the line's fields, which the envelope read
	// (from a record, and the prefix in its line): b then starts at the
	// severity, and us is its time.
	f  *lineFields
	us int64
}

// lineArena holds the lines an envelope gives out, in blocks that are
// never written again below their length: the entries refer to them.
type lineArena struct{ b []byte }

// join returns the parts joined, in the arena.
func (a *lineArena) join(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if cap(a.b)-len(a.b) < n {
		a.b = make([]byte, 0, max(64<<10, n))
	}
	start := len(a.b)
	for _, p := range parts {
		a.b = append(a.b, p...)
	}
	return a.b[start:len(a.b):len(a.b)]
}

// envMsg is a syslog message being joined from its parts.
type envMsg struct {
	pid      int32
	seq      int64
	lastPart int
	lastLine int64 // physical line of its last part
	lineLen  int   // bytes of the server's text in its last line
	lines    []outLine
	done     bool
}

// syslogLimit is the longest line the server sends in one syslog message
// (PG_SYSLOG_LIMIT): a longer one is cut into parts, at a space if it can.
const syslogLimit = 900

// joinWindow is how many physical lines a message waits for more parts:
// the server sends the parts of a message in a row, so other processes'
// lines come between them only by a few.
const joinWindow = 1000

// envReader reads the lines of an enveloped log and gives the stderr
// reader the server's own lines (see the comment at the top).
type envReader struct {
	lines  *lineReader
	kind   envKind
	ident  []byte
	c      *Counters
	inner  *prefix.Prefix // the server's log_line_prefix, inside the envelope
	clock  syslogClock
	lineNo int64

	// What to put in front of each line: the header's time ("%m ") and
	// process id ("[%p] "), when the server's own prefix lacks them.
	withTime, withPID bool

	open    map[int32]*envMsg // the message being joined, by process
	pending []*envMsg         // messages in the order they started
	out     []outLine         // lines ready for the stderr reader
	arena   []byte
	scratch []byte
	fields  prefix.Fields
	eof     bool
	// origin is where the hosts of the server's lines are noted.
	origin *Origin
}

// envPrefix returns the prefix the stderr reader matches on the lines of
// an envReader: what it puts in front, then the server's prefix.
func envPrefix(withTime, withPID bool, inner string) string {
	p := ""
	if withTime {
		p += "%m "
	}
	if withPID {
		p += "[%p] "
	}
	return p + inner
}

func newEnvReader(lr *lineReader, kind envKind, ident string, inner *prefix.Prefix, withTime, withPID bool, clock syslogClock, c *Counters) *envReader {
	return &envReader{lines: lr, kind: kind, ident: []byte(ident), inner: inner, withTime: withTime, withPID: withPID,
		clock: clock, c: c, open: make(map[int32]*envMsg)}
}

func (r *envReader) err() error { return r.lines.err }

// next returns the next line for the stderr reader; ok is false at the end.
func (r *envReader) next() (outLine, bool) {
	for len(r.out) == 0 {
		if r.eof {
			return outLine{}, false
		}
		r.read()
	}
	l := r.out[0]
	r.out = r.out[1:]
	if len(r.out) == 0 {
		r.out = r.out[:0:0]
	}
	return l, true
}

// read takes one physical line, and moves the messages that are complete
// to out.
func (r *envReader) read() {
	line, complete, ok := r.lines.next()
	if !ok {
		r.eof = true
		for _, m := range r.pending {
			m.done = true
		}
		r.flush()
		return
	}
	r.lineNo++
	if !complete {
		r.c.skip(SkipTruncated, 1)
		return
	}
	var el envLine
	if !parseEnvLine(r.kind, line, &el) {
		if r.kind == envISO && len(line) > 0 && line[0] == '\t' {
			// A continuation line of the last message, as the server
			// wrote it: only the first line of an entry has the time.
			r.add(nil, outLine{b: line, first: r.lineNo, span: 1})
			return
		}
		if isBlank(line) {
			r.c.skip(SkipBlank, 1)
			return
		}
		r.c.skipSample(SkipUnsupportedLine, 1, r.lineNo, line)
		return
	}
	if !bytes.Equal(el.ident, r.ident) && r.kind != envISO {
		r.c.skip(SkipOtherProgram, 1)
		return
	}
	if len(el.host) > 0 && r.origin != nil {
		r.origin.addHost(el.host)
	}
	body := el.body
	if r.kind != envISO {
		if u, ok := unescapeSyslog(body, r.scratch[:0]); ok {
			r.scratch = u
			body = r.keep(u)
		}
	}
	if el.seq < 0 || !el.hasPID {
		// Not numbered: each line is the server's line as it was.
		r.add(nil, r.lineOf(&el, body))
		r.expire()
		r.flush()
		return
	}
	m := r.open[el.pid]
	if m != nil && m.seq == el.seq && el.part == m.lastPart+1 {
		m.lastPart, m.lastLine = el.part, r.lineNo
		switch {
		case len(body) > 0 && body[0] == '\t' || r.startsLine(body):
			m.lines = append(m.lines, r.lineOf(&el, body))
			m.lineLen = len(body)
		case m.lineLen+len(body) > syslogLimit:
			// A line cut for being longer than the server sends in one
			// syslog message: the part continues it.
			last := &m.lines[len(m.lines)-1]
			last.b = r.join(last.b, body)
			last.span++
			m.lineLen += len(body)
		default:
			// The next line of a multi-line text whose tab was lost on
			// the way (Heroku's logplex drains).
			tab := make([]byte, 0, len(body)+1)
			m.lines = append(m.lines, outLine{b: append(append(tab, '\t'), body...), first: r.lineNo, span: 1})
			m.lineLen = len(body)
		}
	} else {
		if m != nil {
			m.done = true
		}
		m = &envMsg{pid: el.pid, seq: el.seq, lastPart: el.part, lastLine: r.lineNo, lineLen: len(body)}
		m.lines = append(m.lines, r.lineOf(&el, body))
		r.open[el.pid] = m
		r.pending = append(r.pending, m)
	}
	r.expire()
	r.flush()
}

// startsLine reports whether a part starts a line of its own: the
// server's prefix and a severity ("DETAIL:  ...").
func (r *envReader) startsLine(body []byte) bool {
	rest, ok := r.inner.Match(body, &r.fields)
	return ok && prefix.AtSeverity(rest)
}

// lineOf makes the stderr line of a part: the header's time and process
// id in front (when withTime, withPID), unless it continues a line.
func (r *envReader) lineOf(el *envLine, body []byte) outLine {
	ol := outLine{first: r.lineNo, span: 1}
	if len(body) > 0 && body[0] == '\t' || !r.withTime && !r.withPID {
		ol.b = body
		return ol
	}
	n := len(r.arena)
	if cap(r.arena)-n < len(body)+48 {
		r.arena = make([]byte, 0, max(64<<10, len(body)+48))
		n = 0
	}
	b := r.arena
	if r.withTime {
		us := el.us
		if !el.zoned {
			us = r.clock.us(el)
		}
		if !el.hasTime {
			us = 0
		}
		b = time.UnixMicro(us).UTC().AppendFormat(b, "2006-01-02 15:04:05.000000 UTC ")
	}
	if r.withPID {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(el.pid), 10)
		b = append(b, "] "...)
	}
	b = append(b, body...)
	r.arena = b
	ol.b = b[n:len(b):len(b)]
	return ol
}

// keep copies b where it stays: lines handed out are never written again.
func (r *envReader) keep(b []byte) []byte {
	if cap(r.arena)-len(r.arena) < len(b) {
		r.arena = make([]byte, 0, max(64<<10, len(b)))
	}
	n := len(r.arena)
	r.arena = append(r.arena, b...)
	return r.arena[n:len(r.arena):len(r.arena)]
}

// join returns a followed by b, in new memory.
func (r *envReader) join(a, b []byte) []byte {
	j := make([]byte, 0, len(a)+len(b))
	return append(append(j, a...), b...)
}

// add puts a line in the last message, or makes it a message of its own.
func (r *envReader) add(m *envMsg, l outLine) {
	if m == nil {
		if len(r.pending) > 0 && l.b != nil && len(l.b) > 0 && l.b[0] == '\t' {
			m = r.pending[len(r.pending)-1]
			m.lines = append(m.lines, l)
			m.lastLine = l.first
			return
		}
		r.pending = append(r.pending, &envMsg{lines: []outLine{l}, done: true, lastLine: l.first})
		return
	}
	m.lines = append(m.lines, l)
}

// expire marks complete the first message when it waited too long for
// parts: only the first holds the others back.
func (r *envReader) expire() {
	if len(r.pending) > 0 {
		if m := r.pending[0]; !m.done && r.lineNo-m.lastLine > joinWindow {
			m.done = true
		}
	}
}

// flush moves the complete messages at the front of pending to out, in
// the order they started.
func (r *envReader) flush() {
	i := 0
	for ; i < len(r.pending) && r.pending[i].done; i++ {
		m := r.pending[i]
		r.out = append(r.out, m.lines...)
		if r.open[m.pid] == m {
			delete(r.open, m.pid)
		}
	}
	if i > 0 {
		n := copy(r.pending, r.pending[i:])
		clear(r.pending[n:])
		r.pending = r.pending[:n]
	}
}

// envWarnings says what the reader assumed about an envelope's times.
func envWarnings(kind envKind, year int, guessed bool, loc *time.Location, zoneGiven bool, bsd bool) []string {
	if kind == envNone || !bsd {
		return nil
	}
	var w []string
	if guessed {
		w = append(w, fmt.Sprintf("syslog times have no year: read as %d", year))
	}
	if !zoneGiven {
		w = append(w, "syslog times have no time zone: read as UTC (give the zone of the machine that wrote them)")
	} else {
		w = append(w, fmt.Sprintf("syslog times have no time zone: read in %s", loc))
	}
	return w
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
