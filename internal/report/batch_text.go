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
	fmt.Fprintf(&b, "  time per row: batches of %d cut it by %s%s\n", m.Max, m.Time, level)
	if m.WAL != nil {
		fmt.Fprintf(&b, "  WAL per row:  batches of %d cut it by %s\n", m.Max, m.WAL)
	} else {
		b.WriteString("  WAL per row:  not measured (the target's WAL position could not be read)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
