package report

import (
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// NothingText says why nothing was measured, and what to do, in the
// words of the commands that read logs.
func NothingText(n *source.Nothing) string {
	what := n.What()
	if n.Reason == source.NothingUnreadable {
		what += " (--max-skipped)"
	}
	msg := what + n.Skipped()
	switch n.Reason {
	case source.NothingEmpty, source.NothingAllRepeated:
		return msg
	case source.NothingOutsideWindow:
		return msg + "; choose --start and --end within the logs' times"
	case source.NothingTimeless:
		return msg + "; --start and --end cannot select lines without a time: leave them out, or capture the log with %m in log_line_prefix"
	case source.NothingFiltered:
		return msg + "; no session has the --database, --user or --application values given"
	case source.NothingOwn, source.NothingOtherShards:
		return msg + n.Remedy()
	}
	switch {
	case n.TopIs(logread.SkipNoPrefix):
		return msg + "; give the server's log_line_prefix with --prefix (SHOW log_line_prefix), or check --format"
	case n.TopIs(logread.SkipMalformed):
		return msg + "; check --format: the records do not parse as the format given or detected"
	}
	// The other remedies are the server's settings, which name no flag.
	return msg + n.Remedy()
}
