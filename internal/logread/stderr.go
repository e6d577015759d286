package logread

import (
	"bytes"
	"encoding/binary"
	"io"
	"unsafe"
)

// stderrReader reads the server's stderr log format: each message starts
// with the log_line_prefix and a severity, continues on lines that start
// with a tab, and is followed by its DETAIL, HINT, CONTEXT and STATEMENT
// lines, each with a prefix of its own.
type stderrReader struct {
	lines  *lineReader
	prefix *prefix
	c      *Counters
	intern interner
	times  logTimeParser
	// last holds the previous line's severity: consecutive lines mostly
	// repeat it, and a compare is cheaper than a map lookup.
	last   [1]string
	lineNo int64

	// tails caches the fields of the prefix after its leading time: a
	// session repeats the same text on every line ("[4242] app@shop/web
	// 6571e2a3.1092 "), so one map lookup replaces matching and interning.
	// Only for prefixes that start with the time and hold nothing that
	// changes on every line (see prefix.cacheable).
	tails    map[string]*lineFields
	timeKind byte // the leading time escape, when tails is used
	fast     [1024]fastTail
	minTail  int // length of the shortest tail seen, for fastIndex

	// The entry being assembled, emitted when the next message starts.
	cur     entry
	have    bool
	curPID  int32
	field   *string // the field that continuation lines extend
	builder []byte  // continuation text of field, when it spans lines
	noPID   bool

	foreign     string // language of a translated severity, when seen
	foreignLine int64
}

// lineFields are the fields a prefix yields, interned.
type lineFields struct {
	pid         int32
	session     string
	user        string
	database    string
	application string
	sqlstate    string
}

// fastTail is an entry of the direct-mapped table in front of tails.
type fastTail struct {
	tail string
	lf   *lineFields
}

// maxTails bounds the tail cache: about one entry per live session.
const maxTails = 4096

func newStderrReader(r io.Reader, p *prefix, c *Counters) *stderrReader {
	s := &stderrReader{lines: newLineReader(r), prefix: p, c: c, intern: make(interner), noPID: !p.hasPID}
	if k, ok := p.cacheable(); ok {
		s.tails, s.timeKind, s.minTail = make(map[string]*lineFields), k, 32
	}
	return s
}

// takeTime takes the leading time of a line for the tail cache, the same
// way the prefix matcher does.
func (s *stderrReader) takeTime(line []byte) (v, rest []byte, ok bool) {
	if s.timeKind == 'n' {
		return takeEpoch(line)
	}
	return takeTimestamp(line)
}

// cachedTail looks up the prefix fields of line by its text between the
// leading time and the severity: first in a small direct-mapped table
// indexed by the tail's first bytes, which costs a hash of a few words and
// one compare, then by searching for the severity and looking the whole
// tail up in the map.
func (s *stderrReader) cachedTail(line []byte) (lf *lineFields, us int64, rest []byte) {
	us, after, ok := s.leadingTime(line)
	if !ok {
		return nil, 0, nil
	}
	slot := &s.fast[s.fastIndex(after)]
	if t := slot.tail; slot.lf != nil && len(after) > len(t) && string(after[:len(t)]) == t && isSeverityStart(after[len(t)]) {
		return slot.lf, us, after[len(t):]
	}
	j := bytes.Index(after, []byte(":  "))
	if j < 0 {
		return nil, 0, nil
	}
	k := j
	for k > 0 && (after[k-1] >= 'A' && after[k-1] <= 'Z' || after[k-1] >= '0' && after[k-1] <= '9') {
		k--
	}
	tail := after[:k]
	if lf = s.tails[string(tail)]; lf == nil {
		return nil, 0, nil
	}
	s.remember(string(tail), lf)
	return lf, us, after[k:]
}

// fastIndex hashes the first bytes of a tail, as many as the shortest tail
// seen has (up to 32): enough to tell sessions apart, since the process id
// or session id comes early, and never the message after the tail.
func (s *stderrReader) fastIndex(after []byte) int {
	n := min(len(after), s.minTail, 32)
	var h uint64 = 14695981039346656037
	for len(after[:n]) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(after)) * 1099511628211
		h ^= h >> 29
		after, n = after[8:], n-8
	}
	for _, c := range after[:n] {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return int(h>>32) & (len(s.fast) - 1)
}

// remember puts a tail of the map into the direct-mapped table.
func (s *stderrReader) remember(tail string, lf *lineFields) {
	s.minTail = min(s.minTail, len(tail))
	s.fast[s.fastIndex([]byte(tail))] = fastTail{tail: tail, lf: lf}
}

func isSeverityStart(c byte) bool { return c >= 'A' && c <= 'Z' }

// leadingTime parses the time at the start of a line. With the second
// and zone of the previous line cached, it is a compare and the digits of
// the fraction; otherwise it reads it as the prefix matcher does.
func (s *stderrReader) leadingTime(line []byte) (int64, []byte, bool) {
	p := &s.times
	if s.timeKind != 'n' && p.ok && p.zoneLen > 0 && len(line) > 20 && string(line[:19]) == string(p.secText[:]) {
		i := 19
		var frac int64
		if line[i] == '.' {
			i++
			start := i
			scale := int64(100000)
			for i < len(line) && line[i] >= '0' && line[i] <= '9' {
				if scale > 0 {
					frac += int64(line[i]-'0') * scale
					scale /= 10
				}
				i++
			}
			if i == start {
				return s.slowLeadingTime(line)
			}
		}
		z := i + 1 + p.zoneLen
		if z < len(line) && line[i] == ' ' && string(line[i+1:z]) == string(p.zone[:p.zoneLen]) && !isZoneByte(line[z]) {
			return p.unix*1e6 + frac, line[z:], true
		}
	}
	return s.slowLeadingTime(line)
}

func (s *stderrReader) slowLeadingTime(line []byte) (int64, []byte, bool) {
	tb, rest, ok := s.takeTime(line)
	if !ok {
		return 0, nil, false
	}
	us, ok := s.times.parse(tb)
	return us, rest, ok
}

// fields interns what the prefix matcher found, and remembers it by the
// line's tail when the cache is on.
func (s *stderrReader) fields(line, rest []byte, f *prefixFields) *lineFields {
	lf := &lineFields{
		pid:         int32(atoi(f.pid)),
		session:     s.intern.get(f.session),
		user:        s.intern.get(f.user),
		database:    s.intern.get(f.database),
		application: s.intern.get(f.application),
		sqlstate:    s.intern.get(f.sqlstate),
	}
	if s.tails != nil && len(f.time) > 0 {
		if len(s.tails) >= maxTails {
			clear(s.tails)
			s.fast = [len(s.fast)]fastTail{}
		}
		tail := string(line[len(f.time) : len(line)-len(rest)])
		s.tails[tail] = lf
		s.remember(tail, lf)
	}
	return lf
}

// next implements formatReader.
func (s *stderrReader) next(e *entry) error {
	var f prefixFields
	for {
		line, complete, ok := s.lines.next()
		if !ok {
			if s.lines.err != nil {
				return s.lines.err
			}
			if s.have {
				s.finish(e)
				return nil
			}
			return io.EOF
		}
		s.lineNo++
		if !complete {
			// A line cut at EOF (the server was still writing) or one
			// too long to hold: its content cannot be trusted.
			s.c.skip(SkipTruncated, 1)
			continue
		}
		if len(line) > 0 && line[0] == '\t' {
			// "\tFROM pgbench_accounts": continues the current field.
			if !s.have {
				s.c.skip(SkipOrphanLine, 1)
				continue
			}
			s.extend(line[1:])
			continue
		}
		var lf *lineFields
		var us int64
		var rest []byte
		if s.tails != nil {
			lf, us, rest = s.cachedTail(line)
		}
		sev, msg, ok := splitSeverity(rest)
		if lf == nil || !ok {
			// Not in the cache, or a cached tail followed by no severity:
			// match the prefix the long way.
			lf = nil
			if rest, ok = s.prefix.match(line, &f); !ok {
				s.c.skip(SkipNoPrefix, 1)
				continue
			}
			us = 0
			if len(f.time) > 0 {
				us, _ = s.times.parse(f.time)
			}
			sev, msg, ok = splitSeverity(rest)
		}
		if !ok {
			if lang := foreignSeverity(rest); lang != "" && s.foreign == "" {
				s.foreign, s.foreignLine = lang, s.lineNo
			}
			s.c.skip(SkipNoPrefix, 1)
			continue
		}
		if lf == nil {
			lf = s.fields(line, rest, &f)
		}
		if severityClass(sev) == sevSecondary {
			// "DETAIL:  parameters: $1 = '1'" belongs to the message before
			// it from the same process.
			if !s.have || (!s.noPID && lf.pid != s.curPID) {
				s.c.skip(SkipOrphanLine, 1)
				continue
			}
			s.closeField()
			s.cur.lines++
			switch string(sev) {
			case "DETAIL":
				s.setField(&s.cur.detail, msg)
			case "CONTEXT":
				s.setField(&s.cur.context, msg)
			case "STATEMENT":
				s.setField(&s.cur.statement, msg)
			default:
				// HINT, QUERY, LOCATION: kept only for line accounting.
				s.field = nil
			}
			continue
		}
		if s.have {
			s.finish(e)
			s.start(us, sev, msg, lf)
			return nil
		}
		s.start(us, sev, msg, lf)
	}
}

func (s *stderrReader) start(us int64, sev, msg []byte, lf *lineFields) {
	s.cur = entry{
		line:        s.lineNo,
		lines:       1,
		severity:    s.str(0, sev),
		pid:         lf.pid,
		session:     lf.session,
		user:        lf.user,
		database:    lf.database,
		application: lf.application,
		sqlstate:    lf.sqlstate,
	}
	s.cur.time = us
	s.curPID = lf.pid
	s.have = true
	s.setField(&s.cur.message, msg)
}

// str interns b, trying the value of the same field on the previous line
// first.
func (s *stderrReader) str(i int, b []byte) string {
	if string(b) == s.last[i] {
		return s.last[i]
	}
	v := s.intern.get(b)
	s.last[i] = v
	return v
}

func (s *stderrReader) setField(dst *string, v []byte) {
	*dst = unsafeString(v)
	s.field = dst
	s.builder = nil
}

// extend appends a continuation line to the current field. The server
// wrote "\n\t" for each newline in the text; the tab is not part of it.
func (s *stderrReader) extend(line []byte) {
	s.cur.lines++
	if s.field == nil {
		return
	}
	if s.builder == nil {
		s.builder = make([]byte, 0, 2*(len(*s.field)+len(line)+1))
		s.builder = append(s.builder, *s.field...)
	}
	s.builder = append(s.builder, '\n')
	s.builder = append(s.builder, line...)
}

func (s *stderrReader) closeField() {
	if s.field != nil && s.builder != nil {
		*s.field = unsafeString(s.builder)
	}
	s.field, s.builder = nil, nil
}

func (s *stderrReader) finish(e *entry) {
	s.closeField()
	*e = s.cur
	s.have = false
	s.cur = entry{}
}

// unsafeString returns b as a string without copying. The reader never
// writes to a chunk or a builder again once it hands out a slice of it.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func atoi(b []byte) int64 {
	var n int64
	neg := false
	for i, c := range b {
		if i == 0 && c == '-' {
			neg = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -n
	}
	return n
}
