package logread

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// Format names a log format.
type Format string

const (
	FormatAuto   Format = "auto"
	FormatStderr Format = "stderr"
	FormatCSV    Format = "csvlog"
	FormatJSON   Format = "jsonlog"
	// FormatSyslog is stderr lines as syslog daemons, journald and
	// Heroku's logplex write them, each behind a header of their own.
	FormatSyslog Format = "syslog"
)

// ParseFormat checks a format name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case "", FormatAuto:
		return FormatAuto, nil
	case FormatStderr, FormatCSV, FormatJSON, FormatSyslog:
		return f, nil
	}
	return "", fmt.Errorf("unknown log format %q: use auto, stderr, csvlog, jsonlog or syslog", s)
}

// Options configure a Reader.
type Options struct {
	// Format of the log; FormatAuto (or "") detects it from the content.
	Format Format
	// Prefix is the server's log_line_prefix, for stderr logs. Empty means
	// detect it from the first lines.
	Prefix string
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
	// TimeZone is the zone of times the log writes without one (syslog's
	// RFC 3164 times) or with an abbreviation that names no zone, or
	// several; nil means UTC, with a warning.
	TimeZone *time.Location
	// Year is the year of the first RFC 3164 syslog time, which has none;
	// 0 means the year the file was last written.
	Year int
}

// ErrNotEnglish is returned (wrapped) when the log's messages are in
// another language than English, which the reader cannot interpret.
var ErrNotEnglish = prefix.ErrNotEnglish

// ErrUnknownPrefix is returned (wrapped) when a stderr log's prefix could
// not be detected.
var ErrUnknownPrefix = prefix.ErrUnknownPrefix

// ErrAmbiguousPrefix is returned (wrapped) when more than one prefix fits
// the first lines of a stderr log and they read different fields.
var ErrAmbiguousPrefix = prefix.ErrAmbiguousPrefix

// Reader reads the events of one log file, streaming: memory does not grow
// with the file, and the file is read once, front to back.
type Reader struct {
	name     string
	format   Format
	prefix   string
	src      *source
	fr       formatReader
	stderr   *stderrReader // fr, when the log is stderr or in an envelope
	json     *jsonReader   // the reader of a JSON log's records
	interp   *interpreter
	counters *Counters
	next     int // index of the next event in interp.out
	err      error

	// left and right join this reader's part of a split log with its
	// neighbours; nil for a whole file. See OpenSplit.
	left, right *boundary

	layout   layout
	warnings []string
	// mapped is set when the stderr reader reads from a mapping of the
	// file (see fileMap): fill then turns a fault into an error.
	mapped bool

	// first and last are the earliest and latest time of the entries
	// read, in µs; 0 before any with a time.
	first, last int64
}

// Open opens a log file ("-" for standard input), decompressing gzip,
// zstd, bzip2 or xz, and detecting the format and prefix when opts leave
// them out.
func Open(path string, opts Options) (*Reader, error) {
	src, err := openSource(path, opts.Stdin)
	if err != nil {
		return nil, err
	}
	r, err := newReader(path, src, opts)
	if err != nil {
		src.close()
		return nil, err
	}
	return r, nil
}

// NewReader reads an uncompressed log from rd. name is used in messages.
func NewReader(rd io.Reader, name string, opts Options) (*Reader, error) {
	src := &source{r: rd, raw: &countingReader{r: rd}, size: -1}
	src.r = src.raw
	return newReader(name, src, opts)
}

// detectSize is how much of the log is looked at to detect its format.
const detectSize = 256 << 10

func newReader(name string, src *source, opts Options) (*Reader, error) {
	r := &Reader{name: name, src: src, counters: newCounters()}
	r.interp = newInterpreter(r.counters)
	br := bufio.NewReaderSize(src.r, detectSize)
	head, err := br.Peek(detectSize)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l, err := detectLayout(head, opts)
	if err != nil {
		if d := src.damaged(); d != nil && len(head) == 0 {
			return nil, fmt.Errorf("%s: %w", name, d)
		}
		if errors.Is(err, ErrNotALog) && src.codec != compressNone {
			// What the file holds was looked at decompressed.
			return nil, fmt.Errorf("%s: %w (inside its %s compression)", name, err, src.codec)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.layout, r.format = l, l.format
	r.interp.plansSeen = hasPlans(head)
	r.warnings = append(r.warnings, l.warnings...)
	zones := &zoneReading{loc: opts.TimeZone, warnings: &r.warnings}
	switch {
	case l.format == FormatCSV:
		cr := newCSVReader(br, r.counters).(*csvReader)
		cr.times.zones = zones
		cr.warnings = &r.warnings
		r.fr = cr
	case l.format == FormatJSON:
		jr := newJSONReader(br, r.counters)
		jr.times.zones = zones
		r.json = jr
		fr, st, err := newJSONFormat(jr, r.counters)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if st != nil {
			st.times.zones = zones
			r.stderr = st
		}
		r.fr = fr
	default:
		inner, err := prefix.Compile(l.prefix)
		if err != nil {
			return nil, err
		}
		p := inner
		if l.env != envNone {
			if p, err = prefix.Compile(envPrefix(l.withTime, l.withPID, l.prefix)); err != nil {
				return nil, err
			}
		}
		r.prefix = l.prefix
		r.stderr = newStderrReader(br, p, r.counters)
		r.stderr.times.zones = zones
		if l.env != envNone {
			clock := syslogClock{year: opts.Year, loc: opts.TimeZone}
			guessed := false
			if clock.year == 0 {
				clock.year, guessed = yearOf(src.modTime(), l.firstMon), true
			}
			if clock.loc == nil {
				clock.loc = time.UTC
			}
			er := newEnvReader(r.stderr.lines, l.env, l.ident, inner, l.withTime, l.withPID, clock, r.counters)
			er.origin = &r.interp.origin
			r.stderr.src = er
			r.warnings = append(r.warnings, envWarnings(l.env, clock.year, guessed, clock.loc, opts.TimeZone != nil, l.bsd)...)
		} else {
			// The stderr reader reads into its chunks again once no
			// entry refers to them; the interpreter copies what it keeps.
			r.stderr.lines.recycle = true
			r.interp.own = true
			r.mapFile()
		}
		r.fr = r.stderr
	}
	return r, nil
}

// mapFile makes the stderr reader read a plain file from a mapping of it
// into memory, when it can be mapped: see fileMap.
func (r *Reader) mapFile() {
	src := r.src
	if src.file == nil || src.compressed || src.size <= 0 || int64(int(src.size)) != src.size {
		return
	}
	m, off, err := mapRegion(src.file, src.off, src.size, poisonChunks)
	if err != nil {
		return // read as any other
	}
	lr := r.stderr.lines
	lr.mapped(m, off, poisonChunks, src.readTo)
	src.closer = append(src.closer, closerFunc(func() error { return unmapRegion(m) }))
	// After the mapping: what was written to the file since, or nothing
	// for a part of a split log.
	var rest io.Reader = eofReader{}
	if src.whole {
		rest = io.NewSectionReader(src.file, src.off+src.size, 1<<62)
	}
	lr.r = rest
	r.mapped = true
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// errShrank is the error of a mapped file that lost the part being read.
var errShrank = errors.New("the file shrank while it was read (truncated, or rotated in place with copytruncate?): read it again, or read a copy")

// Layout describes how the log is read: "stderr", "csvlog", "jsonlog",
// or "stderr lines in syslog" and the like.
func (r *Reader) Layout() string {
	if r.json != nil {
		return r.json.describe()
	}
	return r.layout.describe()
}

// Warnings returns what the reader assumed or set aside that the user
// should know: a prefix chosen among others that read alike, the year and
// zone given to syslog times, ... They grow as the log is read.
func (r *Reader) Warnings() []string { return r.warnings }

// Format returns the log format, as given or detected.
func (r *Reader) Format() Format { return r.format }

// Prefix returns the log_line_prefix used for a stderr log, or found in
// the lines of a JSON log's records (Cloud Logging's, Azure's).
func (r *Reader) Prefix() string {
	if r.json != nil && r.json.inPrefix != nil {
		return r.json.inPrefix.String()
	}
	return r.prefix
}

// Next returns the next event, or io.EOF after the last one. Events are
// returned in log order of the line that completed them; see event.Event
// for what Time means. The caller owns the event.
func (r *Reader) Next() (*event.Event, error) {
	for r.next >= len(r.interp.out) {
		if r.err != nil {
			return nil, r.err
		}
		r.interp.out = r.interp.out[:0]
		r.next = 0
		r.fill()
	}
	ev := r.interp.out[r.next]
	r.interp.out[r.next] = nil
	r.next++
	return ev, nil
}

// Recycle gives back events that Next returned and that nothing uses any
// more, for the reader to fill again instead of allocating new ones: a
// consumer that keeps no event (a count, an analysis) spares the reader
// most of its allocation, and the collector most of its work. Neither the
// caller nor anything else may touch the events afterwards; what they
// pointed to (their strings, their parameters) is never reused and may be
// kept. Events of another Reader may be given. Call it from the goroutine
// that calls Next.
func (r *Reader) Recycle(evs ...*event.Event) {
	r.interp.recycle(evs)
}

// fillBatch is how many events fill makes ready at a time, so that
// Next costs little more than an index.
const fillBatch = 32

// fill interprets entries until fillBatch events are ready or the log
// ends.
func (r *Reader) fill() {
	if r.mapped {
		// A fault reading the mapping means the file lost the part being
		// read: an error, not a crash. Only this goroutine reads the
		// mapping; events hold copies of what they keep.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer r.fault()
	}
	for len(r.interp.out) < fillBatch {
		e, err := r.fr.next()
		if err == io.EOF {
			r.settle()
			r.err = io.EOF
			if d := r.src.damaged(); d != nil {
				r.warnings = append(r.warnings, "read in part: "+d.Error())
			}
			return
		}
		if err != nil {
			r.err = fmt.Errorf("%s: %w", r.name, err)
			return
		}
		n := len(r.interp.out)
		if t := e.time; t != 0 {
			if r.first == 0 || t < r.first {
				r.first = t
			}
			if t > r.last {
				r.last = t
			}
		}
		r.interp.add(e)
		if r.interp.foreign == "" && (r.stderr == nil || r.stderr.foreign == "") {
			continue
		}
		if err := r.checkLanguage(); err != nil {
			// The events of the entries before are returned; not this
			// entry's, nor any after.
			r.interp.out = r.interp.out[:n]
			r.err = err
			return
		}
	}
}

// fault recovers from a fault reading the mapped file, which ends the
// log with errShrank; any other panic goes on.
func (r *Reader) fault() {
	p := recover()
	if p == nil {
		return
	}
	if _, ok := p.(interface{ Addr() uintptr }); !ok {
		panic(p)
	}
	r.err = fmt.Errorf("%s: %w", r.name, errShrank)
}

// settle ends the log: pending statements are emitted, or, at the end of
// a part of a split log, left at the boundary with the next part.
func (r *Reader) settle() {
	r.interp.flushCounts()
	if r.right == nil {
		r.interp.finishAll()
	} else {
		b := r.right
		b.mu.Lock()
		b.pending, b.leftDone = r.interp.takePending(), true
		if b.rightDone {
			r.emitJoined(b.join())
		}
		b.mu.Unlock()
	}
	if b := r.left; b != nil {
		b.mu.Lock()
		b.durations, b.errors, b.rightDone = r.interp.leadingDurations, r.interp.leadingErrors, true
		if b.leftDone {
			r.emitJoined(b.join())
		}
		b.mu.Unlock()
	}
}

// emitJoined emits statements joined across a part boundary. The duration
// lines paired with them were counted as skipped by the other part's
// reader; this one counts them as parsed, so the parts' sum is right.
func (r *Reader) emitJoined(evs []*event.Event, paired int64) {
	r.interp.out = append(r.interp.out, evs...)
	r.counters.Parsed += paired
	if r.counters.Skipped[SkipDurationAlone] -= paired; r.counters.Skipped[SkipDurationAlone] == 0 {
		delete(r.counters.Skipped, SkipDurationAlone)
	}
}

func (r *Reader) checkLanguage() error {
	word, line := r.interp.foreign, r.interp.foreignLine
	if word == "" && r.stderr != nil {
		word, line = r.stderr.foreign, r.stderr.foreignLine
	}
	if word == "" {
		return nil
	}
	return fmt.Errorf("%s:%d: %q is not English: %w", r.name, line, word, ErrNotEnglish)
}

// Timing returns how the log times its lines, as detected when it was
// opened: TimingNone for a log whose events have no time, which can be
// analyzed but not replayed at its pace (a log_line_prefix needs %m).
func (r *Reader) Timing() Timing {
	if r.json != nil {
		return TimingFraction
	}
	return r.layout.timing
}

// TimeRange returns the earliest and the latest time of the lines read so
// far (the time each line was written, in µs since the epoch); ok is
// false before any line with a time. Once Next has returned io.EOF, it is
// the log's whole range. With the time ranges of several logs a caller
// can tell logs of one stretch of traffic from logs of different times.
func (r *Reader) TimeRange() (first, last int64, ok bool) {
	return r.first, r.last, r.first != 0
}

// Origin returns what the lines read so far show of the server that wrote
// them (see Origin); complete once Next has returned io.EOF. The caller
// owns the copy.
func (r *Reader) Origin() Origin { return r.interp.origin.clone() }

// Partial returns, once Next has returned io.EOF, why the log was read
// only in part: a compressed file cut short or damaged, whose events
// before the damage were read. nil when the whole log was read.
func (r *Reader) Partial() error { return r.src.damaged() }

// Counters returns the line counters so far. They are complete, adding up
// to every line of the file, once Next has returned io.EOF.
func (r *Reader) Counters() *Counters {
	r.interp.flushCounts()
	return r.counters
}

// Progress returns how many bytes of the (compressed) file were read so
// far and the file size, or -1 when it is not known (stdin).
func (r *Reader) Progress() (read, size int64) { return r.src.progress() }

// Name returns the file name the reader was opened with.
func (r *Reader) Name() string { return r.name }

// Close closes the underlying file.
func (r *Reader) Close() error { return r.src.close() }
