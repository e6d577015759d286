package logread

import (
	"errors"
	"io"
	"os"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// Probe is what the head and the tail of a log say of it, found without
// reading it whole: for telling logs of different times or of different
// servers apart before any of them is read (see Reader.TimeRange and
// Reader.Origin for what a whole reading gives).
type Probe struct {
	// First and Last are the earliest and latest time of the lines
	// read, in µs since the epoch; 0 when none had a time.
	First, Last int64
	// Whole is set when Last is that of the log's end: the log was
	// read whole, or its tail was (an uncompressed regular file). A
	// compressed log or standard input gives its head only.
	Whole bool
	// Origin is what the lines read show of the server.
	Origin Origin
	// Timing is how the log times its lines.
	Timing Timing
}

// probeEvents bounds the events ProbeLog reads from a log's head, and
// probeTail the bytes of its tail.
const (
	probeEvents = 10000
	probeTail   = 1 << 20
)

// ProbeLog reads the head of the log at path (its first events) and, when
// it can, its tail (the last megabyte), and says what they show. Not for
// standard input, which can be read only once. An RFC 3164 syslog tail
// takes the year its head ended in.
func ProbeLog(path string, opts Options) (*Probe, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	p := &Probe{Timing: r.Timing()}
	for n := 0; n < probeEvents; n++ {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			p.Whole = true
			break
		}
		if err != nil {
			return nil, err
		}
		r.Recycle(ev)
	}
	p.First, p.Last, _ = r.TimeRange()
	p.Origin = r.Origin()
	if p.Whole {
		return p, nil
	}
	t, err := r.tail(path, opts)
	if err != nil || t == nil {
		return p, err
	}
	defer t.Close()
	for {
		ev, err := t.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return p, nil // the head's figures stand
		}
		t.Recycle(ev)
	}
	if first, last, ok := t.TimeRange(); ok {
		if p.First == 0 || first < p.First {
			p.First = first
		}
		p.Last = max(p.Last, last)
	}
	p.Origin.Add(t.Origin())
	p.Whole = true
	return p, nil
}

// tail returns a reader of the last probeTail bytes of the log r reads,
// from the first message that starts there, read as r reads its head; nil
// when the log's tail cannot be read apart (compressed, not a regular
// file, short, or one JSON value).
func (r *Reader) tail(path string, opts Options) (*Reader, error) {
	src := r.src
	if src.file == nil || src.compressed || src.size < 2*probeTail || r.json != nil && r.json.stream {
		return nil, nil
	}
	opts.Format, opts.Prefix = r.format, r.prefix
	if er, ok := r.stderr.srcEnv(); ok && opts.Year == 0 {
		opts.Year = er.clock.year
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	format := r.format
	var p *prefix.Prefix
	if format == FormatStderr && r.layout.env == envNone {
		if p, err = prefix.Compile(r.prefix); err != nil {
			f.Close()
			return nil, err
		}
	} else if format != FormatCSV {
		format = "" // a line of an envelope, or a JSON record: any line
	}
	off, err := messageStart(f, src.size-probeTail, format, p)
	if err != nil || off >= src.size {
		f.Close()
		return nil, err
	}
	sec := io.NewSectionReader(f, off, src.size-off)
	ts := &source{raw: &countingReader{r: sec}, size: src.size - off, closer: []io.Closer{f}, file: f, off: off, mtime: src.mtime}
	ts.r = ts.raw
	t, err := newReader(path, ts, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// srcEnv returns the envelope reader s reads its lines from, if it is
// one of syslog and the like.
func (s *stderrReader) srcEnv() (*envReader, bool) {
	if s == nil {
		return nil, false
	}
	er, ok := s.src.(*envReader)
	return er, ok
}

// Add adds what o shows to what the Origin shows: the origin of two
// parts of one log, or of logs read as one.
func (x *Origin) Add(o Origin) {
	if x.SystemID == "" {
		x.SystemID = o.SystemID
	}
	for _, n := range o.Ports {
		if !slices.Contains(x.Ports, n) {
			x.Ports = append(x.Ports, n)
		}
	}
	for _, v := range o.Versions {
		if !slices.Contains(x.Versions, v) {
			x.Versions = append(x.Versions, v)
		}
	}
	for _, h := range o.Hosts {
		if !slices.Contains(x.Hosts, h) {
			x.Hosts = append(x.Hosts, h)
		}
	}
}
