package source

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// MixedServers: the logs show different servers: their system
	// identifiers, the ports their startup lines name, or the hosts of
	// their syslog headers differ (logread.Origin).
	MixedServers
)

// Mixed is Open's error for logs that do not look like one server's
// workload; Options.AllowMixed reads them as one anyway.
type Mixed struct {
	Reason MixedReason
	// A and B are the two files. For MixedTimes, A ends (AEnd) long
	// before B starts (BStart). For MixedServers, What names what
	// differs ("system identifier", "port", "host") and AServer and
	// BServer are each log's.
	A, B             string
	AEnd, BStart     int64
	What             string
	AServer, BServer string
}

func (m *Mixed) Error() string {
	switch m.Reason {
	case MixedServers:
		return fmt.Sprintf("%s and %s are logs of different servers (%s %s and %s): not one workload", m.A, m.B, m.What, m.AServer, m.BServer)
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

// span notes when the file begins and ends and what it shows of its
// server: from what Open read of its head, and, when that was not the
// whole log, from logread.ProbeLog, which reads its tail where it can
// (an uncompressed regular file) with the format and prefix detected
// when the file was opened. last stays 0 when the end cannot be known
// before the log is read (compressed, standard input).
func (f *file) span(opts logread.Options) {
	r := f.readers[0]
	f.first, f.last, _ = r.TimeRange()
	f.origin = r.Origin()
	if f.whole {
		return
	}
	f.last = 0
	lr, ok := LogReader(r)
	if f.path == "-" || !ok {
		return
	}
	opts.Format, opts.Prefix = lr.Format(), lr.Prefix()
	p, err := logread.ProbeLog(f.path, opts)
	if err != nil {
		return // read as it comes: the reading will say what is wrong
	}
	if p.First > 0 && (f.first == 0 || p.First < f.first) {
		f.first = p.First
	}
	if p.Whole {
		f.last = p.Last
	}
	f.origin.Add(p.Origin)
}

// mixed checks that the files are one workload: their servers, where the
// logs tell them, are the same, and each, in order of their start, begins
// before the one before it ends or soon after. A log whose end cannot be
// known before reading it (compressed) is taken to last until the next
// begins: only what is certain is refused.
func mixed(files []*file, opts logread.Options) error {
	if len(files) < 2 {
		return nil
	}
	for _, f := range files {
		f.span(opts)
	}
	for i, a := range files {
		for _, b := range files[i+1:] {
			if what, av, bv, ok := otherServer(a.origin, b.origin); ok {
				return &Mixed{Reason: MixedServers, A: a.path, B: b.path, What: what, AServer: av, BServer: bv}
			}
		}
	}
	var timed []*file
	for _, f := range files {
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

// otherServer reports whether two logs show different servers: their
// system identifiers differ, or the ports their startup lines name, or
// the hosts of their syslog headers, have nothing in common. What a log
// does not show is not compared; a server started on another version
// (a minor upgrade between two rotated logs) is still the same server.
func otherServer(a, b logread.Origin) (what, av, bv string, ok bool) {
	if a.SystemID != "" && b.SystemID != "" && a.SystemID != b.SystemID {
		return "system identifier", a.SystemID, b.SystemID, true
	}
	if disjoint(a.Ports, b.Ports) {
		return "port", joinInts(a.Ports), joinInts(b.Ports), true
	}
	if disjoint(a.Hosts, b.Hosts) {
		return "host", strings.Join(a.Hosts, ","), strings.Join(b.Hosts, ","), true
	}
	return "", "", "", false
}

// disjoint reports whether a and b both hold values and none in common.
func disjoint[T comparable](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for _, x := range a {
		if slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
