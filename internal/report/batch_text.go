package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/findings"
)

// WriteBatchMeasure says what rounds with the single-row INSERTs batched
// saved per row against the rounds without: the factors with their
// intervals.
func WriteBatchMeasure(w io.Writer, m *findings.BatchMeasure) error {
	if m == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nBatched INSERTs (--batch-inserts %d), %d rounds each way, into %s:\n", m.Max, m.Rounds, strings.Join(m.Tables, ", "))
	level := ""
	if m.Time.Level > 0 {
		level = fmt.Sprintf(", %.0f%% interval", 100*m.Time.Level)
	}
	fmt.Fprintf(&b, "  time per row: batches of %d %s%s\n", m.Max, batchCutWords(m.Time), level)
	if m.WAL != nil {
		fmt.Fprintf(&b, "  WAL per row:  batches of %d %s\n", m.Max, batchCutWords(*m.WAL))
	} else {
		b.WriteString("  WAL per row:  " + batchWALNotMeasured + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// batchWALNotMeasured is said of a measure without its WAL.
const batchWALNotMeasured = "not measured (the target's WAL position could not be read)"

// batchCutWords says what a factor of batching (the figure without over
// the figure with) does, in words its interval bears out: "cut it by 9x
// (8.1–10.2)" only when the whole interval is a cut, "raise it" when the
// whole interval is a rise, and no change told from noise when the
// interval holds 1.
func batchCutWords(f findings.Factor) string {
	switch f.Reading() {
	case findings.Cut:
		return "cut it by " + f.String()
	case findings.Raise:
		return "raise it: " + f.String() + " (below 1, the batched rows cost more)"
	default:
		return "change it by no more than noise: ~ " + f.String()
	}
}
