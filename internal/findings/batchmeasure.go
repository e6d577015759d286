package findings

import "fmt"

// BatchMeasure is what replaying the workload with its single-row INSERTs
// batched saved, per inserted row, measured in rounds of the same traffic
// with and without (judge.BatchInserts): the factors are the unbatched
// rounds' figure over the batched rounds', so 9 is a ninefold cut.
type BatchMeasure struct {
	// Max is the batches' size (--batch-inserts N); Rounds the rounds
	// of each side.
	Max    int `json:"max"`
	Rounds int `json:"rounds"`
	// Tables are the tables the batched rows went into.
	Tables []string `json:"tables"`
	// Time is the target's time per inserted row; WAL the WAL per row,
	// nil when it could not be read.
	Time Factor  `json:"time"`
	WAL  *Factor `json:"wal,omitempty"`
}

// Factor is a ratio with its interval at Level (0: not a rank interval,
// the ratio widened by the noise floor).
type Factor struct {
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Level float64 `json:"level"`
}

// String is "9x (8.1–10.2)".
func (f Factor) String() string {
	return fmt.Sprintf("%sx (%s–%s)", factorNum(f.Ratio), factorNum(f.Low), factorNum(f.High))
}

func factorNum(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.3g", x)
	default:
		return fmt.Sprintf("%.2g", x)
	}
}

// measured is what m says batching saves on table's rows: "batches of 50
// cut the target's time per row into events by 9x (8.1–10.2) and the WAL
// per row by 1.3x (1.2–1.4)", empty when m did not batch that table.
func (m *BatchMeasure) measured(table string) string {
	if m == nil {
		return ""
	}
	found := false
	for _, t := range m.Tables {
		if t == table || "public."+t == table || t == "public."+table {
			found = true
		}
	}
	if !found {
		return ""
	}
	s := fmt.Sprintf("measured on this traffic, replayed %d times each way: batches of %d %s",
		m.Rounds, m.Max, m.Time.does("the target's time per row into "+table))
	switch {
	case m.WAL == nil:
	case m.Time.cut() && m.WAL.cut():
		s += fmt.Sprintf(" and the WAL per row by %s", m.WAL)
	default:
		s += " and " + m.WAL.does("the WAL per row")
	}
	return s
}

// Reading is what a factor's interval bears out, the one rule its words
// follow wherever they are written.
type Reading int

// Readings of a factor (the figure without over the figure with).
const (
	// WithinNoise: the interval holds 1, no change told from noise.
	WithinNoise Reading = iota
	// Cut: the whole interval is above 1.
	Cut
	// Raise: the whole interval is below 1 (and measured).
	Raise
)

// Reading is Cut only when the whole interval is a cut, Raise only when
// it is a rise, WithinNoise otherwise.
func (f Factor) Reading() Reading {
	switch {
	case f.Low > 1:
		return Cut
	case f.High < 1 && f.High > 0:
		return Raise
	default:
		return WithinNoise
	}
}

// cut: the whole interval is a cut.
func (f Factor) cut() bool { return f.Reading() == Cut }

// does says what the factor does to what, in words its interval bears
// out: "cut WHAT by 9x (8.1–10.2)" only when the whole interval is a
// cut.
func (f Factor) does(what string) string {
	switch f.Reading() {
	case Cut:
		return "cut " + what + " by " + f.String()
	case Raise:
		return "raised " + what + ": " + f.String() + ", below 1, the batched rows cost more"
	default:
		return "did not change " + what + " beyond noise: ~ " + f.String()
	}
}
