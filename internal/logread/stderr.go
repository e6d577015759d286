package logread

import (
	"bytes"
	"encoding/binary"
	"io"
	"unsafe"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// stderrReader reads the server's stderr log format: each message starts
// with the log_line_prefix and a severity, continues on lines that start
// with a tab, and is followed by its DETAIL, HINT, CONTEXT and STATEMENT
// lines, each with a prefix of its own.
type stderrReader struct {
	lines  *lineReader
	prefix *prefix.Prefix
	c      *Counters
	intern interner
	times  logTimeParser
	sec    secondWords // the second of times, for leadingTime
	pf     prefix.Fields
	lineNo int64
	// scratch holds the fields of a line that are not kept by its tail,
	// until start copies them into the entry.
	scratch lineFields

	// tails caches the fields of the prefix after its leading time: a
	// session repeats the same text on every line ("[4242] app@shop/web
	// 6571e2a3.1092 "), so one map lookup replaces matching and interning.
	// Only for prefixes that start with the time and hold nothing that
	// changes on every line (see prefix.cacheable).
	tails    map[string]*lineFields
	timeKind byte // the leading time escape, when tails is used
	fast     [4096]fastTail
	lastSlot int // the slot of fast the last line's tail was found in
	minTail  int // length of the shortest tail seen, for fastIndex

	// The entry being assembled, emitted when the next message starts:
	// one of slots, the other being the entry last returned.
	slots  [2]slot
	cur    int // the slot being assembled: an index, not a pointer, so that switching slots writes no pointer
	have   bool
	curPID int32
	field  fieldID // the field of the entry that continuation lines extend
	// seqs are the chunks (lineReader.seq) the message, detail, context
	// and statement of the entry being assembled were read from, when the
	// line reader recycles chunks.
	seqs [4]uint64
	// entryAt is where the message of the entry being assembled starts
	// in the line reader's mapping, when it reads one: the reader gives
	// back the pages before it.
	entryAt int
	builder []byte // continuation text of field, when it spans lines
	arena   []byte // what builders joined, never written again; then room for the next
	inArena bool   // builder was started at the end of arena
	noPID   bool

	foreign     string // a translated severity, when seen
	foreignLine int64

	// src, when not nil, gives the lines instead of lines: those of a
	// log in an envelope (syslog, ...), each standing for span physical
	// lines from lineNo on. span is 1 for a plain log.
	src  lineSource
	span int64
	// given is the fields of the line src gave last, when it read them
	// itself (outLine.f), and givenUS its time: the line then starts at
	// its severity.
	given   *lineFields
	givenUS int64
}

// lineFields are the fields a prefix yields, interned.
type lineFields struct {
	pid         int32
	session     string
	user        string
	database    string
	application string
	sqlstate    string
	// sess is the interpreter's state of the session these fields name,
	// remembered to save it a lookup; only when shared.
	sess *sessionState
	// shared is set for the fields the stderr reader keeps by the text of
	// the prefix, which never change once made: the interpreter may
	// remember things about them (sess, sessionState.applied).
	shared bool
	// short is set for a background process's line, stopped at %q: its
	// tail stays out of the fast table (see fields).
	short bool
	// worker is set for a parallel worker's line (%b, %P): see
	// interpreter.error.
	worker bool
	// tail is the text the fields are kept by, when shared.
	tail string
}

// slot is an entry the stderr reader assembles, with room for its
// fields when they are not kept by the tail of the prefix.
type slot struct {
	entry
	own lineFields
}

// fieldID names a text field of an entry: the reader keeps which one
// continuation lines extend as a number, not a pointer, which would go
// through the write barrier on every line while the collector marks.
type fieldID uint8

const (
	noField fieldID = iota
	fieldMessage
	fieldDetail
	fieldContext
	fieldStatement
)

// text returns the field f (not noField) of the entry.
func (e *slot) text(f fieldID) *string {
	switch f {
	case fieldDetail:
		return &e.detail
	case fieldContext:
		return &e.context
	case fieldStatement:
		return &e.statement
	}
	return &e.message
}

// fastTail is an entry of the direct-mapped table in front of tails.
type fastTail struct {
	tail string
	lf   *lineFields
	// w holds the first 32 bytes of a tail that long, as words.
	w [4]uint64
}

// maxTails bounds the tail cache: about one entry per live session.
const maxTails = 4096

func newStderrReader(r io.Reader, p *prefix.Prefix, c *Counters) *stderrReader {
	s := &stderrReader{lines: newLineReader(r), prefix: p, c: c, intern: make(interner), noPID: !p.HasPID, span: 1}
	if k, ok := p.Cacheable(); ok {
		s.tails, s.timeKind, s.minTail = make(map[string]*lineFields), k, 32
	}
	return s
}

// takeTime takes the leading time of a line for the tail cache, the same
// way the prefix matcher does.
func (s *stderrReader) takeTime(line []byte) (v, rest []byte, ok bool) {
	if s.timeKind == 'n' {
		return prefix.TakeEpoch(line)
	}
	return prefix.TakeTimestamp(line)
}

// cachedTail is slowTail for the lines of a second already seen whose
// tail is in the direct-mapped table (almost all of them), in one
// function: the time, the hash of the tail and its compare.
func (s *stderrReader) cachedTail(line []byte) (*lineFields, int64, []byte) {
	t := &s.sec
	if !t.ok || s.minTail < 32 || len(line) < 64 {
		return s.slowTail(line)
	}
	// Bounds are checked once: the time, the zone and the 32 bytes of
	// tail hashed all lie within the first 64 bytes.
	p := unsafe.Pointer(unsafe.SliceData(line))
	word := func(i int) uint64 { return *(*uint64)(unsafe.Add(p, i)) }
	if word(0) != t.w0 || word(8) != t.w1 || uint32(word(15)) != t.w2 || line[19] != '.' {
		return s.slowTail(line)
	}
	// ".123" (%m)
	f := word(20)
	d0, d1, d2, d3 := byte(f)-'0', byte(f>>8)-'0', byte(f>>16)-'0', byte(f>>24)-'0'
	if d0 > 9 || d1 > 9 || d2 > 9 || d3 <= 9 {
		return s.slowTail(line)
	}
	// " UTC", not followed by more of a zone.
	z := 23 + t.zlen
	if word(23)&t.zmask != t.zword || prefix.IsZoneByte(line[z&63]) {
		return s.slowTail(line)
	}
	// fastIndex, for 32 bytes.
	// The tails in the table are 32 bytes long or more (minTail): their
	// first 32 bytes are compared with the words kept with them, those of
	// the slot the last line used first (a session often logs several
	// lines in a row), else those of the slot the fastIndex hash names.
	a0, a1, a2, a3 := word(z), word(z+8), word(z+16), word(z+24)
	slot := &s.fast[s.lastSlot&(len(s.fast)-1)]
	if a0 != slot.w[0] || a1 != slot.w[1] || a2 != slot.w[2] || a3 != slot.w[3] {
		var h uint64 = 14695981039346656037
		h = (h ^ a0) * 1099511628211
		h ^= h >> 29
		h = (h ^ a1) * 1099511628211
		h ^= h >> 29
		h = (h ^ a2) * 1099511628211
		h ^= h >> 29
		h = (h ^ a3) * 1099511628211
		h ^= h >> 29
		k := int(h>>32) & (len(s.fast) - 1)
		slot = &s.fast[k]
		if a0 != slot.w[0] || a1 != slot.w[1] || a2 != slot.w[2] || a3 != slot.w[3] {
			return s.slowTail(line)
		}
		s.lastSlot = k
	}
	tail := slot.tail
	n := len(tail)
	end := z + n // where the severity starts
	if slot.lf == nil || end >= len(line) || n < 32 || !isSeverityStart(line[end]) {
		return s.slowTail(line)
	}
	// The rest of hasPrefix(line[z:], tail).
	q := unsafe.Pointer(unsafe.StringData(tail))
	for i := 32; i < n-8; i += 8 {
		if word(z+i) != *(*uint64)(unsafe.Add(q, i)) {
			return s.slowTail(line)
		}
	}
	if word(end-8) != *(*uint64)(unsafe.Add(q, n-8)) {
		return s.slowTail(line)
	}
	return slot.lf, t.us + (int64(d0)*100+int64(d1)*10+int64(d2))*1000, line[end:]
}

// slowTail looks up the prefix fields of line by its text between the
// leading time and the severity: first in a small direct-mapped table
// indexed by the tail's first bytes, which costs a hash of a few words and
// one compare, then by searching for the severity and looking the whole
// tail up in the map.
func (s *stderrReader) slowTail(line []byte) (lf *lineFields, us int64, rest []byte) {
	us, after, ok := s.leadingTime(line)
	if !ok {
		return nil, 0, nil
	}
	slot := &s.fast[s.fastIndex(after)]
	if t := slot.tail; slot.lf != nil && len(after) > len(t) && hasPrefix(after, t) && isSeverityStart(after[len(t)]) {
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
	if !lf.short {
		s.remember(lf.tail, lf)
	}
	return lf, us, after[k:]
}

// fastIndex hashes the first bytes of a tail, as many as the shortest tail
// seen has (up to 32): enough to tell sessions apart, since the process id
// or session id comes early, and never the message after the tail.
func (s *stderrReader) fastIndex(after []byte) int {
	n := min(len(after), s.minTail, 32)
	var h uint64 = 14695981039346656037
	if n == 32 {
		// The usual case, unrolled.
		h = (h ^ load64(after, 0)) * 1099511628211
		h ^= h >> 29
		h = (h ^ load64(after, 8)) * 1099511628211
		h ^= h >> 29
		h = (h ^ load64(after, 16)) * 1099511628211
		h ^= h >> 29
		h = (h ^ load64(after, 24)) * 1099511628211
		h ^= h >> 29
		return int(h>>32) & (len(s.fast) - 1)
	}
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
	ft := fastTail{tail: tail, lf: lf}
	if len(tail) >= 32 {
		for i := range ft.w {
			ft.w[i] = loadString64(tail, 8*i)
		}
	}
	s.fast[s.fastIndex([]byte(tail))] = ft
}

// hasPrefix is bytes.HasPrefix(b, []byte(t)) for len(b) >= len(t), by
// words and without a call: tails are some 40 bytes long.
func hasPrefix(b []byte, t string) bool {
	n := len(t)
	if n < 8 {
		return string(b[:n]) == t
	}
	b = b[:n]
	for i := 0; i < n-8; i += 8 {
		if load64(b, i) != loadString64(t, i) {
			return false
		}
	}
	return load64(b, n-8) == loadString64(t, n-8)
}

// loadString64 reads 8 bytes of s at i, which the caller keeps in range.
func loadString64(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

func isSeverityStart(c byte) bool { return c >= 'A' && c <= 'Z' }

// leadingTime parses the time at the start of a line. With the second
// and zone of an earlier line remembered, it is a few word compares and
// the digits of the fraction; otherwise it reads it as the prefix matcher
// does.
func (s *stderrReader) leadingTime(line []byte) (int64, []byte, bool) {
	t := &s.sec
	if t.ok && len(line) >= 32 && load64(line, 0) == t.w0 && load64(line, 8) == t.w1 && load32(line, 15) == t.w2 {
		// "2026-11-22 08:11:02" as before; then ".123" (%m), or no
		// fraction (%t).
		i := 19
		var frac int64
		if line[19] == '.' {
			d0, d1, d2 := line[20]-'0', line[21]-'0', line[22]-'0'
			if d0 <= 9 && d1 <= 9 && d2 <= 9 && line[23]-'0' > 9 {
				frac, i = int64(d0)*100000+int64(d1)*10000+int64(d2)*1000, 23
			} else {
				i = 20
				scale := int64(100000)
				for i < len(line) && line[i] >= '0' && line[i] <= '9' {
					frac += int64(line[i]-'0') * scale
					scale /= 10
					i++
				}
				if i == 20 || i > 26 {
					return s.slowLeadingTime(line)
				}
			}
		}
		// " UTC" and what follows, which must not continue the zone.
		if z := i + t.zlen; z < len(line) && i+8 <= len(line) && load64(line, i)&t.zmask == t.zword && !prefix.IsZoneByte(line[z]) {
			return t.unix*1e6 + frac, line[z:], true
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
	if ok && s.timeKind != 'n' {
		s.rememberSecond()
	}
	return us, rest, ok
}

// secondWords is the second and zone that leadingTime recognizes, as
// the little-endian words it compares lines with.
type secondWords struct {
	ok     bool
	w0, w1 uint64 // "2026-11-22 08:11:02": bytes 0-7, 8-15
	w2     uint32 // bytes 15-18
	zword  uint64 // " UTC", the zone with its leading space
	zmask  uint64
	zlen   int   // len(" UTC")
	unix   int64 // the second, zone applied
	us     int64 // unix in µs
}

// rememberSecond copies the time parser's cached second, when it has one
// with a zone leadingTime can compare in a word.
func (s *stderrReader) rememberSecond() {
	p := &s.times
	if !p.ok || p.zoneLen == 0 || p.zoneLen > 6 {
		s.sec.ok = false
		return
	}
	var z [8]byte
	z[0] = ' '
	copy(z[1:], p.zone[:p.zoneLen])
	zlen := 1 + p.zoneLen
	s.sec = secondWords{
		ok:    true,
		w0:    binary.LittleEndian.Uint64(p.secText[0:8]),
		w1:    binary.LittleEndian.Uint64(p.secText[8:16]),
		w2:    binary.LittleEndian.Uint32(p.secText[15:19]),
		zword: binary.LittleEndian.Uint64(z[:]),
		zmask: 1<<(8*zlen) - 1,
		zlen:  zlen,
		unix:  p.unix,
		us:    p.unix * 1e6,
	}
}

func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i : i+8]) }
func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i : i+4]) }

// fields interns what the prefix matcher found, and remembers it by the
// line's tail when the cache is on.
func (s *stderrReader) fields(line, rest []byte, f *prefix.Fields) *lineFields {
	if s.tails == nil || len(f.Time) == 0 || unknown(f.User) || unknown(f.Database) || unknown(f.Application) {
		// Not kept: the fields are read once, and go into the entry. A
		// session's first lines, before the server knows its user,
		// database or application ("[unknown]"), have a text of their
		// own that no later line repeats: kept, it would only take room.
		lf := &s.scratch
		*lf = lineFields{
			pid:         pidOf(f.PID, f.Session),
			session:     s.intern.get(f.Session),
			user:        s.intern.get(f.User),
			database:    s.intern.get(f.Database),
			application: s.intern.get(f.Application),
			sqlstate:    s.intern.get(f.SQLState),
			short:       f.QCut,
			worker:      f.ParallelWorker(),
		}
		return lf
	}
	if len(s.tails) >= maxTails {
		clear(s.tails)
		s.fast = [len(s.fast)]fastTail{}
	}
	start := len(f.Time)
	tail := string(line[start : len(line)-len(rest)])
	// The other fields are in the tail: substrings of its copy need no
	// allocation, nor interning.
	sub := func(v []byte) string {
		if len(v) == 0 {
			return ""
		}
		off := int(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - uintptr(unsafe.Pointer(unsafe.SliceData(line))))
		if off < start || off+len(v) > start+len(tail) {
			return s.intern.get(v)
		}
		return tail[off-start : off-start+len(v)]
	}
	lf := &lineFields{
		pid:         pidOf(f.PID, f.Session),
		session:     s.intern.get(f.Session), // one string per session: compared by pointer
		user:        sub(f.User),
		database:    sub(f.Database),
		application: sub(f.Application),
		sqlstate:    sub(f.SQLState),
		shared:      true,
		short:       f.QCut,
		worker:      f.ParallelWorker(),
		tail:        tail,
	}
	s.tails[tail] = lf
	if !f.QCut {
		// A background process's tail is short: hashed on fewer bytes,
		// it would take the sessions' lines off the fast path.
		s.remember(tail, lf)
	}
	return lf
}

// unknown reports whether a prefix field is "[unknown]".
func unknown(v []byte) bool { return string(v) == "[unknown]" }

// next implements formatReader. The entry returned is the reader's own: it
// stays valid until the next call.
//
// Each line is, in turn: taken from the chunk (the common case inline,
// the rest in otherLine); a tab continuation of the entry being built; or
// a prefix and a severity, read through the tail cache (cachedTail) or
// else the long way (matchLine). A secondary line (DETAIL, STATEMENT, ...)
// joins the entry being built (addSecondary); a primary one ends it and
// starts the next.
func (s *stderrReader) next() (*entry, error) {
	lr := s.lines
	for {
		if lr.pos >= lr.relAt {
			// Every chunkSize bytes of a mapping: what the entry being
			// assembled does not refer to can go.
			keep := lr.pos
			if s.have {
				keep = s.entryAt
			}
			lr.release(keep)
		}
		var line []byte
		if i := -1; s.src == nil {
			if i = bytes.IndexByte(lr.buf[lr.pos:], '\n'); i >= 0 {
				// lineReader.next, inline.
				line = lr.buf[lr.pos : lr.pos+i]
				lr.pos += i + 1
				if n := len(line); n > 0 && line[n-1] == '\r' {
					line = line[:n-1]
				}
				s.lineNo++
			}
		}
		if line == nil {
			var more bool
			if line, more = s.otherLine(); !more {
				return s.end()
			}
			if line == nil {
				continue
			}
		}
		if len(line) > 0 && line[0] == '\t' {
			// "\tFROM pgbench_accounts": continues the current field.
			s.continueField(line)
			continue
		}
		var lf *lineFields
		var us int64
		var msg []byte
		sev := prefix.SevNone
		if s.tails != nil {
			var rest []byte
			if lf, us, rest = s.cachedTail(line); lf != nil {
				if len(rest) >= 8 && load64(rest, 0)&0xffffffffffff == prefix.WordLog {
					// "LOG:  ", splitSeverityFast's first case, inline.
					sev, msg = prefix.SevLog, rest[6:]
				} else {
					sev, msg = prefix.SplitSeverityFast(rest)
				}
			}
		}
		if sev == prefix.SevNone {
			// Not in the cache, or a cached tail followed by no severity.
			if s.given != nil {
				// An envelope's line whose fields it read.
				lf, us = s.given, s.givenUS
				if sev, msg = prefix.SplitSeverityFast(line); sev == prefix.SevNone {
					s.otherSeverity(line)
					continue
				}
			} else if lf, us, sev, msg = s.matchLine(line); sev == prefix.SevNone {
				continue
			}
		}
		if sev >= prefix.SevDetail {
			if sev == prefix.SevDetail && s.have && s.builder == nil && (s.noPID || lf.pid == s.curPID) {
				// addSecondary's common case, inline: the parameters of
				// an execute.
				s.slots[s.cur&1].lines += s.span
				s.setField(fieldDetail, msg)
				continue
			}
			s.addSecondary(sev, msg, lf, line)
			continue
		}
		if s.have {
			e := s.finish()
			s.start(us, sev, msg, lf)
			return e, nil
		}
		s.start(us, sev, msg, lf)
	}
}

// otherLine returns the next line when it is not whole in the chunk: the
// next line of an envelope, or one across chunks. more is false at the
// end of the log; line is nil (and more true) for a line that was counted
// and set aside (cut at EOF, or too long to hold).
func (s *stderrReader) otherLine() (line []byte, more bool) {
	if s.src != nil {
		ol, ok := s.src.next()
		if !ok {
			return nil, false
		}
		s.lineNo, s.span = ol.first, ol.span
		s.given, s.givenUS = ol.f, ol.us
		if ol.b == nil {
			return []byte{}, true
		}
		return ol.b, true
	}
	// The line reader may read into older chunks again: the entry being
	// assembled still refers to those it was read from (the entry last
	// returned is no longer valid).
	if s.have {
		s.lines.keep = s.seqs
	} else {
		s.lines.keep = [4]uint64{}
	}
	l, complete, ok := s.lines.next()
	if !ok {
		return nil, false
	}
	s.lineNo++
	if !complete {
		// A line too long to hold: its content cannot be trusted.
		s.c.skip(SkipTruncated, 1)
		return nil, true
	}
	if l == nil {
		l = []byte{}
	}
	return l, true
}

// end ends the log: the entry being built, then io.EOF (or the read
// error).
func (s *stderrReader) end() (*entry, error) {
	err := s.lines.err
	if s.src != nil {
		err = s.src.err()
	}
	if err != nil {
		return nil, err
	}
	if s.have {
		return s.finish(), nil
	}
	return nil, io.EOF
}

// continueField adds a tab continuation line to the entry being built.
func (s *stderrReader) continueField(line []byte) {
	if !s.have {
		s.c.skipSample(SkipOrphanLine, s.span, s.lineNo, line)
		return
	}
	s.extend(line[1:])
}

// skipUnmatched counts a line the prefix does not match: a blank line,
// what the server writes without a prefix (see unprefixed), or else a
// line the reader could not read.
func (s *stderrReader) skipUnmatched(line []byte) {
	switch {
	case isBlank(line):
		s.c.skip(SkipBlank, s.span)
	case unprefixed(line):
		s.c.skip(SkipUnprefixed, s.span)
	default:
		s.c.skipSample(SkipNoPrefix, s.span, s.lineNo, line)
	}
}

// otherSeverity counts a line an envelope read the fields of, whose
// severity is no severity the reader knows: a message it has no use
// for, or one in another language.
func (s *stderrReader) otherSeverity(line []byte) {
	if w := prefix.ForeignSeverity(line); w != "" && s.foreign == "" {
		s.foreign, s.foreignLine = w, s.lineNo
	}
	s.c.skip(SkipOtherMessage, s.span)
}

// matchLine reads a line's prefix and severity the long way, with the
// prefix matcher; prefix.SevNone when the line has neither (it is counted as
// skipped).
func (s *stderrReader) matchLine(line []byte) (*lineFields, int64, prefix.Severity, []byte) {
	f := &s.pf
	rest, ok := s.prefix.Match(line, f)
	if !ok {
		s.skipUnmatched(line)
		return nil, 0, prefix.SevNone, nil
	}
	var us int64
	if len(f.Time) > 0 {
		us, _ = s.times.parse(f.Time)
	}
	sev, msg := prefix.SplitSeverityFast(rest)
	if sev == prefix.SevNone {
		if w := prefix.ForeignSeverity(rest); w != "" && s.foreign == "" {
			s.foreign, s.foreignLine = w, s.lineNo
		}
		s.c.skipSample(SkipNoPrefix, s.span, s.lineNo, line)
		return nil, 0, prefix.SevNone, nil
	}
	return s.fields(line, rest, f), us, sev, msg
}

// addSecondary joins a DETAIL, CONTEXT, STATEMENT (or HINT, QUERY,
// LOCATION, kept for line accounting only) line to the entry before it
// from the same process.
func (s *stderrReader) addSecondary(sev prefix.Severity, msg []byte, lf *lineFields, line []byte) {
	if !s.have || (!s.noPID && lf.pid != s.curPID) {
		s.c.skipSample(SkipOrphanLine, s.span, s.lineNo, line)
		return
	}
	if s.builder != nil {
		s.closeField()
	}
	s.slots[s.cur&1].lines += s.span
	switch sev {
	case prefix.SevDetail:
		s.setField(fieldDetail, msg)
	case prefix.SevContext:
		s.setField(fieldContext, msg)
	case prefix.SevStatement:
		s.setField(fieldStatement, msg)
	default:
		s.field = noField
	}
}

func (s *stderrReader) start(us int64, sev prefix.Severity, msg []byte, lf *lineFields) {
	// Field by field: a composite literal would be built aside and copied.
	e := &s.slots[s.cur&1]
	e.time = us
	e.line = s.lineNo
	e.lines = s.span
	// The severity as a number (the interpreter writes the string when
	// it needs it); pointers are written only when they change: while the
	// collector marks, each write goes through its write barrier.
	e.sev = sev
	e.pid = lf.pid
	if lf.shared {
		if e.f != lf {
			e.f = lf
		}
	} else {
		// The reader's scratch fields change with the next line: the
		// entry keeps a copy.
		e.own = *lf
		e.f = &e.own
	}
	e.message = unsafeString(msg)
	if e.detail != "" {
		e.detail = ""
	}
	if e.context != "" {
		e.context = ""
	}
	if e.statement != "" {
		e.statement = ""
	}
	s.curPID = lf.pid
	s.have = true
	s.field = fieldMessage
	if lr := s.lines; lr.inMap {
		s.entryAt = int(uintptr(unsafe.Pointer(unsafe.SliceData(msg))) - uintptr(unsafe.Pointer(unsafe.SliceData(lr.buf))))
	} else if lr.recycle {
		s.seqs = [4]uint64{lr.seq}
	}
	if s.builder != nil {
		s.builder = nil
	}
	s.inArena = false
}

func (s *stderrReader) setField(f fieldID, v []byte) {
	*s.slots[s.cur&1].text(f) = unsafeString(v)
	s.field = f
	if s.lines.recycle {
		s.seqs[(f-1)&3] = s.lines.seq
	}
	if s.builder != nil {
		s.builder = nil
	}
	s.inArena = false
}

// extend appends a continuation line to the current field. The server
// wrote "\n\t" for each newline in the text; the tab is not part of it.
// The joined text is built at the end of the arena, which closeField
// then keeps: one allocation for many multi-line statements.
func (s *stderrReader) extend(line []byte) {
	s.slots[s.cur&1].lines += s.span
	if s.field == noField {
		return
	}
	field := s.slots[s.cur&1].text(s.field)
	if s.builder == nil {
		// Room for a few more lines like this one, or a block of its own.
		need := 4 * (len(*field) + 1 + len(line))
		if need > arenaSize/4 {
			s.builder = make([]byte, 0, need)
		} else {
			if cap(s.arena)-len(s.arena) < need {
				s.arena = make([]byte, 0, arenaSize)
			}
			s.builder = s.arena[len(s.arena):len(s.arena)]
			s.inArena = true
		}
		s.builder = append(s.builder, *field...)
	}
	s.builder = append(s.builder, '\n')
	s.builder = append(s.builder, line...)
}

// arenaSize is the size of the blocks continued fields are joined in.
const arenaSize = 64 << 10

func (s *stderrReader) closeField() {
	if s.field != noField && s.builder != nil {
		*s.slots[s.cur&1].text(s.field) = unsafeString(s.builder)
		if s.inArena {
			if rest := s.arena[len(s.arena):]; cap(rest) > 0 && unsafe.SliceData(s.builder) == unsafe.SliceData(rest) {
				// Built in the arena: keep it there.
				s.arena = s.arena[:len(s.arena)+len(s.builder)]
			} else {
				// It outgrew what was left of the arena: start a new
				// block next time.
				s.arena = nil
			}
		}
	}
	s.field, s.builder, s.inArena = noField, nil, false
}

// finish ends the entry being assembled and returns it. The next entry is
// assembled in the other slot, so the one returned stays valid until the
// next call of next.
func (s *stderrReader) finish() *entry {
	if s.builder != nil {
		s.closeField()
	}
	// s.field is left as it is: nothing extends it before start sets it
	// again, as continuation lines need an entry being assembled.
	e := &s.slots[s.cur&1].entry
	s.have = false
	s.cur ^= 1
	return e
}

// unsafeString returns b as a string without copying. The reader never
// writes to a chunk or a builder again once it hands out a slice of it.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// pidOf returns the process id of a line: %p, or else the one in %c
// ("6571e2a3.1f40": the process id is the hex after the dot), as Azure's
// "%t-%c-" prefix gives it.
func pidOf(pid, session []byte) int32 {
	if len(pid) > 0 || len(session) == 0 {
		return int32(atoi(pid))
	}
	i := bytes.IndexByte(session, '.')
	if i < 0 || len(session)-i-1 > 8 {
		return 0
	}
	var n uint32
	for _, c := range session[i+1:] {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | uint32(c-'a'+10)
		default:
			return 0
		}
	}
	return int32(n)
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
