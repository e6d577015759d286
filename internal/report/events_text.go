package report

import (
	"io"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
)

// WriteLogCounts writes how one log file was read, for `events --count`:
// its layout as the reader describes it (and its prefix, for the formats
// that have one), and its lines parsed and skipped, by reason.
func WriteLogCounts(w io.Writer, path, layout string, format logread.Format, prefix string, c *logread.Counters) error {
	ew := &errWriter{w: w}
	ew.printf("%s: %s", path, layout)
	if prefix != "" || format == logread.FormatStderr || format == logread.FormatSyslog {
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
