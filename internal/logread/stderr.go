package logread

import (
	"bytes"
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

// maxTails bounds the tail cache: about one entry per live session.
const maxTails = 4096

func newStderrReader(r io.Reader, p *prefix, c *Counters) *stderrReader {
	s := &stderrReader{lines: newLineReader(r), prefix: p, c: c, intern: make(interner), noPID: !p.hasPID}
	if k, ok := p.cacheable(); ok {
		s.tails, s.timeKind = make(map[string]*lineFields), k
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
// leading time and the severity.
func (s *stderrReader) cachedTail(line []byte) (lf *lineFields, timeb, rest []byte) {
	timeb, after, ok := s.takeTime(line)
	if !ok {
		return nil, nil, nil
	}
	j := bytes.Index(after, []byte(":  "))
	if j < 0 {
		return nil, nil, nil
	}
	k := j
	for k > 0 && (after[k-1] >= 'A' && after[k-1] <= 'Z' || after[k-1] >= '0' && after[k-1] <= '9') {
		k--
	}
	if lf = s.tails[string(after[:k])]; lf == nil {
		return nil, nil, nil
	}
	return lf, timeb, after[k:]
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
		}
		s.tails[string(line[len(f.time):len(line)-len(rest)])] = lf
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
		var timeb, rest []byte
		if s.tails != nil {
			lf, timeb, rest = s.cachedTail(line)
		}
		if lf == nil {
			if rest, ok = s.prefix.match(line, &f); !ok {
				s.c.skip(SkipNoPrefix, 1)
				continue
			}
			timeb = f.time
		}
		sev, msg, ok := splitSeverity(rest)
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
			s.start(timeb, sev, msg, lf)
			return nil
		}
		s.start(timeb, sev, msg, lf)
	}
}

func (s *stderrReader) start(timeb, sev, msg []byte, lf *lineFields) {
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
	if len(timeb) > 0 {
		s.cur.time, _ = s.times.parse(timeb)
	}
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
