package logread

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// ErrEmptyLog is returned (wrapped) by Open for a log with nothing in it:
// no bytes, or only blank lines.
var ErrEmptyLog = errors.New("the log is empty")

// ErrPgbouncer is returned (wrapped) for a pgbouncer log: it records
// connections, not statements, and has nothing to replay or analyze.
var ErrPgbouncer = errors.New("this is a pgbouncer log, which records connections but not statements: give the PostgreSQL server's log instead")

// layout is how a log is read: its format, the envelope around its lines
// and the server's log_line_prefix inside, as given or detected.
type layout struct {
	format   Format
	env      envKind
	ident    string // the server's program name in a syslog envelope
	prefix   string // the server's log_line_prefix
	withTime bool   // the envelope's time goes in front of each line
	withPID  bool   // and its process id
	bsd      bool   // the envelope's times have no year and no zone
	firstMon int    // month of the first RFC 3164 time, for the year
	timing   Timing // how the lines are timed
	warnings []string
}

// describe names the layout for messages.
func (l *layout) describe() string {
	switch {
	case l.env != envNone:
		return "stderr lines in " + envNames[l.env]
	default:
		return string(l.format)
	}
}

// detectLayout works out how to read a log from its head, with what opts
// give. head holds the first detectSize bytes (all of a shorter log).
func detectLayout(head []byte, opts Options) (layout, error) {
	var l layout
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return l, ErrEmptyLog
	}
	if what := notALog(head); what != "" {
		return l, fmt.Errorf("%w: it looks like %s", ErrNotALog, what)
	}
	if (opts.Prefix != "" || opts.Format != "" && opts.Format != FormatAuto) && binaryData(head) != "" {
		// Binary data read with the prefix or format given would be
		// skipped line by line, and its first line quoted raw.
		return l, fmt.Errorf("%w: it looks like %s", ErrNotALog, binaryData(head))
	}
	format := opts.Format
	if format == "" || format == FormatAuto {
		format = detectFormat(trimmed)
	}
	l.format = format
	switch format {
	case FormatCSV, FormatJSON:
		l.timing = TimingFraction
		return l, nil
	case FormatStderr, FormatSyslog:
	default:
		return l, fmt.Errorf("unknown format %q", format)
	}
	lines := prefix.HeadLines(head, prefix.MaxSamples)
	if n := len(lines); n > 1 && len(head) == detectSize && head[len(head)-1] != '\n' && bytes.HasSuffix(head, lines[n-1]) {
		// The head's last line is cut where the head ends: what it
		// holds may read as something it is not (an ISO time without
		// the syslog tag after it).
		lines = lines[:n-1]
	}
	if isPgbouncer(lines) {
		return l, ErrPgbouncer
	}
	inner := lines
	env, ident, bodies := detectEnvelope(lines)
	if format == FormatSyslog && env == envNone {
		return l, fmt.Errorf("%w: no line is a syslog line, e.g. %q", ErrUnknownPrefix, truncate(lines[0], 120))
	}
	if env != envNone {
		l.format, l.env, l.ident = FormatSyslog, env, ident
		if env == envISO {
			l.format = FormatStderr
		}
		inner = bodies
		var el envLine
		for _, line := range lines {
			if parseEnvLine(env, line, &el) {
				l.bsd = el.hasTime && !el.zoned
				l.firstMon = el.month
				switch {
				case el.fraction:
					l.timing = TimingFraction
				case el.hasTime:
					l.timing = TimingSeconds
				}
				break
			}
		}
		if len(inner) == 0 {
			return l, fmt.Errorf("%w: the %s lines hold no server message, e.g. %q", ErrUnknownPrefix, envNames[env], truncate(lines[0], 120))
		}
	}
	l.prefix = opts.Prefix
	if l.prefix == "" {
		inf, err := prefix.Infer(inner)
		if err != nil {
			return l, inferFailed(err, head, inner)
		}
		l.prefix = inf.Prefix
		l.warnings = append(l.warnings, inf.Warnings...)
	}
	p, err := prefix.Compile(l.prefix)
	if err != nil {
		return l, err
	}
	if env == envNone && !p.HasTime() {
		l.warnings = append(l.warnings, fmt.Sprintf("the lines have no time (log_line_prefix %q has no %%m, %%t or %%n): their events have none, and a replay cannot keep their pace", l.prefix))
	}
	if esc := p.TimeEscape(); esc != 0 || env == envNone {
		// The server's own times, whatever the envelope's.
		l.timing = timingOf(esc)
	}
	if env != envNone {
		l.withTime = !p.HasTime()
		l.withPID = env != envISO && !p.HasPID
		if !l.withTime {
			l.bsd = false // the server's own times are used
		}
	}
	return l, nil
}

// inferFailed is the error of a head whose prefix could not be inferred:
// binary data, and text none of whose lines holds a server message, are
// no log at all, said without quoting their bytes; a log whose prefix is
// not recognized keeps the inference's error.
func inferFailed(err error, head []byte, lines [][]byte) error {
	if !errors.Is(err, ErrUnknownPrefix) {
		return err
	}
	if what := binaryData(head); what != "" {
		return fmt.Errorf("%w: it looks like %s", ErrNotALog, what)
	}
	if errors.Is(err, prefix.ErrNoSeverity) {
		return fmt.Errorf("%w: it looks like text, but none of its first %d lines holds a server message "+
			"(every line a PostgreSQL server writes has a severity: LOG:, ERROR:, STATEMENT: ...)", ErrNotALog, len(lines))
	}
	return err
}

// detectFormat tells csvlog and jsonlog from text by the first line.
func detectFormat(head []byte) Format {
	line := head
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSpace(line)
	switch {
	case len(line) == 0:
		return FormatStderr
	case line[0] == '{':
		return FormatJSON
	case line[0] == '[':
		// A JSON array (gcloud --format=json), not "[1234]: ..." (the
		// Cloud SQL prefix): "[" then "{" or "]", maybe on the next line.
		rest := bytes.TrimLeft(head[bytes.IndexByte(head, '[')+1:], " \t\r\n")
		if len(rest) > 0 && (rest[0] == '{' || rest[0] == ']') {
			return FormatJSON
		}
		return FormatStderr
	}
	// csvlog: 2026-11-22 08:11:02.123 UTC,"user","db",1234,...
	// (some tools write the time quoted too)
	first := line
	if first[0] == '"' {
		first = first[1:]
	}
	if _, rest, ok := prefix.TakeTimestamp(first); ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '"') {
		return FormatCSV
	}
	return FormatStderr
}

// isPgbouncer tells pgbouncer's log by what only it writes: client and
// server connection ids ("C-0x55d0...:", "S-0x..."), its statistics and
// its start-up line.
func isPgbouncer(lines [][]byte) bool {
	n := 0
	for _, l := range lines[:min(len(lines), 200)] {
		s := string(l)
		switch {
		case strings.Contains(s, " C-0x") || strings.Contains(s, " S-0x"):
			n++
		case strings.Contains(s, "process up: pgbouncer") || strings.Contains(s, " LOG stats: ") || strings.Contains(s, " LOG kernel file descriptor limit"):
			n++
		}
	}
	return n > 0 && n*4 >= min(len(lines), 200)
}

// yearOf guesses the year of a log's first RFC 3164 time, which has none:
// that of when the file was last written, or the year before if the
// first month is later in the year than that.
func yearOf(modTime time.Time, firstMonth int) int {
	y := modTime.Year()
	if firstMonth > int(modTime.Month()) {
		y--
	}
	return y
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// Timing says how a log times its lines: it decides whether a replay can
// keep the log's pace.
type Timing uint8

const (
	// TimingNone: the lines have no time (a log_line_prefix without %m,
	// %t or %n, Cloud SQL's text payloads alone). Every event's Time is
	// 0: an analysis counts and times the statements, a replay has no
	// pace to keep.
	TimingNone Timing = iota
	// TimingSeconds: whole seconds (%t, RFC 3164 syslog): events of one
	// second are in the order of their lines, their pace is lost.
	TimingSeconds
	// TimingFraction: fractions of a second (%m, %n, csvlog, jsonlog,
	// the managed services' exports).
	TimingFraction
)

var timingNames = [...]string{"none", "seconds", "fraction"}

func (t Timing) String() string {
	if int(t) < len(timingNames) {
		return timingNames[t]
	}
	return "timing(" + strconv.Itoa(int(t)) + ")"
}

// timingOf returns the timing of a prefix's time escape (0 for none).
func timingOf(esc byte) Timing {
	switch esc {
	case 'm', 'n':
		return TimingFraction
	case 't':
		return TimingSeconds
	}
	return TimingNone
}
