package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync/atomic"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Options configure Open.
type Options struct {
	// Log are the log reader's options (format, prefix, time zone,
	// standard input).
	Log logread.Options
	// Parts > 1 reads a large uncompressed file in up to Parts parts at
	// once (logread.OpenSplit), for a consumer that takes events in any
	// order (an analysis); otherwise each file is one source, in log
	// order, as a replay needs.
	Parts int
	// Select, when not nil, is the selection every source is wrapped
	// with; nil gives the reader's events as they are (events, the
	// command that shows them).
	Select *Selection
	// AllowMixed reads files that do not look like one server's
	// workload (times far apart, different servers) as one; otherwise
	// Open refuses them with a *Mixed error.
	AllowMixed bool
	// Warn receives what the opener set aside or assumed, one sentence
	// naming the file (nil: dropped).
	Warn func(string)
	// Progress, when not nil, is called with the bytes read so far of all
	// files and their total (-1 when a size is unknown), every few
	// thousand events, from the goroutines that read the sources.
	Progress func(read, total int64)
}

// ErrStdinTwice is Open's error for "-" given more than once.
var ErrStdinTwice = errors.New(`standard input ("-") can be read only once`)

// Set is the opened logs of one workload: a source per file (or per part
// of a split file), selected as asked, with their accounting. Make one
// with Open; read its Sources, then ask for its counts; Close it.
type Set struct {
	opts    Options
	files   []*file
	sources []event.Source
	readers []Reader
	counts  []*Counts
	state   *State
	input   *results.Input
	total   int64 // bytes of all files, -1 when a size is unknown
	read    atomic.Int64
	// progress is Options.Progress, or what OnProgress set.
	progress func(read, total int64)
	// subs are a Fold's sets, one per slice, the last read furthest
	// (see Fold); its sources merge theirs.
	subs []*Set
}

// file is one log given, opened.
type file struct {
	path    string
	readers []Reader
	head    []*event.Event // the first events of readers[0], peeked
	headErr error          // the error that ended the peek, if any
	print   *fingerprint
	// whole: the peek read the whole file. first and last are the times
	// of the file's first and last lines found before reading, and
	// origin what they show of the server (see span; 0: unknown, last
	// unknown for a compressed file).
	whole       bool
	first, last int64
	origin      logread.Origin
	info        results.InputFile
}

// Open opens every log before any is read, so that a typo in the last
// name fails at once rather than after an hour of reading. Each file is
// opened once: its format and prefix are detected then, and its first
// events, read to tell a copy of another log, are the first its source
// yields. "-" names standard input, once at most.
//
// Of several logs, an empty one is skipped, and so is one that repeats
// another's events (the same file twice, or the csvlog and jsonlog copies
// of one server's log): its statements would count twice; Warn says so.
// Logs that do not look like one workload are refused unless AllowMixed
// (see Mixed). When nothing is left to read, the error is a *Nothing.
func Open(paths []string, opts Options) (*Set, error) {
	stdin := 0
	for _, p := range paths {
		if p == "-" {
			if stdin++; stdin > 1 {
				return nil, ErrStdinTwice
			}
		}
	}
	warn := func(format string, args ...any) {
		if opts.Warn != nil {
			opts.Warn(fmt.Sprintf(format, args...))
		}
	}
	s := &Set{opts: opts, state: NewState(), progress: opts.Progress}
	fail := func(err error) (*Set, error) {
		s.Close()
		return nil, err
	}
	for _, p := range paths {
		f, err := openFile(p, opts)
		if err != nil {
			if errors.Is(err, logread.ErrEmptyLog) && len(paths) > 1 {
				warn("%s is empty: skipped", p)
				continue
			}
			if errors.Is(err, logread.ErrEmptyLog) {
				return fail(&Nothing{Reason: NothingEmpty, Path: p})
			}
			if errors.Is(err, fs.ErrNotExist) {
				return fail(&notExist{path: p})
			}
			return fail(&OpenError{Path: p, Err: err})
		}
		if _, isLog := LogReader(f.readers[0]); !isLog && logOptionsGiven(opts.Log) {
			warn("%s is a capture: the log format, prefix and time zone given are for logs, and not used for it", p)
		}
		if o := s.repeats(f); o != nil {
			if o.path == f.path || sameFile(o.path, f.path) {
				warn("%s is given twice: read once", p)
			} else {
				warn("%s holds the same events as %s (a copy, or the same server's log in another format): read once, from %s", p, o.path, o.path)
			}
			f.close()
			continue
		}
		s.files = append(s.files, f)
	}
	if len(s.files) == 0 {
		return fail(&Nothing{Reason: NothingAllRepeated})
	}
	if !opts.AllowMixed {
		if err := mixed(s.files, opts.Log); err != nil {
			return fail(err)
		}
	}
	s.build()
	return s, nil
}

// logOptionsGiven reports whether o says more of a log than the reader
// would detect: a format, a prefix or a time zone.
func logOptionsGiven(o logread.Options) bool {
	return (o.Format != "" && o.Format != logread.FormatAuto) || o.Prefix != "" || o.TimeZone != nil
}

// Origin is where a run's events come from, opened by the run itself with
// its options (selection, parts, progress): logs and captures named by
// their paths (Paths), or events held in memory (Memory). It is the one
// way into analyze and replay.
type Origin interface {
	Open(opts Options) (*Set, error)
	// Stdin reports whether the origin reads standard input, which can
	// be read only once: a replay cannot look at all of it beforehand.
	Stdin() bool
}

// Paths are inputs named by path, each detected: a log of any format the
// reader knows, or a capture of the proxy. "-" is standard input.
type Paths []string

// Open opens the paths (see Open).
func (p Paths) Open(opts Options) (*Set, error) { return Open(p, opts) }

// Stdin reports whether "-" is among the paths.
func (p Paths) Stdin() bool { return slices.Contains(p, "-") }

// openFile opens one log, in parts when asked, and peeks at its first
// events.
func openFile(path string, opts Options) (*file, error) {
	f := &file{path: path, info: results.InputFile{Name: path, Size: -1}}
	if path != "-" {
		if err := f.hash(); err != nil {
			return nil, err
		}
	}
	rs, err := openReaders(path, opts)
	if err != nil {
		return nil, err
	}
	f.readers = rs
	f.peek()
	return f, nil
}

// headEvents is how many events Open reads of each file before it is read:
// enough to tell a copy of another log, and the time it starts.
const headEvents = fingerprintEvents

// peek reads the first events of the file, kept to be yielded first.
func (f *file) peek() {
	r := f.readers[0]
	// As many events as a fingerprint holds: connections do not count.
	for n := 0; n < headEvents; {
		ev, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				f.headErr = err
			} else {
				f.whole = true
			}
			break
		}
		f.head = append(f.head, ev)
		if ev.Kind != event.Connect && ev.Kind != event.Disconnect {
			n++
		}
	}
	f.print = fingerprintOf(f.head)
}

// hash notes the input's size and content hash (Describe), for a regular
// file or a capture directory only: reading a pipe would take its data.
func (f *file) hash() error {
	st, err := os.Stat(f.path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() && !st.IsDir() {
		return nil
	}
	fh, err := Describe(f.path)
	if err != nil {
		return err
	}
	f.info.Size, f.info.Hash = fh.Size, fh.Hash
	return nil
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// repeats returns the file already opened whose events f repeats: the
// same file, or a copy of its log.
func (s *Set) repeats(f *file) *file {
	if f.path == "-" {
		return nil
	}
	for _, o := range s.files {
		if o.path == "-" {
			continue
		}
		if sameFile(o.path, f.path) || f.print.repeats(o.print) {
			return o
		}
	}
	return nil
}

func (f *file) close() {
	for _, r := range f.readers {
		r.Close()
	}
}

// build makes the sources: one per reader, the file's first events first,
// selected as asked.
func (s *Set) build() {
	s.input = &results.Input{}
	var total int64
	for _, f := range s.files {
		s.input.Files = append(s.input.Files, f.info)
		for i, r := range f.readers {
			fs := &fileSource{r: r, set: s}
			if i == 0 {
				fs.head, fs.headErr = f.head, f.headErr
			}
			if _, size := r.Progress(); size < 0 || total < 0 {
				total = -1
			} else {
				total += size
			}
			s.readers = append(s.readers, r)
			var src event.Source = fs
			if s.opts.Select != nil {
				c := &Counts{}
				s.counts = append(s.counts, c)
				src = Select(fs, s.opts.Select, s.state, c)
			}
			s.sources = append(s.sources, src)
		}
	}
	s.total = total
}

// Sources are the logs' events, selected: one source per file, or per
// part of a file read in parts, in the order of the files. Each is
// event.Named, event.Recycler and results.SourceCounter.
func (s *Set) Sources() []event.Source { return s.sources }

// Timeless lists the files whose lines have no time (logread.TimingNone:
// a log_line_prefix without %m, %t or %n): an analysis counts their
// statements, a replay cannot pace them.
func (s *Set) Timeless() []string {
	if len(s.subs) > 0 {
		return s.subs[0].Timeless()
	}
	var out []string
	for _, f := range s.files {
		if f.readers[0].Timing() == logread.TimingNone {
			out = append(out, f.path)
		}
	}
	return out
}

// Readers are the readers behind the sources, one per source: a log's
// (LogReader tells) or a capture's.
func (s *Set) Readers() []Reader { return s.readers }

// Input names the files read, with their sizes and content hashes.
func (s *Set) Input() *results.Input { return s.input }

// OnProgress sets the function called with the bytes read so far and
// their total, as Options.Progress; call it before reading.
func (s *Set) OnProgress(fn func(read, total int64)) {
	if len(s.subs) > 0 {
		s.subs[len(s.subs)-1].OnProgress(fn)
	}
	s.progress = fn
}

// Progress is how many bytes of the files were read, and their total
// (-1 when a size is unknown); safe from any goroutine.
func (s *Set) Progress() (read, total int64) {
	if len(s.subs) > 0 {
		return s.subs[len(s.subs)-1].Progress()
	}
	return s.read.Load(), s.total
}

// Counts are the sources' counts together: the lines of every reader and
// what the selection left out. Ask once the sources are read.
func (s *Set) Counts() results.SourceCounts {
	var sc results.SourceCounts
	for _, src := range s.sources {
		if c, ok := src.(results.SourceCounter); ok {
			sc.Add(c.SourceCounts())
		}
	}
	return sc
}

// Dropped is what each selection left out, in execution events; with the
// counts, it tells why a run measured nothing.
func (s *Set) Dropped() Dropped {
	var d Dropped
	for _, c := range s.counts {
		d.add(c)
	}
	return d
}

// Lines are the readers' line counters together, with the first line
// skipped for each reason.
func (s *Set) Lines() *logread.Counters {
	c := &logread.Counters{Skipped: map[string]int64{}}
	for _, r := range s.readers {
		if lr, ok := LogReader(r); ok {
			c.Add(lr.Counters())
		}
	}
	return c
}

// Warning is what a reader assumed or set aside that the user should know,
// in the file it is about.
type Warning struct {
	File, Text string
}

// Warnings are the readers' warnings so far, once per file (the parts of
// a split file share theirs).
func (s *Set) Warnings() []Warning { return WarningsOf(s.readers...) }

// WarningsOf are the warnings of some readers, once per file.
func WarningsOf(readers ...Reader) []Warning {
	var out []Warning
	seen := map[Warning]bool{}
	for _, r := range readers {
		for _, w := range r.Warnings() {
			k := Warning{File: r.Name(), Text: w}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// Partial returns a *Cut when an input broke off (a truncated compressed
// file): the figures cover only what was read before; nil otherwise.
func (s *Set) Partial() error {
	var why []string
	for _, r := range s.readers {
		if err := r.Partial(); err != nil {
			why = append(why, err.Error())
		}
	}
	if len(why) == 0 {
		return nil
	}
	return &Cut{Why: why}
}

// OpenError is Open's error for a log the reader cannot read (a format it
// cannot detect, a pgbouncer log, a log not in English, ...).
type OpenError struct {
	Path string
	Err  error
}

func (e *OpenError) Error() string { return "open log: " + e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// notExist is Open's error for a log that does not exist.
type notExist struct{ path string }

func (e *notExist) Error() string { return "log file " + e.path + " does not exist" }
func (e *notExist) Unwrap() error { return fs.ErrNotExist }

// Cut says which inputs broke off, and why.
type Cut struct{ Why []string }

func (c *Cut) Error() string {
	return fmt.Sprintf("%s; the results cover what was read before", joinSemi(c.Why))
}

func joinSemi(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// Close closes every reader.
func (s *Set) Close() {
	for _, sub := range s.subs {
		sub.Close()
	}
	s.subs = nil
	for _, f := range s.files {
		f.close()
	}
	s.files = nil
}

// fileSource yields a reader's events, the peeked ones first, and counts
// its progress.
type fileSource struct {
	r       Reader
	set     *Set
	head    []*event.Event
	headErr error
	n       int
	last    int64 // bytes read at the last progress update
}

// progressEvery is how many events pass between progress updates: often
// enough for the eye, rare enough to cost nothing.
const progressEvery = 4096

func (s *fileSource) Next() (*event.Event, error) {
	var ev *event.Event
	var err error
	switch {
	case len(s.head) > 0:
		ev, s.head = s.head[0], s.head[1:]
		if len(s.head) == 0 {
			s.head = nil
		}
	case s.headErr != nil:
		err, s.headErr = s.headErr, nil
	default:
		ev, err = s.r.Next()
	}
	if s.n++; s.n%progressEvery == 0 || err != nil {
		read, _ := s.r.Progress()
		now := s.set.read.Add(read - s.last)
		s.last = read
		if p := s.set.progress; p != nil {
			p(now, s.set.total)
		}
	}
	return ev, err
}

func (s *fileSource) Name() string { return s.r.Name() }

func (s *fileSource) Recycle(evs ...*event.Event) { s.r.Recycle(evs...) }

// SourceCounts are the reader's: a log's lines, a capture's messages.
func (s *fileSource) SourceCounts() results.SourceCounts { return s.r.SourceCounts() }
