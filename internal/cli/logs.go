package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/pgrehearse/pgrehearse/internal/logread"
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
