package report

import (
	"io"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
)

// WriteLogCounts writes how one log file was read, for `events --count`:
// its format (and a stderr log's prefix), and its lines parsed and
// skipped, by reason.
func WriteLogCounts(w io.Writer, path string, format logread.Format, prefix string, c *logread.Counters) error {
	ew := &errWriter{w: w}
	ew.printf("%s: format %s", path, format)
	if format == logread.FormatStderr {
		ew.printf(", prefix %q", prefix)
	}
	ew.printf("\n  lines: %d total, %d parsed, %d skipped\n", c.Total, c.Parsed, c.SkippedTotal())
	for _, reason := range c.Reasons() {
		ew.printf("    %-28s %d\n", reason, c.Skipped[reason])
	}
	return ew.err
}

// WriteEventCounts writes how many events of each kind the logs held,
// counts being indexed by event.Kind.
func WriteEventCounts(w io.Writer, counts *[256]int64) error {
	ew := &errWriter{w: w}
	for _, k := range []event.Kind{event.Connect, event.Disconnect, event.Statement, event.Prepare, event.Execute, event.Error} {
		ew.printf("  %-10s %d\n", k.String()+":", counts[k])
	}
	return ew.err
}
