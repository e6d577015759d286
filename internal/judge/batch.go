package judge

import (
	"errors"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// BatchMeasure is what batching INSERTs saved, as the findings say it.
type BatchMeasure = findings.BatchMeasure

// AddBatchMeasure keeps m in v and has v's batch-inserts findings say it.
func (v *Verdict) AddBatchMeasure(m *BatchMeasure) {
	v.Batched = m
	v.Findings.AddBatchMeasure(m)
}

// BatchInserts judges what batching the workload's single-row INSERTs
// saves per inserted row: plain are rounds replayed with the INSERTs
// counted, not merged (--batch-inserts 1), batched rounds with them
// merged, of the same traffic from the same starting state. The factors
// are plain's per-row figure over batched's, with the rank interval at
// alpha (0: stats.DefaultAlpha) over the rounds.
func BatchInserts(plain, batched []*results.Result, alpha float64) (*findings.BatchMeasure, error) {
	if len(plain) == 0 || len(batched) == 0 {
		return nil, errors.New("batched INSERTs: rounds of both kinds are needed")
	}
	m := &findings.BatchMeasure{Rounds: min(len(plain), len(batched))}
	var pt, bt, pw, bw []float64
	walKnown := true
	collect := func(rs []*results.Result, merged bool, times, wals *[]float64) error {
		for _, r := range rs {
			c := r.BatchInserts
			switch {
			case c == nil:
				return errors.New("batched INSERTs: a round was replayed without --batch-inserts")
			case merged && c.Max <= 1, !merged && c.Max > 1:
				return errors.New("batched INSERTs: a round of the wrong kind")
			case c.Rows == 0:
				return errors.New("batched INSERTs: a round inserted no rows that could be batched")
			}
			if merged {
				m.Max = max(m.Max, c.Max)
				for t := range c.Tables {
					if !slices.Contains(m.Tables, t) {
						m.Tables = append(m.Tables, t)
					}
				}
			}
			*times = append(*times, c.InsertMS/float64(c.Rows))
			if c.WALBytes < 0 {
				walKnown = false
			}
			*wals = append(*wals, float64(c.WALBytes)/float64(c.Rows))
		}
		return nil
	}
	if err := collect(plain, false, &pt, &pw); err != nil {
		return nil, err
	}
	if err := collect(batched, true, &bt, &bw); err != nil {
		return nil, err
	}
	slices.Sort(m.Tables)
	opts := stats.Options{Alpha: alpha}
	m.Time = factor(bt, pt, opts)
	if walKnown {
		w := factor(bw, pw, opts)
		m.WAL = &w
	}
	return m, nil
}

// factor is y's runs over x's, with its interval.
func factor(x, y []float64, opts stats.Options) findings.Factor {
	r := stats.Effect(x, y, opts)
	return findings.Factor{Ratio: r.Ratio, Low: r.Low, High: r.High, Level: r.Level}
}
