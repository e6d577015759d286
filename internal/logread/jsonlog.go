package logread

import (
	"bytes"
	"io"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// The JSON reader takes three shapes of line, all one object per line:
//
// PostgreSQL 15+ jsonlog, flat:
//
//	{"timestamp":"2024-06-27 00:00:07.369 CEST","pid":58151,"session_id":"667c8f67.e327",...,"error_severity":"LOG","message":"..."}
//
// CloudNativePG, a csvlog record wrapped in the operator's own log line,
// with csvlog column names and every value a string:
//
//	{"level":"info","ts":1669575482.09,"logger":"postgres","msg":"record","record":{"log_time":"2022-11-27 18:58:02.096 UTC","process_id":"600",...}}
//
// Google Cloud Logging exports of Cloud SQL, where each stderr line is one
// object (so DETAIL lines and tab continuations are objects of their own):
//
//	{"insertId":"...","resource":{...},"severity":"INFO","textPayload":"[24667]: [2-1] db=test,user=admin LOG:  connection authorized: ...","timestamp":"2020-05-02T13:00:20.38403Z"}
//
// Azure Database for PostgreSQL's diagnostic logs, as diagnostic settings
// write them to storage or to an Event Hub (where a message holds a
// "records" array of them) and as Log Analytics exports them (flat, with
// typed column names: "errorLevel_s", "Message"):
//
//	{"time":"2023-02-27T22:21:11.830Z","category":"PostgreSQLLogs","properties":{"timestamp":"2023-02-27 22:21:11.823 UTC","processId":2030,"errorLevel":"LOG","sqlerrcode":"00000","message":"2023-02-27 22:21:11.823 UTC [2030] [user=postgres,db=postgres,app=pgbench] LOG:  duration: ..."}}
//	{"time":"2023-02-27T23:21:40Z","properties":{"prefix":"2023-02-27 23:21:40 UTC-63fd3b04.cf0-","message":"duration: 0.000 ms  statement: ...","errorLevel":"LOG"}}
//
// The message holds the server's own log_line_prefix (Flexible Server), or
// the prefix has a property of its own (Single Server): either way the
// prefix is inferred from the first records and read as for stderr.
//
// Values need not be one a line: gcloud logging read --format=json and
// Log Analytics write a JSON array, indented over many lines (gcloud, the
// newest entry first, which the reader turns around).
//
// A hand-written scanner beats encoding/json here by a wide margin: it
// looks only at the keys it needs, skips other values without decoding,
// and allocates only the strings an entry keeps.

// Slots of the values the reader keeps, whichever name the shape uses.
const (
	jTime        = iota // "timestamp" (jsonlog, Cloud Logging), "log_time" (CNPG)
	jTS                 // "ts": CNPG's epoch seconds, used if log_time is missing
	jUser               // "user", "user_name"
	jDatabase           // "dbname", "database_name"
	jPID                // "pid" (number), "process_id" (string in CNPG)
	jSession            // "session_id"
	jSeverity           // "error_severity"
	jSQLState           // "state_code", "sql_state_code"
	jMessage            // "message"
	jDetail             // "detail"
	jContext            // "context"
	jStatement          // "statement", "query"
	jApplication        // "application_name"
	jTextPayload        // "textPayload" (Cloud Logging)
	jPrefix             // "prefix" (Azure Single Server)
	jLogTime            // "time", "TimeGenerated" (Azure): used if there is no other time
	jSlots
)

func jsonSlot(k []byte) int {
	switch string(k) {
	case "timestamp", "log_time":
		return jTime
	case "ts":
		return jTS
	case "user", "user_name":
		return jUser
	case "dbname", "database_name":
		return jDatabase
	case "pid", "process_id":
		return jPID
	case "session_id":
		return jSession
	case "error_severity":
		return jSeverity
	case "state_code", "sql_state_code":
		return jSQLState
	case "message":
		return jMessage
	case "detail":
		return jDetail
	case "context":
		return jContext
	case "statement", "query":
		return jStatement
	case "application_name":
		return jApplication
	case "textPayload":
		return jTextPayload
	}
	return -1
}

// azureSlot maps Azure's names: properties of diagnostic records, and Log
// Analytics' columns, whose names end in their type ("errorLevel_s",
// "processId_d") and whose case varies between tables.
func azureSlot(k []byte) int {
	if len(k) > 64 {
		return -1
	}
	var buf [64]byte
	n := copy(buf[:], k)
	b := buf[:n]
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	if n > 2 && b[n-2] == '_' && (b[n-1] == 's' || b[n-1] == 'd' || b[n-1] == 't' || b[n-1] == 'g') {
		b = b[:n-2]
	}
	switch string(b) {
	case "errorlevel":
		return jSeverity
	case "processid":
		return jPID
	case "sqlerrcode", "sqlerrorcode":
		return jSQLState
	case "message":
		return jMessage
	case "detail":
		return jDetail
	case "context":
		return jContext
	case "statement":
		return jStatement
	case "prefix":
		return jPrefix
	case "timestamp":
		return jTime
	case "time", "timegenerated", "timegenerated [utc]":
		return jLogTime
	case "username", "user":
		return jUser
	case "databasename", "dbname", "database":
		return jDatabase
	case "applicationname":
		return jApplication
	case "sessionid":
		return jSession
	}
	return -1
}

// jval is a value as it appears in the line: string contents without
// quotes (still escaped if esc), or a number's text.
type jval struct {
	b   []byte
	set bool
	esc bool
}

type jsonObj struct {
	v      [jSlots]jval
	nested bool   // held a "record", "jsonPayload" or "properties" object
	azure  bool   // held a "properties" object or keys of Azure's names
	recs   []byte // the "records" array of an Event Hub message, raw
}

// jsonScanner walks one line. Every method leaves i after what it read and
// reports false on input that is not JSON; nothing it does can panic or
// recurse deeper than one nested object.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str reads a string starting at its opening quote. A quote ends the
// string unless an odd run of backslashes precedes it ("a\\" ends, "a\"
// does not): only a backslash starts an escape, so a run always starts on
// an escape boundary. Searching quote to quote keeps a line of many
// escapes linear.
func (s *jsonScanner) str() (raw []byte, esc, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	start := s.i + 1
	j := start
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, false, false
		}
		q := j + k
		n := 0
		for p := q - 1; p >= start && s.b[p] == '\\'; p-- {
			n++
		}
		if n&1 == 0 {
			s.i = q + 1
			raw = s.b[start:q]
			return raw, bytes.IndexByte(raw, '\\') >= 0, true
		}
		j = q + 1
	}
}

// scalar reads a number, true, false or null.
func (s *jsonScanner) scalar() ([]byte, bool) {
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return s.b[start:s.i], s.i > start
		case '"', '{', '[', ':':
			return nil, false
		}
		s.i++
	}
	return s.b[start:s.i], s.i > start
}

// skip skips one value of any kind. Nested containers are tracked with a
// depth counter, not recursion, so a line of a million '[' is harmless.
func (s *jsonScanner) skip() bool {
	depth := 0
	for {
		s.ws()
		switch s.peek() {
		case 0:
			return false
		case '"':
			if _, _, ok := s.str(); !ok {
				return false
			}
		case '{', '[':
			depth++
			s.i++
			continue
		case '}', ']':
			if depth == 0 {
				return false
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return false
			}
			s.i++
			continue
		default:
			if _, ok := s.scalar(); !ok {
				return false
			}
		}
		if depth == 0 {
			return true
		}
	}
}

// object reads an object into o. With inner set, a "record" or
// "jsonPayload" object value is read into inner (one level only).
func (s *jsonScanner) object(o, inner *jsonObj) bool {
	s.ws()
	if s.peek() != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, kesc, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		slot := -1
		if !kesc {
			if slot = jsonSlot(key); slot < 0 {
				if slot = azureSlot(key); slot >= 0 {
					o.azure = true
				}
			}
		}
		switch c := s.peek(); {
		case inner != nil && c == '{' && !kesc && (string(key) == "record" || string(key) == "jsonPayload" || string(key) == "properties"):
			if !s.object(inner, nil) {
				return false
			}
			o.nested = true
			o.azure = string(key) == "properties"
		case inner != nil && c == '[' && !kesc && string(key) == "records":
			start := s.i
			if !s.skip() {
				return false
			}
			o.recs = s.b[start:s.i]
		case slot >= 0 && c == '"':
			raw, esc, ok := s.str()
			if !ok {
				return false
			}
			o.v[slot] = jval{b: raw, set: true, esc: esc}
		case slot >= 0 && c != '{' && c != '[':
			raw, ok := s.scalar()
			if !ok {
				return false
			}
			if string(raw) != "null" {
				o.v[slot] = jval{b: raw, set: true}
			}
		default:
			if !s.skip() {
				return false
			}
		}
		s.ws()
		switch s.peek() {
		case '}':
			s.i++
			return true
		case ',':
			s.i++
		default:
			return false
		}
	}
}

// appendUnescaped decodes a JSON string body. PostgreSQL's escape_json
// writes \" \\ \b \f \n \r \t and \u00XX for other control bytes;
// surrogate pairs come from other writers. A lone surrogate becomes
// U+FFFD rather than an error, as encoding/json does.
func appendUnescaped(dst, b []byte) ([]byte, bool) {
	for {
		k := bytes.IndexByte(b, '\\')
		if k < 0 {
			return append(dst, b...), true
		}
		dst = append(dst, b[:k]...)
		b = b[k:]
		if len(b) < 2 {
			return dst, false
		}
		switch b[1] {
		case '"', '\\', '/':
			dst = append(dst, b[1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b[2:])
			if !ok {
				return dst, false
			}
			b = b[6:]
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if len(b) >= 2 && b[0] == '\\' && b[1] == 'u' {
					r2, ok = hex4(b[2:])
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r = d
					b = b[6:]
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, false
		}
		b = b[2:]
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Which field of the pending entry a Cloud SQL tab continuation extends.
const (
	extNone = iota // a dropped field (HINT, QUERY): lines are counted only
	extMessage
	extDetail
	extContext
	extStatement
)

type jsonReader struct {
	cb       chunkBuf
	e        entry // the entry next returns
	c        *Counters
	line     int64
	times    logTimeParser
	intern   interner
	sessions interner
	scratch  []byte
	top      jsonObj
	inner    jsonObj

	// An entry is held until the next line shows it is complete: Cloud
	// SQL writes an entry's DETAIL, STATEMENT and tab-indented lines as
	// objects of their own after it.
	pending    entry
	hasPending bool
	pendText   bool // pending came from a textPayload and may grow
	extend     int  // ext* for the pending entry's tab continuations

	cloudLogging bool // textPayload records were read
	array        bool // the log is one JSON array

	started bool      // the first value was looked at
	midLine bool      // stream framing stopped in the middle of a line
	stream  bool      // values are not one a line: read value by value
	queue   []jsonRec // records to read before the next value of the file

	// The server's log_line_prefix inside Azure's messages, inferred
	// from the first of them (azureDone once tried).
	azPrefix  *prefix.Prefix
	azureDone bool
	fields    prefix.Fields
	azLine    []byte
}

// jsonRec is one JSON value of the log, with the physical lines it
// accounts for: its own and the separators before it.
type jsonRec struct {
	b     []byte
	line  int64 // physical line it starts on
	lines int64
	st    frameStatus
}

// newJSONReader returns a formatReader for PostgreSQL 15+ jsonlog (one
// JSON object per line), CloudNativePG's wrapped records, Cloud Logging
// exports of Cloud SQL and Azure's diagnostic logs; see the comment at
// the top of jsonlog.go.
func newJSONReader(r io.Reader, c *Counters) formatReader {
	return &jsonReader{cb: newChunkBuf(r), c: c, intern: make(interner), sessions: make(interner)}
}

// readLine returns the next physical line without its newline. A line
// longer than maxRecordSize is consumed without being kept.
func (jr *jsonReader) readLine() ([]byte, frameStatus) {
	cb := &jr.cb
	scan := 0
	discard := false
	for {
		data := cb.buf[cb.start+scan : cb.end]
		if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
			line := cb.buf[cb.start : cb.start+scan+nl]
			cb.start += scan + nl + 1
			if discard || len(line) > maxRecordSize {
				return nil, frameTooLong
			}
			return trimCR(line), frameRecord
		}
		scan += len(data)
		if scan > maxRecordSize {
			discard = true
		}
		if discard {
			cb.start += scan
			scan = 0
		}
		if !cb.fill() {
			break
		}
	}
	if scan == 0 && !discard {
		return nil, frameEOF
	}
	line := cb.buf[cb.start : cb.start+scan]
	cb.start += scan
	if discard || len(line) > maxRecordSize {
		return nil, frameTooLong
	}
	return trimCR(line), frameLast
}

// start decides how to frame the log from its first value: one object a
// line (jsonlog and the like: the fast way), or value by value. A JSON
// array is read whole, and turned around when it lists the newest entry
// first (gcloud logging read --format=json).
func (jr *jsonReader) start() {
	jr.started = true
	cb := &jr.cb
	for cb.end-cb.start < 1<<16 && cb.fill() {
	}
	data := cb.buf[cb.start:cb.end]
	i := 0
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	if i == len(data) {
		return
	}
	if data[i] == '[' {
		jr.stream, jr.array = true, true
		jr.readArray()
		return
	}
	nl := bytes.IndexByte(data[i:], '\n')
	if data[i] != '{' || nl < 0 {
		return // one a line, or a single line: line by line
	}
	end := jsonValueEnd(data[i:])
	if end < 0 || end > nl || len(bytes.TrimSpace(data[i+end:i+nl])) > 0 {
		jr.stream = true
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// jsonValueEnd returns the length of the object or array at the start of
// b, or -1 when b ends before it does.
func jsonValueEnd(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return -1
				}
				q := j + k
				n := 0
				for p := q - 1; p > i && b[p] == '\\'; p-- {
					n++
				}
				if n&1 == 0 {
					i = q
					break
				}
				j = q + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return i + 1
			}
		}
	}
	return -1
}

// lineStarts counts the lines that start in b, when the byte before b
// ends a line (atStart): the physical lines b accounts for. It returns
// whether the byte after b starts a line.
func lineStarts(b []byte, atStart bool) (int64, bool) {
	if len(b) == 0 {
		return 0, atStart
	}
	var n int64
	if atStart {
		n = 1
	}
	n += int64(bytes.Count(b[:len(b)-1], []byte{'\n'}))
	return n, b[len(b)-1] == '\n'
}

// nextValue frames the next value when values are not one a line. A value
// accounts for the lines that start from the end of the one before to its
// own end: separators, indentation and its own lines.
func (jr *jsonReader) nextValue() jsonRec {
	cb := &jr.cb
	var lines int64
	consume := func(b []byte) {
		n, at := lineStarts(b, !jr.midLine)
		lines += n
		jr.midLine = !at
		cb.start += len(b)
	}
	for {
		data := cb.buf[cb.start:cb.end]
		i := 0
		for i < len(data) && (isJSONSpace(data[i]) || data[i] == ',') {
			i++
		}
		first := jr.line + lines + 1
		if jr.midLine {
			first--
		}
		consume(data[:i])
		data = data[i:]
		if len(data) == 0 {
			if cb.fill() {
				continue
			}
			jr.line += lines
			if lines > 0 {
				jr.c.skip(SkipBlank, lines)
			}
			return jsonRec{st: frameEOF}
		}
		first = jr.line + lines + 1
		if jr.midLine {
			first--
		}
		if data[0] != '{' && data[0] != '[' {
			// Not a value of this log: skip the line it is on.
			nl := bytes.IndexByte(data, '\n')
			for nl < 0 && len(data) <= maxRecordSize && cb.fill() {
				data = cb.buf[cb.start:cb.end]
				nl = bytes.IndexByte(data, '\n')
			}
			st := frameRecord
			if nl < 0 {
				nl, st = len(data)-1, frameLast
			}
			line := data[:nl+1]
			consume(line)
			jr.line += lines
			return jsonRec{b: trimCR(bytes.TrimSuffix(line, []byte{'\n'})), line: first, lines: lines, st: st}
		}
		end := jsonValueEnd(data)
		if end < 0 {
			if len(data) > maxRecordSize {
				// Too long to hold: drop it up to the end of its line.
				nl := bytes.IndexByte(data[maxRecordSize:], '\n')
				for nl < 0 && cb.fill() {
					data = cb.buf[cb.start:cb.end]
					nl = bytes.IndexByte(data[min(maxRecordSize, len(data)):], '\n')
				}
				if nl < 0 {
					consume(data)
				} else {
					consume(data[:min(maxRecordSize, len(data))+nl+1])
				}
				jr.line += lines
				return jsonRec{line: first, lines: lines, st: frameTooLong}
			}
			if cb.fill() {
				continue
			}
			// Cut at the end of the file.
			rec := data
			consume(rec)
			jr.line += lines
			return jsonRec{b: rec, line: first, lines: lines, st: frameLast}
		}
		rec := data[:end]
		consume(rec)
		jr.line += lines
		return jsonRec{b: rec, line: first, lines: lines, st: frameRecord}
	}
}

// readArray reads a JSON array whole into the queue, one record an
// element, oldest first.
func (jr *jsonReader) readArray() {
	cb := &jr.cb
	for cb.fill() {
	}
	data := cb.buf[cb.start:cb.end]
	cb.start = cb.end
	var recs []jsonRec
	atStart := true
	var line int64 // lines started so far
	var pending int64
	take := func(b []byte) {
		n, at := lineStarts(b, atStart)
		pending += n
		line += n
		atStart = at
	}
	i := bytes.IndexByte(data, '[') + 1
	take(data[:i])
	for {
		j := i
		for j < len(data) && (isJSONSpace(data[j]) || data[j] == ',') {
			j++
		}
		take(data[i:j])
		i = j
		if i >= len(data) || data[i] == ']' {
			break
		}
		first := line + 1
		if !atStart {
			first = line
		}
		end := jsonValueEnd(data[i:])
		st := frameRecord
		if end < 0 {
			// Cut at the end of the file: the element takes the rest.
			end, st = len(data)-i, frameLast
		}
		take(data[i : i+end])
		recs = append(recs, jsonRec{b: data[i : i+end], line: first, lines: pending, st: st})
		pending = 0
		i += end
	}
	// What follows the last element: "]" and the end of its line.
	take(data[min(i, len(data)):])
	if pending > 0 {
		jr.c.skip(SkipBlank, pending)
	}
	jr.line = line
	if len(recs) > 1 && jr.timeOf(recs[0].b) > jr.timeOf(recs[len(recs)-1].b) {
		slices.Reverse(recs)
	}
	jr.queue = recs
}

// timeOf returns the time of a record as written, to compare the order.
func (jr *jsonReader) timeOf(rec []byte) string {
	s := jsonScanner{b: rec}
	var top, inner jsonObj
	if !s.object(&top, &inner) {
		return ""
	}
	for _, v := range []jval{top.v[jTime], inner.v[jTime], top.v[jLogTime], top.v[jTS]} {
		if v.set {
			return string(v.b)
		}
	}
	return ""
}

// nextRecord returns the next record of the log.
func (jr *jsonReader) nextRecord() jsonRec {
	if !jr.started {
		jr.start()
	}
	if len(jr.queue) > 0 {
		r := jr.queue[0]
		jr.queue = jr.queue[1:]
		return r
	}
	if jr.stream {
		return jr.nextValue()
	}
	line, st := jr.readLine()
	if st == frameEOF {
		return jsonRec{st: st}
	}
	jr.line++
	return jsonRec{b: line, line: jr.line, lines: 1, st: st}
}

// lineKind says what one line turned out to be.
type lineKind uint8

const (
	lineEntry  lineKind = iota // a new entry, in jr.cur
	lineMerged                 // added to the pending entry
	lineSkip                   // counted as skipped with the returned reason
	lineQueued                 // a wrapper whose records were queued
)

// next implements formatReader.
func (jr *jsonReader) next() (*entry, error) {
	err := jr.read(&jr.e)
	return &jr.e, err
}

// read fills e with the next entry.
func (jr *jsonReader) read(e *entry) error {
	for {
		rec := jr.nextRecord()
		if rec.st == frameEOF {
			if jr.hasPending {
				jr.hasPending = false
				*e = jr.pending
				return nil
			}
			if jr.cb.err != nil {
				return jr.cb.err
			}
			return io.EOF
		}
		if rec.st == frameTooLong {
			jr.c.skipSample(SkipMalformed, rec.lines, rec.line, nil)
			continue
		}
		var cur entry
		kind, isText, reason := jr.parseLine(rec, &cur)
		switch kind {
		case lineMerged:
			jr.pending.lines += rec.lines
			continue
		case lineQueued:
			continue
		case lineSkip:
			if rec.st == frameLast && reason == SkipMalformed {
				// {"timestamp":"2026-11-22 08:11:02.123 UTC","pid":1<EOF>
				reason = SkipTruncated
			}
			if Unparseable(reason) {
				jr.c.skipSample(reason, rec.lines, rec.line, rec.b)
			} else {
				jr.c.skip(reason, rec.lines)
			}
			continue
		}
		cur.line = rec.line
		cur.lines = rec.lines
		ready := jr.hasPending
		if ready {
			*e = jr.pending
		}
		jr.pending, jr.hasPending, jr.pendText = cur, true, isText
		jr.extend = extMessage
		if ready {
			return nil
		}
	}
}

// parseLine reads one record into cur, or merges it into the pending
// entry.
func (jr *jsonReader) parseLine(rec jsonRec, cur *entry) (kind lineKind, isText bool, reason string) {
	line := rec.b
	s := jsonScanner{b: line}
	s.ws()
	if s.i == len(line) {
		return lineSkip, false, SkipBlank
	}
	if s.peek() != '{' {
		// a stderr line or other text among JSON lines
		return lineSkip, false, SkipMalformed
	}
	jr.top = jsonObj{}
	jr.inner = jsonObj{}
	if !s.object(&jr.top, &jr.inner) {
		return lineSkip, false, SkipMalformed
	}
	s.ws()
	if s.i != len(line) {
		return lineSkip, false, SkipMalformed
	}
	top := &jr.top
	if top.recs != nil {
		// An Event Hub message: {"records": [...]}. Its records are read
		// next, the first counting the message's lines.
		recs := splitArray(top.recs)
		if len(recs) == 0 {
			return lineSkip, false, SkipBlank
		}
		q := make([]jsonRec, len(recs), len(recs)+len(jr.queue))
		for i, r := range recs {
			q[i] = jsonRec{b: r, line: rec.line, st: frameRecord}
		}
		q[0].lines = rec.lines
		jr.queue = append(q, jr.queue...)
		return lineQueued, false, ""
	}
	if (top.azure || jr.inner.azure) && !jr.azureDone {
		// The first Azure record: infer the server's prefix from the
		// messages of the first records, then read them.
		jr.inferAzurePrefix(rec)
		return lineQueued, false, ""
	}
	switch {
	case top.nested:
		// CNPG "record":{...} or a Cloud Logging "jsonPayload":{...}
		o := &jr.inner
		if !o.v[jSeverity].set {
			return lineSkip, false, SkipUnsupportedLine
		}
		if !o.v[jTime].set {
			// CNPG always writes log_time; a jsonPayload may rely on the
			// envelope's "timestamp" (RFC 3339) or "ts" (epoch).
			o.v[jTime] = top.v[jTime]
			if !o.v[jTime].set {
				o.v[jTime] = top.v[jTS]
			}
		}
		if !o.v[jTime].set {
			o.v[jTime] = top.v[jLogTime]
		}
		if o.azure || top.azure {
			return jr.azureRecord(o, cur)
		}
		if !jr.fill(cur, o) {
			return lineSkip, false, SkipMalformed
		}
		return lineEntry, false, ""
	case top.v[jTextPayload].set:
		jr.cloudLogging = true
		return jr.textPayload(top, cur)
	case top.v[jSeverity].set && top.azure:
		// Log Analytics: Azure's record, flat.
		if !top.v[jTime].set {
			top.v[jTime] = top.v[jLogTime]
		}
		return jr.azureRecord(top, cur)
	case top.v[jSeverity].set:
		// PostgreSQL jsonlog: always has error_severity.
		if !jr.fill(cur, top) {
			return lineSkip, false, SkipMalformed
		}
		if !top.v[jSQLState].set {
			// jsonlog leaves state_code out when the error code is 0,
			// which is 00000 (successful completion), as csvlog and %e
			// write it.
			cur.sqlstate = "00000"
		}
		return lineEntry, false, ""
	}
	// {"level":"info","ts":1669575244.91,"logger":"wal-archive","msg":"Backup not configured, ..."}:
	// the CNPG operator's own messages, and its copies of stderr lines
	// written before the logging collector started:
	// {"level":"info","ts":...,"logger":"postgres","msg":"2022-11-27 18:48:18.943 UTC [28] LOG:  ending log output to stderr",...}
	return lineSkip, false, SkipUnsupportedLine
}

// str decodes a string value into a new string.
func (jr *jsonReader) str(v jval) (string, bool) {
	if !v.set || len(v.b) == 0 {
		return "", true
	}
	if !v.esc {
		return string(v.b), true
	}
	var ok bool
	jr.scratch, ok = appendUnescaped(jr.scratch[:0], v.b)
	return string(jr.scratch), ok
}

// bytesOf returns a value's bytes, decoded into scratch when escaped; the
// result is only valid until the next call.
func (jr *jsonReader) bytesOf(v jval) ([]byte, bool) {
	if !v.esc {
		return v.b, true
	}
	var ok bool
	jr.scratch, ok = appendUnescaped(jr.scratch[:0], v.b)
	return jr.scratch, ok
}

// fill makes an entry from the values of a jsonlog object or a CNPG
// record. It reports false when a value is not of its type: a time that
// does not parse, a pid that is not a number, a broken escape.
func (jr *jsonReader) fill(e *entry, o *jsonObj) bool {
	var t int64
	if v := o.v[jTime]; v.set {
		b, ok := jr.bytesOf(v)
		if !ok {
			return false
		}
		if t, ok = jr.times.parse(b); !ok {
			return false
		}
	}
	pid, ok := parsePID(o.v[jPID].b)
	if !ok {
		return false
	}
	*e = entry{time: t, pid: pid}
	var b []byte
	if b, ok = jr.bytesOf(o.v[jSession]); !ok {
		return false
	}
	e.session = jr.sessions.get(b)
	for _, f := range [...]struct {
		slot int
		dst  *string
	}{{jUser, &e.user}, {jDatabase, &e.database}, {jApplication, &e.application}, {jSeverity, &e.severity}, {jSQLState, &e.sqlstate}} {
		if b, ok = jr.bytesOf(o.v[f.slot]); !ok {
			return false
		}
		*f.dst = jr.intern.get(b)
	}
	for _, f := range [...]struct {
		slot int
		dst  *string
	}{{jMessage, &e.message}, {jDetail, &e.detail}, {jContext, &e.context}, {jStatement, &e.statement}} {
		if *f.dst, ok = jr.str(o.v[f.slot]); !ok {
			return false
		}
	}
	return true
}

// textPayload maps a Cloud SQL stderr line. Cloud SQL's log_line_prefix is
// fixed, "[%p]: [%l-1] db=%d,user=%u ", so a small parser suffices:
//
//	[24667]: [2-1] db=test,user=admin LOG:  connection authorized: user=admin database=test
//	[202]: [5-1] db=test,user=admin STATEMENT:  SELECT 1/0
//	\tpages: 0 removed, 1 remain, 0 skipped due to pins, 0 skipped frozen
//
// The last is a continuation line of the entry before it: PostgreSQL
// writes tab-indented lines for the newlines in a message, and Cloud
// Logging makes each its own object.
func (jr *jsonReader) textPayload(top *jsonObj, cur *entry) (lineKind, bool, string) {
	text, ok := jr.bytesOf(top.v[jTextPayload])
	if !ok {
		return lineSkip, true, SkipMalformed
	}
	if len(text) > 0 && text[0] == '\t' {
		if !jr.hasPending || !jr.pendText {
			return lineSkip, true, SkipOrphanLine
		}
		jr.appendPending(text[1:])
		return lineMerged, true, ""
	}
	p, ok := parseCloudSQLText(text)
	if !ok {
		return lineSkip, true, SkipUnsupportedLine
	}
	if p.part > 1 {
		// "[24667]: [7-2] ...": the second part of a line split as by
		// syslog; join it to the entry it continues.
		if !jr.hasPending || !jr.pendText || jr.pending.pid != p.pid {
			return lineSkip, true, SkipOrphanLine
		}
		jr.appendPending(p.rest)
		return lineMerged, true, ""
	}
	field := secondaryField(p.severity)
	if field >= 0 {
		// DETAIL:, HINT:, CONTEXT:, STATEMENT:, QUERY:, LOCATION: belong
		// to the entry the same process wrote just before.
		if !jr.hasPending || !jr.pendText || jr.pending.pid != p.pid {
			return lineSkip, true, SkipOrphanLine
		}
		jr.extend = field
		switch field {
		case extDetail:
			jr.pending.detail = string(p.msg)
		case extContext:
			jr.pending.context = string(p.msg)
		case extStatement:
			jr.pending.statement = string(p.msg)
		}
		return lineMerged, true, ""
	}
	var t int64
	if v := top.v[jTime]; v.set {
		b, ok := jr.bytesOf(v)
		if !ok {
			return lineSkip, true, SkipMalformed
		}
		if t, ok = jr.times.parse(b); !ok {
			return lineSkip, true, SkipMalformed
		}
	}
	*cur = entry{
		time:     t,
		pid:      p.pid,
		user:     jr.intern.get(p.user),
		database: jr.intern.get(p.db),
		severity: jr.intern.get(p.severity),
		message:  string(p.msg),
	}
	return lineEntry, true, ""
}

// appendPending adds one continuation line to the field being extended.
func (jr *jsonReader) appendPending(b []byte) {
	var dst *string
	switch jr.extend {
	case extMessage:
		dst = &jr.pending.message
	case extDetail:
		dst = &jr.pending.detail
	case extContext:
		dst = &jr.pending.context
	case extStatement:
		dst = &jr.pending.statement
	default:
		return
	}
	*dst = *dst + "\n" + string(b)
}

func secondaryField(sev []byte) int {
	switch string(sev) {
	case "DETAIL":
		return extDetail
	case "CONTEXT":
		return extContext
	case "STATEMENT":
		return extStatement
	case "HINT", "QUERY", "LOCATION":
		return extNone
	}
	return -1
}

type cloudSQLText struct {
	pid           int32
	part          int
	db, user      []byte
	severity, msg []byte
	rest          []byte // text after the prefix, for split parts
}

// parseCloudSQLText splits "[%p]: [%l-%n] db=%d,user=%u SEVERITY:  msg".
func parseCloudSQLText(b []byte) (p cloudSQLText, ok bool) {
	// [24667]:
	if len(b) < 2 || b[0] != '[' {
		return p, false
	}
	k := bytes.IndexByte(b, ']')
	if k < 0 {
		return p, false
	}
	if p.pid, ok = parsePID(b[1:k]); !ok || k == 1 {
		return p, false
	}
	b = b[k+1:]
	if !bytes.HasPrefix(b, []byte(": [")) {
		return p, false
	}
	b = b[3:]
	// [2-1]: session line number, then the part of a split line.
	k = bytes.IndexByte(b, ']')
	if k < 0 {
		return p, false
	}
	dash := bytes.IndexByte(b[:k], '-')
	if dash < 0 {
		return p, false
	}
	part, ok := parsePID(b[dash+1 : k])
	if !ok {
		return p, false
	}
	p.part = int(part)
	b = b[k+1:]
	if len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	p.rest = b
	if p.part > 1 {
		return p, true
	}
	// db=test,user=admin
	if bytes.HasPrefix(b, []byte("db=")) {
		k = bytes.Index(b, []byte(",user="))
		if k < 0 {
			return p, false
		}
		p.db = b[3:k]
		b = b[k+6:]
		sp := bytes.IndexByte(b, ' ')
		if sp < 0 {
			return p, false
		}
		p.user = b[:sp]
		b = b[sp+1:]
	}
	// LOG:  message
	k = bytes.Index(b, []byte(":  "))
	if k <= 0 {
		return p, false
	}
	for _, c := range b[:k] {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return p, false
		}
	}
	p.severity = b[:k]
	p.msg = b[k+3:]
	return p, true
}

// describe names what the reader found, for messages.
func (jr *jsonReader) describe() string {
	d := "jsonlog"
	switch {
	case jr.azureDone:
		d += " (Azure diagnostic logs)"
	case jr.cloudLogging:
		d += " (Google Cloud Logging)"
	}
	if jr.array {
		d += ", a JSON array read whole"
	}
	return d
}

// splitArray returns the elements of a JSON array, as they are written.
func splitArray(b []byte) [][]byte {
	s := jsonScanner{b: b}
	s.ws()
	if s.peek() != '[' {
		return nil
	}
	s.i++
	var out [][]byte
	for {
		s.ws()
		if c := s.peek(); c == ']' || c == 0 {
			return out
		}
		start := s.i
		if !s.skip() {
			return out
		}
		out = append(out, b[start:s.i])
		s.ws()
		if s.peek() == ',' {
			s.i++
		}
	}
}

// azureLookahead is how many records the server's prefix inside Azure's
// messages is inferred from.
const azureLookahead = 500

// inferAzurePrefix reads ahead the first records from rec on, infers the
// server's log_line_prefix from their messages, and queues them to be
// read. Without a prefix to be found, messages are taken as they are.
func (jr *jsonReader) inferAzurePrefix(rec jsonRec) {
	jr.azureDone = true
	keep := func(r jsonRec) jsonRec {
		r.b = bytes.Clone(r.b)
		return r
	}
	recs := []jsonRec{keep(rec)}
	for len(recs) < azureLookahead {
		r := jr.nextRecord()
		if r.st == frameEOF {
			// Nothing more to read; the EOF is seen again after the queue.
			break
		}
		recs = append(recs, keep(r))
	}
	var lines [][]byte
	var add func(b []byte)
	add = func(b []byte) {
		s := jsonScanner{b: b}
		var top, inner jsonObj
		if !s.object(&top, &inner) {
			return
		}
		if top.recs != nil {
			for _, r := range splitArray(top.recs) {
				add(r)
			}
			return
		}
		o := &top
		if top.nested {
			o = &inner
		}
		if l := jr.azureLine(o); len(l) > 0 {
			lines = append(lines, bytes.Clone(l))
		}
	}
	for _, r := range recs {
		add(r.b)
	}
	if inf, err := prefix.Infer(lines); err == nil && inf.Prefix != "" {
		jr.azPrefix, _ = prefix.Compile(inf.Prefix)
	}
	jr.queue = append(recs, jr.queue...)
}

// azureLine is the stderr line an Azure record stands for: its message,
// when the message starts with the server's prefix (Flexible Server), or
// the prefix property, the severity and the message (Single Server).
func (jr *jsonReader) azureLine(o *jsonObj) []byte {
	sev, ok := jr.bytesOf(o.v[jSeverity])
	if !ok || len(sev) == 0 {
		return nil
	}
	sev = bytes.Clone(sev)
	msg, ok := jr.bytesOf(o.v[jMessage])
	if !ok {
		return nil
	}
	jr.azLine = jr.azLine[:0]
	if o.v[jPrefix].set {
		p, ok := jr.bytesOf(o.v[jPrefix])
		if !ok {
			return nil
		}
		jr.azLine = append(jr.azLine, p...)
		jr.azLine = append(jr.azLine, sev...)
		jr.azLine = append(jr.azLine, ":  "...)
		msg, _ = jr.bytesOf(o.v[jMessage])
		return append(jr.azLine, msg...)
	}
	if i := prefix.SeverityIndex(msg); i >= 0 && bytes.HasPrefix(msg[i:], sev) {
		return append(jr.azLine, msg...)
	}
	jr.azLine = append(jr.azLine, sev...)
	jr.azLine = append(jr.azLine, ":  "...)
	msg, _ = jr.bytesOf(o.v[jMessage])
	return append(jr.azLine, msg...)
}

// azureRecord makes an entry of an Azure record: its properties, and what
// the server's prefix says in its line (user, database, application,
// session). A DETAIL, STATEMENT, ... record belongs to the entry before it
// from the same process.
func (jr *jsonReader) azureRecord(o *jsonObj, cur *entry) (lineKind, bool, string) {
	if !jr.fill(cur, o) {
		return lineSkip, true, SkipMalformed
	}
	line := jr.azureLine(o)
	if len(line) > 0 {
		rest := line
		if jr.azPrefix != nil {
			if r, ok := jr.azPrefix.Match(line, &jr.fields); ok {
				f := &jr.fields
				rest = r
				if cur.user == "" {
					cur.user = jr.intern.get(f.User)
				}
				if cur.database == "" {
					cur.database = jr.intern.get(f.Database)
				}
				if cur.application == "" {
					cur.application = jr.intern.get(f.Application)
				}
				if cur.session == "" {
					cur.session = jr.sessions.get(f.Session)
				}
				if cur.pid == 0 {
					cur.pid = pidOf(f.PID, f.Session)
				}
				if cur.sqlstate == "" {
					cur.sqlstate = jr.intern.get(f.SQLState)
				}
				if cur.time == 0 && len(f.Time) > 0 {
					cur.time, _ = jr.times.parse(f.Time)
				}
			}
		}
		if i := prefix.SeverityIndex(rest); i >= 0 {
			if _, msg, ok := prefix.SplitSeverity(rest[i:]); ok {
				cur.message = string(msg)
			}
		}
	}
	if field := secondaryField([]byte(cur.severity)); field >= 0 {
		if !jr.hasPending || !jr.pendText || jr.pending.pid != cur.pid {
			return lineSkip, true, SkipOrphanLine
		}
		jr.extend = field
		switch field {
		case extDetail:
			jr.pending.detail = cur.message
		case extContext:
			jr.pending.context = cur.message
		case extStatement:
			jr.pending.statement = cur.message
		}
		return lineMerged, true, ""
	}
	return lineEntry, true, ""
}
