package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/spf13/pflag"
)

// openLogs opens every log before any is read, so that a typo in the last
// name fails at once rather than after an hour of reading. With parts > 1
// a large plain file is read in parts at once (logread.OpenSplit); a
// command that needs the events in log order, such as replay, passes 1.
// format is a --format value; "-" names standard input, once at most.
// On success the caller closes the readers with closeLogs.
func openLogs(stdio IO, paths []string, format, prefix string, parts int) ([]*logread.Reader, error) {
	fmtv, err := logread.ParseFormat(format)
	if err != nil {
		return nil, usageError("%v", err)
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
	var readers []*logread.Reader
	for _, p := range paths {
		rs, err := logread.OpenSplit(p, logread.Options{Format: fmtv, Prefix: prefix, Stdin: stdio.Stdin}, parts)
		if err != nil {
			closeLogs(readers)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("log file %s does not exist", p)
			}
			return nil, fmt.Errorf("open log: %w", err)
		}
		readers = append(readers, rs...)
	}
	return readers, nil
}

func closeLogs(readers []*logread.Reader) {
	for _, r := range readers {
		r.Close()
	}
}

// unreadableReasons are the skip reasons of lines the reader could not
// read, as opposed to lines it read and found nothing to replay in
// (checkpoints, autovacuum, connections received...).
var unreadableReasons = []string{logread.SkipNoPrefix, logread.SkipMalformed, logread.SkipUnsupportedLine}

// checkMeasured fails a run whose logs yielded nothing to measure: no
// statement at all, or more than maxSkipped (a fraction) of the lines
// unreadable. Its message names the main reason and what to try.
func checkMeasured(lines results.LineCounts, statements int64, maxSkipped float64) error {
	var unreadable int64
	top, topN := "", int64(0)
	for _, r := range unreadableReasons {
		n := lines.Skipped[r]
		unreadable += n
		if n > topN {
			top, topN = r, n
		}
	}
	var what string
	switch {
	case statements == 0 && lines.Total == 0:
		what = "the logs are empty"
	case statements == 0:
		what = fmt.Sprintf("the logs yielded no statement (%d lines read, %d parsed)", lines.Total, lines.Parsed)
	case lines.Total > 0 && float64(unreadable) > maxSkipped*float64(lines.Total):
		what = fmt.Sprintf("%d of %d lines (%.1f%%) could not be read, more than the %.1f%% allowed (--max-skipped)",
			unreadable, lines.Total, 100*float64(unreadable)/float64(lines.Total), 100*maxSkipped)
	default:
		return nil
	}
	msg := "NOTHING MEASURED: " + what
	if topN > 0 {
		msg += fmt.Sprintf("; most skipped lines: %q (%d)", top, topN)
	}
	switch top {
	case logread.SkipNoPrefix:
		msg += "; give the server's log_line_prefix with --prefix (SHOW log_line_prefix), or check --format"
	case logread.SkipMalformed:
		msg += "; check --format: the records do not parse as the format given or detected"
	case logread.SkipUnsupportedLine:
		msg += "; the lines are not of a format pgrehearse reads (see 'Analyzing a log' in the README)"
	default:
		if statements == 0 {
			msg += "; the server must log statements: log_min_duration_statement = 0 (or log_statement = 'all')"
		}
	}
	return &exitError{code: ExitNoInput, err: errors.New(msg)}
}

// addMaxSkipped registers --max-skipped, a percentage.
func addMaxSkipped(fl *pflag.FlagSet, v *float64) {
	fl.Float64Var(v, "max-skipped", 10, "percent of the log's lines that may be unreadable (no matching prefix, malformed records) before the run fails (exit 4)")
}
