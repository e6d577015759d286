package logread

import (
	"bytes"
	"fmt"
	"io"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// csvlog columns by position. PostgreSQL only ever appended columns:
// 8.4 wrote 22 (through location), 9.0 added application_name, 13
// backend_type, 14 leader_pid and query_id. Reading by position lets one
// reader take every version, and ignore columns a later version may add.
const (
	csvLogTime     = 0
	csvUser        = 1
	csvDatabase    = 2
	csvPID         = 3
	csvSession     = 5
	csvSeverity    = 11
	csvSQLState    = 12
	csvMessage     = 13
	csvDetail      = 14
	csvContext     = 18
	csvQuery       = 19
	csvApplication = 22
	csvBackendType = 23 // 13 and later

	csvMinColumns = 22 // PostgreSQL 8.4
	// csvMaxColumns is how many columns are kept; more are accepted and
	// ignored, so a future version with extra columns still reads.
	csvMaxColumns = 32
)

// Buffer sizes are variables only so that tests can shrink them.
var (
	// readBufSize is the initial read buffer: large reads keep syscalls
	// and decompressor calls rare.
	readBufSize = 1 << 20
	// maxRecordSize bounds memory whatever the input: a record (or json
	// line) longer than this is skipped as malformed instead of held.
	maxRecordSize = 64 << 20
)

// maxInterned bounds the intern table; a log with more distinct users,
// databases or applications than this simply starts over.
const maxInterned = 4096

// chunkBuf is a growable window over a reader: data not yet consumed is
// buf[start:end]. It grows only when one record does not fit, up to
// maxRecordSize plus one read.
type chunkBuf struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
	err        error // first non-EOF read error
}

func newChunkBuf(r io.Reader) chunkBuf {
	return chunkBuf{r: r, buf: make([]byte, readBufSize)}
}

// fillOn is fill in the middle of a record whose scan bytes are
// buffered without its end: past maxRecordSize the record is discarded
// (discard set), and its bytes scanned so far dropped before the read.
func (cb *chunkBuf) fillOn(scan *int, discard *bool) bool {
	if *scan > maxRecordSize {
		*discard = true
	}
	if *discard {
		cb.start += *scan
		*scan = 0
	}
	return cb.fill()
}

// fill reads more data after end, first moving unconsumed data to the
// front and growing the buffer when it is full. It reports whether any
// data was added; false means EOF or a read error.
func (cb *chunkBuf) fill() bool {
	if cb.eof {
		return false
	}
	if cb.start > 0 {
		cb.end = copy(cb.buf, cb.buf[cb.start:cb.end])
		cb.start = 0
	}
	if cb.end == len(cb.buf) {
		nb := make([]byte, 2*len(cb.buf))
		copy(nb, cb.buf[:cb.end])
		cb.buf = nb
	}
	// A reader may return 0, nil; retry a bounded number of times as
	// bufio does, then treat it as the end.
	for range 100 {
		n, err := cb.r.Read(cb.buf[cb.end:])
		cb.end += n
		if err != nil {
			cb.eof = true
			if err != io.EOF {
				cb.err = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	cb.eof = true
	cb.err = io.ErrNoProgress
	return false
}

// interner shares the few distinct user, database, application, severity
// and SQLSTATE strings among entries. Looking up m[string(b)] does not
// allocate; only a new value does.
type interner map[string]string

func (in *interner) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := (*in)[string(b)]; ok {
		return s
	}
	if len(*in) >= maxInterned {
		*in = make(interner)
	}
	s := string(b)
	(*in)[s] = s
	return s
}

// csvField is one field of a record: its bytes without the enclosing
// quotes, and whether it holds doubled quotes to undo.
type csvField struct {
	b   []byte
	esc bool
}

type csvReader struct {
	cb chunkBuf
	// warnings is where the reader says what it set aside (broken);
	// nil: nowhere (tests).
	warnings *[]string
	nbroken  int
	e        entry // the entry next returns
	c        *Counters
	line     int64 // physical lines consumed before the current record
	times    logTimeParser
	intern   interner
	last     [6]string // previous session, user, database, application, severity, SQLSTATE
	fields   []csvField
	unq      []byte // scratch for undoing doubled quotes
}

// newCSVReader returns a formatReader for PostgreSQL csvlog (RFC 4180:
// fields quoted with ", quotes doubled, embedded newlines inside quotes).
func newCSVReader(r io.Reader, c *Counters) formatReader {
	return &csvReader{
		cb:     newChunkBuf(r),
		c:      c,
		intern: make(interner),
		fields: make([]csvField, 0, csvMaxColumns),
	}
}

// frameStatus says how a framing attempt ended.
type frameStatus uint8

const (
	frameRecord    frameStatus = iota // a complete record
	frameLast                         // the last record, without its newline
	frameTooLong                      // a record over maxRecordSize, skipped
	frameTruncated                    // an unterminated record at EOF
	frameBroken                       // a record cut inside a quoted field, up to the next record
	frameEOF                          // nothing left
)

// frame finds the next record: bytes up to a newline that is outside
// quotes. Quote state is the parity of '"' seen so far, since doubled
// quotes toggle twice; bytes.IndexByte and bytes.Count do the scanning so
// a record costs two vectorized passes. It returns the record without its
// final newline (or CR LF) and the physical lines it spans.
func (cr *csvReader) frame() ([]byte, int64, frameStatus) {
	cb := &cr.cb
	var (
		scan    int // offset from cb.start of the first unscanned byte
		odd     bool
		lines   int64
		partial bool // bytes after the last newline
		discard bool // record too long: keep counting, drop the bytes
	)
	atLine := false // at the start of a line inside a quoted field
	for {
		data := cb.buf[cb.start+scan : cb.end]
		nl := bytes.IndexByte(data, '\n')
		if atLine {
			// Inside a quoted field: "a\nb", or a record cut in the
			// middle of one (its writer was killed, a copy was cut
			// short), which a record starting on this line tells.
			if nl < 0 && len(data) < 256 && !cb.eof && cb.fill() {
				continue // the start of the line first
			}
			line := data
			if nl >= 0 {
				line = data[:nl]
			}
			if startsCSVRecord(line) && !quotedText(line) {
				rec := cb.buf[cb.start : cb.start+scan]
				cb.start += scan
				if discard {
					return nil, lines, frameTooLong
				}
				return rec, lines, frameBroken
			}
			atLine = false
		}
		if nl >= 0 {
			if bytes.Count(data[:nl], quote)&1 == 1 {
				odd = !odd
			}
			lines++
			partial = false
			scan += nl + 1
			if odd {
				atLine = true
				continue // newline inside a quoted field
			}
			rec := cb.buf[cb.start : cb.start+scan-1]
			cb.start += scan
			if discard {
				return nil, lines, frameTooLong
			}
			return trimCR(rec), lines, frameRecord
		}
		// No newline in what is buffered: count the quotes of the partial
		// line now so the scan resumes after it.
		if bytes.Count(data, quote)&1 == 1 {
			odd = !odd
		}
		if len(data) > 0 {
			partial = true
		}
		scan += len(data)
		if !cb.fillOn(&scan, &discard) {
			break
		}
	}
	// EOF. The bytes after the last newline are a last line without one.
	if partial {
		lines++
	}
	rec := cb.buf[cb.start : cb.start+scan]
	cb.start += scan
	switch {
	case lines == 0:
		return nil, 0, frameEOF
	case discard:
		return nil, lines, frameTooLong
	case odd:
		// "2026-11-22 08:11:02.123 UTC,...,"SELECT 1<EOF>: the writer
		// was cut in the middle of a quoted field.
		return nil, lines, frameTruncated
	}
	return trimCR(rec), lines, frameLast
}

var quote = []byte{'"'}

// startsCSVRecord reports whether line starts as a csvlog record does:
// a time, then a comma (or the time quoted, as some tools write it).
func startsCSVRecord(line []byte) bool {
	if len(line) > 0 && line[0] == '"' {
		line = line[1:]
	}
	_, rest, ok := prefix.TakeTimestamp(line)
	return ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '"')
}

// quotedText reports whether line can be the continuation of a quoted
// field: inside the quotes every quote is doubled, until one closes the
// field, followed by a comma (or the end of the record); after it, quotes
// open fields only. A line of a record of its own breaks that at once
// (2026-11-22 08:11:02.123 UTC,"app",...: a lone quote before "app"),
// while the text of a field never does, even text shaped like a record.
// Only what is buffered of a long line is looked at: false only when
// that proves it.
func quotedText(line []byte) bool {
	in := true
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c != '"':
		case in && i+1 < len(line) && line[i+1] == '"':
			i++ // a doubled quote
		case in && (i+1 == len(line) || line[i+1] == ',' || line[i+1] == '\r'):
			in = false // the field ends
		case in:
			return false // text after the closing quote
		case i == 0 || line[i-1] == ',':
			in = true // a field opens
		default:
			return false // a quote inside an unquoted field
		}
	}
	return true
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// splitCSV splits one record into cr.fields. It reports false for a record
// that is not RFC 4180, such as text after a closing quote ("a"b,).
func (cr *csvReader) splitCSV(rec []byte) bool {
	cr.fields = cr.fields[:0]
	i := 0
	for {
		var f csvField
		if i < len(rec) && rec[i] == '"' {
			// "quoted, with ""doubled"" quotes and
			// newlines"
			j := i + 1
			for {
				k := bytes.IndexByte(rec[j:], '"')
				if k < 0 {
					return false // cannot happen after frame, but never trust
				}
				j += k
				if j+1 < len(rec) && rec[j+1] == '"' {
					f.esc = true
					j += 2
					continue
				}
				break
			}
			f.b = rec[i+1 : j]
			i = j + 1
			if i < len(rec) && rec[i] != ',' {
				return false
			}
		} else {
			// unquoted: 1486 or an empty field between ",,". These are
			// short (numbers, times, ids): a plain loop beats the call
			// overhead of IndexByte.
			k := i
			for k < len(rec) && rec[k] != ',' {
				k++
			}
			f.b = rec[i:k]
			i = k
		}
		if len(cr.fields) < csvMaxColumns {
			cr.fields = append(cr.fields, f)
		}
		if i >= len(rec) {
			return true
		}
		i++ // the comma; a trailing one leaves an empty last field
		if i == len(rec) {
			if len(cr.fields) < csvMaxColumns {
				cr.fields = append(cr.fields, csvField{})
			}
			return true
		}
	}
}

// str returns field i as a new string, undoing doubled quotes.
func (cr *csvReader) str(i int) string {
	if i >= len(cr.fields) {
		return ""
	}
	f := cr.fields[i]
	if len(f.b) == 0 {
		return ""
	}
	if !f.esc {
		return string(f.b)
	}
	cr.unq = cr.unq[:0]
	b := f.b
	for {
		k := bytes.Index(b, []byte(`""`))
		if k < 0 {
			cr.unq = append(cr.unq, b...)
			break
		}
		cr.unq = append(cr.unq, b[:k+1]...)
		b = b[k+2:]
	}
	return string(cr.unq)
}

// interned returns field i through the intern table. Consecutive records
// mostly repeat a field, so the previous value for the same column is
// tried before the map. Fields kept this way (names, severity, SQLSTATE)
// never hold quotes in practice; a name that does is unquoted first.
func (cr *csvReader) interned(i int, last *string) string {
	if i >= len(cr.fields) {
		return ""
	}
	f := cr.fields[i]
	if !f.esc && string(f.b) == *last {
		return *last
	}
	if f.esc {
		*last = cr.intern.get([]byte(cr.str(i)))
	} else {
		*last = cr.intern.get(f.b)
	}
	return *last
}

// next implements formatReader.
func (cr *csvReader) next() (*entry, error) {
	err := cr.read(&cr.e)
	return &cr.e, err
}

// read fills e with the next entry.
func (cr *csvReader) read(e *entry) error {
	for {
		rec, lines, st := cr.frame()
		first := cr.line + 1
		cr.line += lines
		switch st {
		case frameEOF:
			if cr.cb.err != nil {
				return cr.cb.err
			}
			return io.EOF
		case frameTooLong:
			cr.c.skipSample(SkipMalformed, lines, first, nil)
			continue
		case frameTruncated:
			cr.c.skip(SkipTruncated, lines)
			continue
		case frameBroken:
			cr.c.skipSample(SkipMalformed, lines, first, rec)
			cr.broken(first, lines)
			continue
		}
		if len(rec) == 0 {
			// An empty line: csvlog never writes one, but files that were
			// concatenated or edited by hand have them.
			cr.c.skip(SkipBlank, lines)
			continue
		}
		if !cr.fill(e, rec) {
			if st == frameLast {
				// The last record, without its newline, does not parse:
				// the writer was most likely cut mid-record, as in
				// 2026-11-22 08:11:02.123 UTC,"app",<EOF>
				cr.c.skip(SkipTruncated, lines)
			} else {
				cr.c.skipSample(SkipMalformed, lines, first, rec)
			}
			continue
		}
		e.line = first
		e.lines = lines
		return nil
	}
}

// fill turns a framed record into e. It reports false for records that
// are not csvlog: too few columns, or a log_time or process_id that does
// not parse ("hello world", a stderr line in a csv file).
func (cr *csvReader) fill(e *entry, rec []byte) bool {
	if !cr.splitCSV(rec) || len(cr.fields) < csvMinColumns {
		return false
	}
	f := cr.fields
	t, ok := cr.times.parse(f[csvLogTime].b)
	if !ok {
		return false
	}
	pid, ok := parsePID(f[csvPID].b)
	if !ok {
		return false
	}
	*e = entry{
		time:        t,
		pid:         pid,
		session:     cr.interned(csvSession, &cr.last[0]),
		user:        cr.interned(csvUser, &cr.last[1]),
		database:    cr.interned(csvDatabase, &cr.last[2]),
		application: cr.interned(csvApplication, &cr.last[3]),
		severity:    cr.interned(csvSeverity, &cr.last[4]),
		sqlstate:    cr.interned(csvSQLState, &cr.last[5]),
		message:     cr.str(csvMessage),
		detail:      cr.str(csvDetail),
		context:     cr.str(csvContext),
		statement:   cr.str(csvQuery),
	}
	// (Its leader_pid, column 24, is set only when this is.)
	e.worker = len(f) > csvBackendType && string(f[csvBackendType].b) == "parallel worker"
	return true
}

// maxBrokenWarnings bounds the warnings about broken records: the
// counters have them all.
const maxBrokenWarnings = 5

// broken says where a record cut inside a quoted field was, and where
// reading went on.
func (cr *csvReader) broken(first, lines int64) {
	cr.nbroken++
	if cr.warnings == nil || cr.nbroken > maxBrokenWarnings {
		return
	}
	w := fmt.Sprintf("line %d: a record is cut inside a quoted field (its writer stopped in the middle of it?): its %d lines are skipped as %q, and reading goes on at line %d, where the next record starts",
		first, lines, SkipMalformed, first+lines)
	if cr.nbroken == maxBrokenWarnings {
		w += " (no more is said of such records: the line counts have them all)"
	}
	*cr.warnings = append(*cr.warnings, w)
}

// parsePID reads a process id: "1486" in csvlog, 58151 or "600" in json.
// Empty is 0 (not logged).
func parsePID(b []byte) (int32, bool) {
	if len(b) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}
