package logread

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// The JSON reader frames and scans the JSON shapes a log comes in, all
// one object per line unless noted:
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
// Both carry an entry whole, which the reader returns itself. Two more
// shapes carry the server's stderr lines, one a record, which the stderr
// reader reads as it reads syslog, through an envelope: Google Cloud
// Logging's exports of Cloud SQL (a "textPayload", see cloudsql.go) and
// Azure's diagnostic logs (a "properties" object, see azure.go). Which
// one a log is, the first records tell (sniff).
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
	jBackendType        // "backend_type"
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
	case "backend_type":
		return jBackendType
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

	kind  jsonKind // what the records carry, from the first ones (sniff)
	array bool     // the log is one JSON array
	// foreign and known count the first records (sniff) that are JSON
	// objects of no known kind and of one: with foreign ones and no
	// known one, the file is JSON but no PostgreSQL log.
	foreign, known int

	started bool      // the first value was looked at
	midLine bool      // stream framing stopped in the middle of a line
	stream  bool      // values are not one a line: read value by value
	queue   []jsonRec // records to read before the next value of the file

	// inPrefix is the server's log_line_prefix inside the records of an
	// envelope (Cloud Logging's text payloads, Azure's messages),
	// inferred from the first of them; nil when none was found.
	inPrefix *prefix.Prefix
	azLine   []byte // the line of an Azure record (azureLine)
}

// jsonKind is what the records of a JSON log carry.
type jsonKind uint8

const (
	jsonEntries      jsonKind = iota // an entry each: jsonlog, CNPG, Cloud Logging's jsonPayload
	jsonCloudLogging                 // a stderr line each, as Cloud Logging exports Cloud SQL's log
	jsonAzure                        // a stderr line each, with fields of its own: Azure's diagnostic records
)

// jsonRec is one JSON value of the log, with the physical lines it
// accounts for: its own and the separators before it.
type jsonRec struct {
	b     []byte
	line  int64 // physical line it starts on
	lines int64
	st    frameStatus
}

// newJSONReader returns the reader of a JSON log's records. It reads the
// entries of jsonlog and CNPG itself (next); the lines of Cloud Logging's
// and Azure's records go through an envelope (see newJSONFormat).
func newJSONReader(r io.Reader, c *Counters) *jsonReader {
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
		if !cb.fillOn(&scan, &discard) {
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

// recKind says what one record turned out to be.
type recKind uint8

const (
	recEntry  recKind = iota // an entry of its own (jsonlog, CNPG)
	recCloud                 // a Cloud Logging entry with a text payload
	recAzure                 // an Azure diagnostic record
	recSkip                  // counted as skipped with the reason returned
	recQueued                // a wrapper whose records were queued
)

// next implements formatReader, for the logs whose records are entries.
func (jr *jsonReader) next() (*entry, error) {
	err := jr.read(&jr.e)
	return &jr.e, err
}

// read fills e with the next entry.
func (jr *jsonReader) read(e *entry) error {
	for {
		rec := jr.nextRecord()
		if rec.st == frameEOF {
			if jr.cb.err != nil {
				return jr.cb.err
			}
			return io.EOF
		}
		kind, o := jr.record(rec, jsonEntries)
		if kind != recEntry {
			continue
		}
		if !jr.fill(e, o) {
			jr.skip(rec, SkipMalformed)
			continue
		}
		if o == &jr.top && !o.v[jSQLState].set {
			// jsonlog leaves state_code out when the error code is 0,
			// which is 00000 (successful completion), as csvlog and %e
			// write it.
			e.sqlstate = "00000"
		}
		e.line = rec.line
		e.lines = rec.lines
		return nil
	}
}

// record frames and scans one record, and tells what it is. A record of
// another kind than want, and one that is not a record of any kind, is
// counted as skipped; so is one too long to hold. An Event Hub message is
// queued record by record. For an entry or an envelope's record, o holds
// its values.
func (jr *jsonReader) record(rec jsonRec, want jsonKind) (recKind, *jsonObj) {
	if rec.st == frameTooLong {
		jr.c.skipSample(SkipMalformed, rec.lines, rec.line, nil)
		return recSkip, nil
	}
	kind, o, reason := jr.parseRecord(rec)
	switch {
	case kind == recSkip:
	case kind == recQueued:
		return kind, nil
	case kind == recEntry && want == jsonEntries, kind == recCloud && want == jsonCloudLogging, kind == recAzure && want == jsonAzure:
		return kind, o
	default:
		// A record of another kind than the log's: its own lines do not
		// read as the others do.
		reason = SkipUnsupportedLine
	}
	jr.skip(rec, reason)
	return recSkip, nil
}

// skip counts a record as skipped for reason.
func (jr *jsonReader) skip(rec jsonRec, reason string) {
	if rec.st == frameLast && reason == SkipMalformed {
		// {"timestamp":"2026-11-22 08:11:02.123 UTC","pid":1<EOF>
		reason = SkipTruncated
	}
	if Unparseable(reason) {
		jr.c.skipSample(reason, rec.lines, rec.line, rec.b)
	} else {
		jr.c.skip(reason, rec.lines)
	}
}

// parseRecord scans one record and tells what it is.
func (jr *jsonReader) parseRecord(rec jsonRec) (kind recKind, o *jsonObj, reason string) {
	line := rec.b
	s := jsonScanner{b: line}
	s.ws()
	if s.i == len(line) {
		return recSkip, nil, SkipBlank
	}
	if s.peek() != '{' {
		// a stderr line or other text among JSON lines
		return recSkip, nil, SkipMalformed
	}
	jr.top = jsonObj{}
	jr.inner = jsonObj{}
	if !s.object(&jr.top, &jr.inner) {
		return recSkip, nil, SkipMalformed
	}
	s.ws()
	if s.i != len(line) {
		return recSkip, nil, SkipMalformed
	}
	top := &jr.top
	if top.recs != nil {
		// An Event Hub message: {"records": [...]}. Its records are read
		// next, the first counting the message's lines.
		recs := splitArray(top.recs)
		if len(recs) == 0 {
			return recSkip, nil, SkipBlank
		}
		q := make([]jsonRec, len(recs), len(recs)+len(jr.queue))
		for i, r := range recs {
			q[i] = jsonRec{b: r, line: rec.line, st: frameRecord}
		}
		q[0].lines = rec.lines
		jr.queue = append(q, jr.queue...)
		return recQueued, nil, ""
	}
	switch {
	case top.nested:
		// CNPG "record":{...}, a Cloud Logging "jsonPayload":{...} or
		// Azure's "properties":{...}
		o := &jr.inner
		if !o.v[jSeverity].set {
			return recSkip, nil, SkipUnsupportedLine
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
			return recAzure, o, ""
		}
		return recEntry, o, ""
	case top.v[jTextPayload].set:
		return recCloud, top, ""
	case top.v[jSeverity].set && top.azure:
		// Log Analytics: Azure's record, flat.
		if !top.v[jTime].set {
			top.v[jTime] = top.v[jLogTime]
		}
		return recAzure, top, ""
	case top.v[jSeverity].set:
		// PostgreSQL jsonlog: always has error_severity.
		return recEntry, top, ""
	}
	// {"level":"info","ts":1669575244.91,"logger":"wal-archive","msg":"Backup not configured, ..."}:
	// the CNPG operator's own messages, and its copies of stderr lines
	// written before the logging collector started:
	// {"level":"info","ts":...,"logger":"postgres","msg":"2022-11-27 18:48:18.943 UTC [28] LOG:  ending log output to stderr",...}
	return recSkip, nil, SkipUnsupportedLine
}

// newJSONFormat decides how the records of jr are read (see sniff), and
// returns the reader of their entries: jr itself, or a stderr reader
// reading the lines of the records through their envelope (st).
func newJSONFormat(jr *jsonReader, c *Counters) (fr formatReader, st *stderrReader, err error) {
	jr.sniff()
	if jr.known == 0 && jr.foreign > 0 {
		return nil, nil, fmt.Errorf("%w: it looks like JSON, but none of its first %d records is a PostgreSQL log record "+
			"(jsonlog's error_severity, Cloud Logging's textPayload, Azure's properties)", ErrNotALog, jr.foreign)
	}
	switch jr.kind {
	case jsonCloudLogging:
		e := &cloudEnvelope{jr: jr, withTime: !jr.inPrefix.HasTime()}
		p := jr.inPrefix
		if e.withTime {
			if p, err = prefix.Compile("%m " + jr.inPrefix.String()); err != nil {
				return nil, nil, err
			}
		}
		st = newStderrReader(eofReader{}, p, c)
		st.src = e
	case jsonAzure:
		// The envelope reads the prefix: the lines start at the severity.
		p, _ := prefix.Compile("")
		st = newStderrReader(eofReader{}, p, c)
		st.src = &azureEnvelope{jr: jr}
		st.noPID = false // the records have their process
	default:
		return jr, nil, nil
	}
	return st, st, nil
}

// sniffRecords is how many records sniff reads ahead: what the log's
// records carry, and the server's prefix inside an envelope, are decided
// from them.
const sniffRecords = 500

// sniff reads ahead the first records, decides what the log's records
// carry (the kind most of them have) and, for an envelope, infers the
// server's prefix inside from them; the records are read again after.
func (jr *jsonReader) sniff() {
	var recs []jsonRec
	for len(recs) < sniffRecords {
		r := jr.nextRecord()
		if r.st == frameEOF {
			// Nothing more to read; the EOF is seen again after the queue.
			break
		}
		r.b = bytes.Clone(r.b)
		recs = append(recs, r)
	}
	var count [3]int
	first := [3]int{-1, -1, -1}
	var cloud, azure [][]byte
	n := 0
	var look func(b []byte)
	look = func(b []byte) {
		s := jsonScanner{b: b}
		jr.top, jr.inner = jsonObj{}, jsonObj{}
		if !s.object(&jr.top, &jr.inner) {
			return
		}
		if jr.top.recs != nil {
			for _, r := range splitArray(jr.top.recs) {
				look(r)
			}
			return
		}
		kind, o, reason := jr.parseRecord(jsonRec{b: b})
		var k jsonKind
		switch kind {
		case recSkip:
			switch {
			case reason != SkipUnsupportedLine:
			case bytes.Contains(b, []byte(`"logger"`)):
				// The CNPG operator's own messages: a log of
				// CloudNativePG's, whose server records may come later.
				jr.known++
			default:
				jr.foreign++
			}
			return
		case recEntry:
			k = jsonEntries
		case recCloud:
			k = jsonCloudLogging
			if t, ok := jr.bytesOf(o.v[jTextPayload]); ok && len(t) > 0 && t[0] != '\t' {
				cloud = append(cloud, bytes.Clone(t))
			}
		case recAzure:
			k = jsonAzure
			if l := jr.azureLine(o); len(l) > 0 {
				azure = append(azure, bytes.Clone(l))
			}
		default:
			return
		}
		jr.known++
		if count[k]++; first[k] < 0 {
			first[k] = n
		}
		n++
	}
	for _, r := range recs {
		look(r.b)
	}
	jr.queue = append(recs, jr.queue...)
	for k := range count {
		if count[k] > count[jr.kind] || count[k] == count[jr.kind] && count[k] > 0 && first[k] < first[jr.kind] {
			jr.kind = jsonKind(k)
		}
	}
	switch jr.kind {
	case jsonCloudLogging:
		jr.inPrefix = cloudSQLPrefix(cloud)
	case jsonAzure:
		if inf, err := prefix.Infer(azure); err == nil && inf.Prefix != "" {
			jr.inPrefix, _ = prefix.Compile(inf.Prefix)
		}
	}
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
	// (Its leader_pid is set only when this is.)
	e.worker = string(o.v[jBackendType].b) == "parallel worker"
	return true
}

// describe names what the reader found, for messages.
func (jr *jsonReader) describe() string {
	d := "jsonlog"
	switch jr.kind {
	case jsonAzure:
		d += " (Azure diagnostic logs)"
	case jsonCloudLogging:
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
