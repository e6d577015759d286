package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/logread"
)

// logFlags are the flags of the commands that read server logs.
type logFlags struct {
	format   string
	prefix   string
	timezone string
}

// addLogFlags registers --format, --prefix and --timezone.
func addLogFlags(fl *pflag.FlagSet, f *logFlags) {
	fl.StringVar(&f.format, "format", "auto", "log format: auto, stderr, csvlog, jsonlog or syslog")
	fl.StringVar(&f.prefix, "prefix", "", "the server's log_line_prefix, for text logs (default: inferred from the first lines)")
	fl.StringVar(&f.timezone, "timezone", "", "the server's log_timezone as an IANA name (Asia/Shanghai), for times the log writes without a zone (syslog) or with an abbreviation that is unknown or ambiguous (CST, IST)")
}

// options turns the flags into the log reader's options.
func (f logFlags) options(stdio IO) (logread.Options, error) {
	format, err := logread.ParseFormat(f.format)
	if err != nil {
		return logread.Options{}, usageError("--format: %v", err)
	}
	opts := logread.Options{Format: format, Prefix: f.prefix, Stdin: stdio.Stdin}
	if f.timezone != "" {
		loc, err := time.LoadLocation(f.timezone)
		if err != nil {
			return opts, usageError("--timezone %q: %v (give an IANA name, such as Europe/Paris)", f.timezone, err)
		}
		opts.TimeZone = loc
	}
	return opts, nil
}

// openLogs opens every log before any is read, so that a typo in the last
// name fails at once rather than after an hour of reading. With parts > 1
// a large plain file is read in parts at once (logread.OpenSplit); a
// command that needs the events in log order, such as replay, passes 1.
// "-" names standard input, once at most.
//
// Of several logs, an empty one is skipped with a warning, and so is one
// that repeats another's events (the same file twice, or the csvlog and
// jsonlog copies of one server's log): its statements would count twice.
// On success the caller closes the readers with closeLogs.
func openLogs(stdio IO, paths []string, f logFlags, parts int) ([]*logread.Reader, error) {
	opts, err := f.options(stdio)
	if err != nil {
		return nil, err
	}
	stdinUsed := false
	for _, p := range paths {
		if p == "-" {
			if stdinUsed {
				return nil, usageError(`standard input ("-") can be read only once`)
			}
			stdinUsed = true
		}
	}
	skip := make(map[int]bool)
	if len(paths) > 1 {
		skip = repeatedLogs(stdio, paths, opts)
	}
	var readers []*logread.Reader
	for i, p := range paths {
		if skip[i] {
			continue
		}
		rs, err := logread.OpenSplit(p, opts, parts)
		if err != nil {
			if errors.Is(err, logread.ErrEmptyLog) && len(paths) > 1 {
				fmt.Fprintf(stdio.Stderr, "warning: %s is empty: skipped\n", p)
				continue
			}
			if errors.Is(err, logread.ErrEmptyLog) {
				closeLogs(readers)
				return nil, &exitError{code: ExitNoInput, err: fmt.Errorf("NOTHING MEASURED: the logs are empty (%s)", p)}
			}
			closeLogs(readers)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("log file %s does not exist", p)
			}
			if errors.Is(err, logread.ErrUnknownPrefix) || errors.Is(err, logread.ErrAmbiguousPrefix) {
				return nil, fmt.Errorf("open log: %w (--prefix PREFIX gives it)", err)
			}
			return nil, fmt.Errorf("open log: %w", err)
		}
		readers = append(readers, rs...)
	}
	if len(readers) == 0 {
		return nil, &exitError{code: ExitNoInput, err: errors.New("NOTHING MEASURED: every log given is empty or repeats another")}
	}
	return readers, nil
}

// repeatedLogs returns the indexes of the logs that repeat the events of
// one before them, and says which: the same file twice, or copies of one
// log in two formats. A log that cannot be read is left to openLogs.
func repeatedLogs(stdio IO, paths []string, opts logread.Options) map[int]bool {
	skip := make(map[int]bool)
	prints := make([]*logread.Fingerprint, len(paths))
	infos := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		if p == "-" {
			continue
		}
		infos[i], _ = os.Stat(p)
		for j := 0; j < i; j++ {
			if !skip[j] && infos[i] != nil && infos[j] != nil && os.SameFile(infos[i], infos[j]) {
				fmt.Fprintf(stdio.Stderr, "warning: %s is given twice: read once\n", p)
				skip[i] = true
			}
		}
		if skip[i] {
			continue
		}
		if fp, err := logread.FingerprintOf(p, opts); err == nil {
			prints[i] = fp
		}
		for j := 0; j < i && prints[i] != nil; j++ {
			if !skip[j] && prints[j] != nil && prints[i].Repeats(prints[j]) {
				fmt.Fprintf(stdio.Stderr, "warning: %s holds the same events as %s (a copy, or the same server's log in another format): read once, from %s\n", p, paths[j], paths[j])
				skip[i] = true
				break
			}
		}
	}
	return skip
}

// reportLogWarnings writes what the readers assumed or set aside to
// standard error, once per file (the parts of a split file share theirs).
func reportLogWarnings(stdio IO, readers []*logread.Reader) {
	seen := make(map[string]bool)
	for _, r := range readers {
		for _, w := range r.Warnings() {
			k := r.Name() + "\x00" + w
			if !seen[k] {
				seen[k] = true
				if strings.Contains(w, "time zone") {
					w += " [--timezone]"
				}
				fmt.Fprintf(stdio.Stderr, "warning: %s: %s\n", r.Name(), w)
			}
		}
	}
}

func closeLogs(readers []*logread.Reader) {
	for _, r := range readers {
		r.Close()
	}
}

// checkMeasured fails a run whose logs yielded nothing to measure: no
// statement at all, or more than maxSkipped (a fraction) of the lines
// unreadable (logread.Unparseable). Its message names the main reason,
// shows the first line skipped for it, and says what to try.
func checkMeasured(readers []*logread.Reader, statements int64, maxSkipped float64) error {
	c := &logread.Counters{Skipped: map[string]int64{}}
	for _, r := range readers {
		c.Add(r.Counters())
	}
	return checkCounted(c, statements, maxSkipped)
}

// checkCounted is checkMeasured on line counts already added up.
func checkCounted(c *logread.Counters, statements int64, maxSkipped float64) error {
	if c == nil {
		c = &logread.Counters{Skipped: map[string]int64{}}
	}
	unreadable := c.Unparseable()
	var what string
	switch {
	case statements == 0 && c.Total == 0:
		what = "the logs are empty"
	case statements == 0:
		what = fmt.Sprintf("the logs yielded no statement (%d lines read, %d parsed)", c.Total, c.Parsed)
	case c.Total > 0 && float64(unreadable) > maxSkipped*float64(c.Total):
		what = fmt.Sprintf("%d of %d lines (%.1f%%) could not be read, more than the %.1f%% allowed (--max-skipped)",
			unreadable, c.Total, 100*float64(unreadable)/float64(c.Total), 100*maxSkipped)
	default:
		return nil
	}
	msg := "NOTHING MEASURED: " + what
	top, topN := "", int64(0)
	for _, r := range c.Reasons() {
		if logread.Unparseable(r) && c.Skipped[r] > topN {
			top, topN = r, c.Skipped[r]
		}
	}
	if topN > 0 {
		msg += fmt.Sprintf("; most skipped lines: %q (%d)", top, topN)
		if smp, ok := c.Samples[top]; ok {
			msg += fmt.Sprintf(", the first at line %d:\n  %s\n", smp.Line, strings.TrimRight(smp.Text, "\n"))
		}
	}
	switch top {
	case logread.SkipNoPrefix:
		msg += "; give the server's log_line_prefix with --prefix (SHOW log_line_prefix), or check --format"
	case logread.SkipMalformed:
		msg += "; check --format: the records do not parse as the format given or detected"
	case "":
		if statements == 0 {
			msg += "; the server must log statements: log_min_duration_statement = 0 (or log_statement = 'all')"
		}
	default:
		msg += "; see docs/logs.md for the formats pgrehearse reads"
	}
	return &exitError{code: ExitNoInput, err: errors.New(msg)}
}

// checkInputWhole fails a run whose input broke off (a truncated
// compressed file): its figures cover only what was read before.
func checkInputWhole(readers []*logread.Reader) error {
	var why []string
	for _, r := range readers {
		if err := r.Partial(); err != nil {
			why = append(why, err.Error())
		}
	}
	if len(why) == 0 {
		return nil
	}
	return &exitError{code: ExitIncomplete, err: fmt.Errorf("INCOMPLETE INPUT: %s; the results cover what was read before", strings.Join(why, "; "))}
}

// addMaxSkipped registers --max-skipped, a percentage.
func addMaxSkipped(fl *pflag.FlagSet, v *float64) {
	fl.Float64Var(v, "max-skipped", 10, "percent of the log's lines that may be unreadable (no matching prefix, malformed records) before the run fails (exit 4)")
}
