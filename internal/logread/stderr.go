package logread

import (
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
	// last holds the previous entry's field values: consecutive lines
	// mostly repeat them, and a compare is cheaper than a map lookup.
	last   [6]string
	lineNo int64

	// The entry being assembled, emitted when the next message starts.
	cur     entry
	have    bool
	curPID  []byte
	field   *string // the field that continuation lines extend
	builder []byte  // continuation text of field, when it spans lines
	noPID   bool

	foreign     string // language of a translated severity, when seen
	foreignLine int64
}

func newStderrReader(r io.Reader, p *prefix, c *Counters) *stderrReader {
	return &stderrReader{lines: newLineReader(r), prefix: p, c: c, intern: make(interner), noPID: !p.hasPID}
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
		rest, ok := s.prefix.match(line, &f)
		if !ok {
			s.c.skip(SkipNoPrefix, 1)
			continue
		}
		sev, msg, ok := splitSeverity(rest)
		if !ok {
			if lang := foreignSeverity(rest); lang != "" && s.foreign == "" {
				s.foreign, s.foreignLine = lang, s.lineNo
			}
			s.c.skip(SkipNoPrefix, 1)
			continue
		}
		if severityClass(sev) == sevSecondary {
			// "DETAIL:  parameters: $1 = '1'" belongs to the message before
			// it from the same process.
			if !s.have || (!s.noPID && string(f.pid) != string(s.curPID)) {
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
			s.start(line, sev, msg, &f)
			return nil
		}
		s.start(line, sev, msg, &f)
	}
}

func (s *stderrReader) start(line, sev, msg []byte, f *prefixFields) {
	s.cur = entry{
		line:        s.lineNo,
		lines:       1,
		severity:    s.str(0, sev),
		pid:         int32(atoi(f.pid)),
		session:     s.str(1, f.session),
		user:        s.str(2, f.user),
		database:    s.str(3, f.database),
		application: s.str(4, f.application),
		sqlstate:    s.str(5, f.sqlstate),
	}
	if len(f.time) > 0 {
		s.cur.time, _ = s.times.parse(f.time)
	}
	s.curPID = f.pid
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
