package report

import (
	"fmt"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
)

// BatchSection is the page's "Batched INSERTs": what rehearse
// --batch-inserts measured sending the single-row INSERTs in batches
// saves per inserted row, server time and WAL, each factor with its
// interval, in WriteBatchMeasure's words, from the same typed measure
// (rehearse --json's "batch_inserts").
func BatchSection(m *findings.BatchMeasure) htmlreport.Section {
	s := htmlreport.Section{ID: "batch-inserts", Title: "Batched INSERTs"}
	s.Text = []string{fmt.Sprintf("The workload replayed onto the candidate in %d rounds with its single-row INSERTs into %s sent in batches of up to %d rows (--batch-inserts %d), "+
		"against the candidate's own %d rounds without. Each factor is the figure per inserted row without batches over the figure with them, "+
		"with its interval: above 1 batching cuts it.", m.Rounds, strings.Join(m.Tables, ", "), m.Max, m.Max, m.Rounds)}
	s.Cards = []htmlreport.Card{batchCard("time per row", m.Time), {Label: "WAL per row", Value: "not measured", Sub: batchWALNotMeasured}}
	level := ""
	if m.Time.Level > 0 {
		level = fmt.Sprintf(" (%.0f%% interval)", 100*m.Time.Level)
	}
	s.Notes = []string{fmt.Sprintf("time per row: batches of %d would %s%s", m.Max, batchCutWords(m.Time), level)}
	if m.WAL != nil {
		s.Cards[1] = batchCard("WAL per row", *m.WAL)
		s.Notes = append(s.Notes, fmt.Sprintf("WAL per row: batches of %d would %s", m.Max, batchCutWords(*m.WAL)))
	}
	return s
}

// batchCard is one factor of batching: green when its whole interval is
// a cut, red when it is a rise, neutral when it holds 1.
func batchCard(label string, f findings.Factor) htmlreport.Card {
	c := htmlreport.Card{Label: label, Value: f.String()}
	switch {
	case f.Low > 1:
		c.Status, c.Sub = "good", "cut by batching"
	case f.High < 1 && f.High > 0:
		c.Status, c.Sub = "bad", "raised by batching"
	default:
		c.Value, c.Sub = "~ "+c.Value, "no change told from noise"
	}
	return c
}
