package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// logFlags are the flags of the commands that read server logs.
type logFlags struct {
	format     string
	prefix     string
	timezone   string
	allowMixed bool
}

// addLogFlags registers --format, --prefix, --timezone and
// --allow-mixed-sources.
func addLogFlags(fl *pflag.FlagSet, f *logFlags) {
	fl.StringVar(&f.format, "format", "auto", "log format: auto, stderr, csvlog, jsonlog or syslog")
	fl.StringVar(&f.prefix, "prefix", "", "the server's log_line_prefix, for text logs (default: inferred from the first lines)")
	fl.StringVar(&f.timezone, "timezone", "", "the server's log_timezone as an IANA name (Asia/Shanghai), for times the log writes without a zone (syslog) or with an abbreviation that is unknown or ambiguous (CST, IST)")
	fl.BoolVar(&f.allowMixed, "allow-mixed-sources", false, "read logs as one workload even when their times neither overlap nor follow each other, or they show different servers (see docs/logs.md)")
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

// captureHelp tells, in every command that reads logs, that a capture
// is read as one.
const captureHelp = `
A capture (the directory "pgrehearse capture" writes, or one of its segment
files) is read as a log is, detected by its content: the sessions as the
proxy relayed them, with their parameters as sent and the server's answers.
--format, --prefix and --timezone are for logs; a capture needs none.
`

// sourceOptions are the options of source.Open for the flags: the
// opener's warnings go to standard error.
func (f logFlags) sourceOptions(stdio IO, parts int, sel *source.Selection) (source.Options, error) {
	lo, err := f.options(stdio)
	if err != nil {
		return source.Options{}, err
	}
	return source.Options{Log: lo, Parts: parts, Select: sel, AllowMixed: f.allowMixed,
		Warn: func(w string) { fmt.Fprintf(stdio.Stderr, "warning: %s\n", w) }}, nil
}

// openLogs opens every log with the source layer (source.Open) and says
// what failed in the command's words. With parts > 1 a large plain file
// is read in parts at once; a command that needs the events in log
// order, such as replay, passes 1. sel selects the workload; nil reads
// every event. On success the caller closes the set.
func openLogs(stdio IO, paths []string, f logFlags, parts int, sel *source.Selection) (*source.Set, error) {
	opts, err := f.sourceOptions(stdio, parts, sel)
	if err != nil {
		return nil, err
	}
	set, err := source.Open(paths, opts)
	if err != nil {
		return nil, openError(err)
	}
	return set, nil
}

// openError renders source.Open's errors with the flags that fix them.
func openError(err error) error {
	var nothing *source.Nothing
	var mixed *source.Mixed
	switch {
	case errors.Is(err, source.ErrStdinTwice):
		return usageError("%v", err)
	case errors.As(err, &nothing):
		return nothingError(nothing)
	case errors.As(err, &mixed):
		return usageError("%v; --allow-mixed-sources reads them as one workload", err)
	case errors.Is(err, logread.ErrUnknownPrefix) || errors.Is(err, logread.ErrAmbiguousPrefix):
		return fmt.Errorf("%w (--prefix PREFIX gives it)", err)
	}
	return err
}

// reportLogWarnings writes what the readers assumed or set aside to
// standard error, once per file.
func reportLogWarnings(stdio IO, ws []source.Warning) {
	for _, w := range ws {
		text := w.Text
		if strings.Contains(text, "time zone") {
			text += " [--timezone]"
		}
		fmt.Fprintf(stdio.Stderr, "warning: %s: %s\n", w.File, text)
	}
}

// nothingError fails a run whose logs yielded nothing to measure (exit 4).
func nothingError(n *source.Nothing) error {
	return &exitError{code: ExitNoInput, err: errors.New("NOTHING MEASURED: " + report.NothingText(n))}
}

// cutError fails a run whose input broke off (a truncated compressed
// file): its figures cover only what was read before.
func cutError(cut error) error {
	return &exitError{code: ExitIncomplete, err: fmt.Errorf("INCOMPLETE INPUT: %w", cut)}
}

// addMaxSkipped registers --max-skipped, a percentage.
func addMaxSkipped(fl *pflag.FlagSet, v *float64) {
	fl.Float64Var(v, "max-skipped", 10, "percent of the log's lines that may be unreadable (no matching prefix, malformed records) before the run fails (exit 4)")
}
