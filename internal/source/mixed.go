package source

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread"
)

// MixedReason is why logs given together do not look like one workload.
type MixedReason int

// Reasons logs are mixed.
const (
	// MixedTimes: one log ends long before the next begins (neither
	// overlapping nor adjoining): logs of different periods, or of
	// different servers, which read as one would make a workload of
	// their gap.
	MixedTimes MixedReason = iota + 1
	// MixedServers: the logs show different servers.
	MixedServers
)

// Mixed is Open's error for logs that do not look like one server's
// workload; Options.AllowMixed reads them as one anyway.
type Mixed struct {
	Reason MixedReason
	// A and B are the two files; for MixedTimes, A ends (AEnd) long
	// before B starts (BStart); for MixedServers, AServer and BServer
	// are what each log says of its server.
	A, B             string
	AEnd, BStart     int64
	AServer, BServer string
}

func (m *Mixed) Error() string {
	switch m.Reason {
	case MixedServers:
		return fmt.Sprintf("%s and %s are logs of different servers (%s and %s): not one workload", m.A, m.B, m.AServer, m.BServer)
	default:
		return fmt.Sprintf("%s ends at %s and %s begins %v later, at %s: logs that neither overlap nor follow each other are not one workload",
			m.A, fmtTime(m.AEnd), m.B, gap(m.AEnd, m.BStart), fmtTime(m.BStart))
	}
}

func fmtTime(us int64) string { return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05 UTC") }

func gap(a, b int64) time.Duration {
	return (time.Duration(b-a) * time.Microsecond).Truncate(time.Second)
}

// Adjoining logs: a log that starts within maxGap, or within gapShare of
// the span of both, after the one before it ends follows it (a rotation,
// a quiet hour). Beyond both, the two are refused as one workload.
const (
	maxGap   = time.Hour
	gapShare = 0.1
)

// tailSpan is how much of the end of an uncompressed log is read to find
// when it ends.
const tailSpan = 1 << 20

// identified is a log reader that can tell which server wrote the log
// (its system identifier, the host and port its lines name). The log
// reader may offer it; where it does not, servers are not compared.
type identified interface {
	Server() string
}

// mixed checks that the files are one workload: their servers, where the
// logs tell them, are the same, and each, in order of their start, begins
// before the one before it ends or soon after. A log whose end cannot be
// known before reading it (compressed) is taken to last until the next
// begins: only what is certain is refused.
func mixed(files []*file, opts logread.Options) error {
	var timed []*file
	for _, f := range files {
		if id, ok := any(f.readers[0]).(identified); ok {
			for _, o := range files {
				oid, ok := any(o.readers[0]).(identified)
				if ok && id.Server() != "" && oid.Server() != "" && id.Server() != oid.Server() {
					return &Mixed{Reason: MixedServers, A: o.path, B: f.path, AServer: oid.Server(), BServer: id.Server()}
				}
			}
		}
		if f.first > 0 {
			timed = append(timed, f)
		}
	}
	if len(timed) < 2 {
		return nil
	}
	slices.SortStableFunc(timed, func(a, b *file) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	for _, f := range timed {
		if !f.whole {
			f.last = lastTime(f, opts)
		}
	}
	end := timed[0].last
	prev := timed[0]
	for _, f := range timed[1:] {
		if end <= 0 {
			// Unknown: assume it reaches this one.
			end, prev = f.last, f
			continue
		}
		allowed := max(maxGap.Microseconds(), int64(gapShare*float64(max(f.last, f.first)-prev.first)))
		if f.first > end+allowed {
			return &Mixed{Reason: MixedTimes, A: prev.path, B: f.path, AEnd: end, BStart: f.first}
		}
		if f.last <= 0 || f.last > end {
			end, prev = f.last, f
		}
	}
	return nil
}

// lastTime is the time of the last event of an uncompressed regular file,
// read from its last tailSpan bytes; 0 when it cannot be known before
// reading the whole file (a compressed file, standard input).
func lastTime(f *file, opts logread.Options) int64 {
	if f.path == "-" || f.info.Size <= 0 {
		return 0
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return 0
	}
	defer fh.Close()
	head := make([]byte, 8)
	if n, _ := fh.ReadAt(head, 0); compressed(head[:n]) {
		return 0
	}
	if f.info.Size <= tailSpan {
		return readLast(io.NewSectionReader(fh, 0, f.info.Size), f, opts)
	}
	return readLast(io.NewSectionReader(fh, f.info.Size-tailSpan, tailSpan), f, opts)
}

// readLast reads the events of r, a part of f, with f's format and
// prefix, and returns the latest time.
func readLast(r io.Reader, f *file, opts logread.Options) int64 {
	rd := f.readers[0]
	opts.Format, opts.Prefix = rd.Format(), rd.Prefix()
	tr, err := logread.NewReader(r, f.path, opts)
	if err != nil {
		return 0
	}
	var last int64
	for {
		ev, err := tr.Next()
		if errors.Is(err, io.EOF) || err != nil {
			return last
		}
		last = max(last, ev.Time)
	}
}
