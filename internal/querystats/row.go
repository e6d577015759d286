package querystats

import (
	"fmt"
	"maps"
	"math"
	"time"
)

// TimeLayout is RFC 3339 with microseconds, the precision of the log.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Latency is a query's timed calls, those with a known duration, and
// their latency in milliseconds: the total, the mean and the
// percentiles. Row, a comparison's figures (compare.Figures) and a step's
// (judge.Query) embed it, so their JSON names these fields alike.
type Latency struct {
	TimedCalls int64   `json:"timed_calls"`
	TotalMS    float64 `json:"total_ms"`
	MeanMS     float64 `json:"mean_ms"`
	P50MS      float64 `json:"p50_ms"`
	P95MS      float64 `json:"p95_ms"`
	P99MS      float64 `json:"p99_ms"`
}

// Row is the JSON form of one fingerprint's Stats. Durations are in
// milliseconds, as in pg_stat_statements. Without any timed call, the ms
// figures are 0 and TimedCalls says so.
type Row struct {
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	Calls       int64  `json:"calls"`
	Errors      int64  `json:"errors"`
	Latency
	MinMS     float64 `json:"min_ms"`
	MaxMS     float64 `json:"max_ms"`
	FirstSeen string  `json:"first_seen,omitempty"`
	LastSeen  string  `json:"last_seen,omitempty"`
	// ErrorsBySQLState counts the errors by SQLSTATE when the producer
	// knew the codes; its sum may be below Errors (codes not logged).
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate,omitempty"`
	// OnlyOnTargetBySQLState counts, of a replay's errors, those of
	// calls that succeeded in the original, by cause: a 25P02 under the
	// error that aborted its block on the target (see
	// results.Outcomes.OnlyOnTargetBySQLState).
	OnlyOnTargetBySQLState map[string]int64 `json:"only_on_target_by_sqlstate,omitempty"`
	// RowsCalls counts the calls whose row count is known, Rows their
	// rows (inserted, updated, deleted or returned); both 0 when the
	// producer could not tell (a server log does not say).
	RowsCalls int64 `json:"rows_calls,omitempty"`
	Rows      int64 `json:"rows,omitempty"`
	// Answered counts the calls compared with the answer the original
	// server gave (a replay of a capture), AnswerDiffers those that
	// differed, by how (AnswerDiff's names).
	Answered      int64            `json:"answered,omitempty"`
	AnswerDiffers map[string]int64 `json:"answer_differs,omitempty"`
	// AnswerExplained counts, of those, the ones the statement's text
	// explains (a volatile function, what a server assigns, a sequence's
	// value an INSERT returns), and AnswerCause says how ("volatile_function: now()"); the others are
	// unexplained.
	AnswerExplained int64  `json:"answer_explained,omitempty"`
	AnswerCause     string `json:"answer_cause,omitempty"`
	// Hist is the latency histogram in µs, HdrHistogram V2 compressed and
	// base64 encoded (readable by HdrHistogram in any language). It is
	// set only when asked for: a few hundred bytes per query, needed only
	// to merge results later.
	Hist string `json:"hist,omitempty"`
}

// RowOptions say what Rows includes.
type RowOptions struct {
	Hist bool // encode each histogram in Row.Hist
}

// Rows returns one Row per fingerprint, in the order of Sorted.
func (s *Set) Rows(opts RowOptions) ([]Row, error) {
	sorted := s.Sorted()
	rows := make([]Row, len(sorted))
	for i, st := range sorted {
		r, err := st.Row(opts)
		if err != nil {
			return nil, err
		}
		rows[i] = r
	}
	return rows, nil
}

// Row returns the JSON form of s.
func (s *Stats) Row(opts RowOptions) (Row, error) {
	r := Row{
		Fingerprint: s.Fingerprint,
		Query:       s.Query,
		Calls:       s.Calls,
		Errors:      s.Errors,
		Latency: Latency{
			TimedCalls: s.TimedCalls,
			TotalMS:    ms(s.TotalUS),
			MeanMS:     s.MeanUS() / 1000,
			P50MS:      ms(s.PercentileUS(50)),
			P95MS:      ms(s.PercentileUS(95)),
			P99MS:      ms(s.PercentileUS(99)),
		},
		RowsCalls: s.RowsCalls,
		Rows:      s.Rows,
		Answered:  s.Answered,
	}
	r.AnswerDiffers = s.answerRow()
	r.AnswerExplained, r.AnswerCause = s.answerExplained, s.answerCause
	if s.codes != nil {
		r.ErrorsBySQLState = maps.Clone(s.codes)
	}
	if s.onlyTarget != nil {
		r.OnlyOnTargetBySQLState = maps.Clone(s.onlyTarget)
	}
	if s.TimedCalls > 0 {
		r.MinMS, r.MaxMS = ms(s.MinUS), ms(s.MaxUS)
	}
	if t, ok := s.FirstSeen(); ok {
		r.FirstSeen = FormatTime(t)
	}
	if t, ok := s.LastSeen(); ok {
		r.LastSeen = FormatTime(t)
	}
	if opts.Hist && s.hist != nil {
		s.fold()
		b, err := s.hist.Encode()
		if err != nil {
			return Row{}, fmt.Errorf("encode histogram of %s: %w", s.Fingerprint, err)
		}
		r.Hist = string(b)
	}
	return r, nil
}

func ms(us int64) float64 { return float64(us) / 1000 }

func us(ms float64) int64 { return int64(math.Round(ms * 1000)) }

// FormatTime formats µs since the epoch as TimeLayout in UTC.
func FormatTime(us int64) string {
	return time.UnixMicro(us).UTC().Format(TimeLayout)
}

// FromRows rebuilds a Set from Rows, to merge results of several runs.
// Rows of timed calls must carry Hist, or percentiles could not be merged.
func FromRows(rows []Row) (*Set, error) {
	s := NewSet()
	for _, r := range rows {
		st := newStats(r.Fingerprint, r.Query)
		st.Calls, st.Errors, st.TimedCalls = r.Calls, r.Errors, r.TimedCalls
		st.TotalUS, st.MinUS, st.MaxUS = us(r.TotalMS), us(r.MinMS), us(r.MaxMS)
		st.RowsCalls, st.Rows = r.RowsCalls, r.Rows
		st.Answered = r.Answered
		st.answerFromRow(r.AnswerDiffers)
		st.answerExplained, st.answerCause = r.AnswerExplained, r.AnswerCause
		if len(r.ErrorsBySQLState) > 0 {
			st.codes = maps.Clone(r.ErrorsBySQLState)
		}
		if len(r.OnlyOnTargetBySQLState) > 0 {
			st.onlyTarget = maps.Clone(r.OnlyOnTargetBySQLState)
		}
		var err error
		if st.first, err = parseTime(r.FirstSeen); err != nil {
			return nil, fmt.Errorf("query %s: first_seen: %w", r.Fingerprint, err)
		}
		if st.last, err = parseTime(r.LastSeen); err != nil {
			return nil, fmt.Errorf("query %s: last_seen: %w", r.Fingerprint, err)
		}
		if r.TimedCalls > 0 {
			if r.Hist == "" {
				return nil, fmt.Errorf("query %s: no histogram (hist) to merge", r.Fingerprint)
			}
			h, err := DecodeHistogram(r.Hist)
			if err != nil {
				return nil, fmt.Errorf("query %s: hist: %w", r.Fingerprint, err)
			}
			st.hist = h
			if st.hist.TotalCount() != r.TimedCalls {
				return nil, fmt.Errorf("query %s: hist holds %d values for %d timed calls",
					r.Fingerprint, st.hist.TotalCount(), r.TimedCalls)
			}
		}
		if old, ok := s.m[r.Fingerprint]; ok {
			old.merge(st)
		} else {
			st.owner = s
			s.m[r.Fingerprint] = st
		}
	}
	return s, nil
}

func parseTime(s string) (int64, error) {
	if s == "" {
		return NoTime, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return NoTime, err
	}
	return t.UnixMicro(), nil
}
