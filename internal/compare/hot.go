package compare

import (
	"cmp"
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// HOT updates per table: of a table's updates over a run
// (pg_stat_user_tables' n_tup_upd delta, which the observer collects),
// the share that were HOT (n_tup_hot_upd: no index entry written). An
// index on the candidate covering a column the updates set stops them
// from being HOT there: every update then writes every index, which is
// what more WAL per call of an UPDATE often is. The share is evidence
// beside the work per call, not a verdict of its own.

// MinHOTDrop is the least drop of a table's HOT share (in share points,
// 0.10 is ten) that is called a drop, besides every candidate run's
// share lying below every baseline run's.
const MinHOTDrop = 0.10

// MinHOTUpdates is the fewest updates of a table in every run for its
// HOT share to be compared.
const MinHOTUpdates = 10

// HOTShare is a side's HOT share of a table's updates: the median over
// its runs, and the lowest and highest run's.
type HOTShare struct {
	Median float64 `json:"median"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
}

// TableHOT compares the HOT share of a table's updates between the
// sides.
type TableHOT struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// BaselineUpdates and CandidateUpdates are the medians over the
	// runs of the table's updates.
	BaselineUpdates  int64    `json:"baseline_updates"`
	CandidateUpdates int64    `json:"candidate_updates"`
	Baseline         HOTShare `json:"baseline"`
	Candidate        HOTShare `json:"candidate"`
	// Judged: every run counted MinHOTUpdates updates of the table at
	// least, and run-to-run noise is measured.
	Judged bool `json:"judged"`
	// Dropped: judged, every candidate run's share is below every
	// baseline run's, and the medians are MinHOTDrop apart at least.
	// Rose likewise the other way.
	Dropped bool `json:"dropped"`
	Rose    bool `json:"rose,omitempty"`
	// Cause says which index on the candidate stops the updates from
	// being HOT, when Dropped; nil when none is known.
	Cause *HOTCause `json:"cause,omitempty"`
	// UpdatedColumns are the columns the logged statements set in the
	// table (fingerprint.AssignedColumns of pg_stat_statements' texts).
	UpdatedColumns []string `json:"updated_columns,omitempty"`
}

// HOTCause: Columns, which the updates set, are covered by Indexes on
// the candidate and by no index on the baseline (a BRIN index from
// PostgreSQL 16 does not count: it does not stop HOT updates).
type HOTCause struct {
	Columns []string `json:"columns"`
	Indexes []string `json:"indexes"`
}

type tableName struct{ schema, name string }

// tableSide is a table's figures on one side.
type tableSide struct {
	shares  []float64
	updates []int64
	least   int64
	runs    int
	indexes []observe.TableIndex // the first run's with the table
}

// sideTables sums each run's updated tables over its databases (a
// rehearsal's rounds replay onto copies under other names).
func sideTables(w workRows) (map[tableName]*tableSide, bool) {
	out := map[tableName]*tableSide{}
	n := len(w.tables)
	for _, ts := range w.tables {
		if ts == nil {
			return nil, false
		}
	}
	for i, ts := range w.tables {
		sum := map[tableName][2]int64{}
		for _, t := range ts {
			k := tableName{t.Schema, t.Name}
			s := sum[k]
			sum[k] = [2]int64{s[0] + t.Updates, s[1] + t.HOTUpdates}
			ts := out[k]
			if ts == nil {
				ts = &tableSide{least: math.MaxInt64, updates: make([]int64, n)}
				out[k] = ts
			}
			if ts.indexes == nil {
				ts.indexes = t.Indexes
			}
		}
		for k, s := range sum {
			ts := out[k]
			ts.updates[i] = s[0]
			ts.runs++
			if s[0] > 0 {
				ts.shares = append(ts.shares, float64(s[1])/float64(s[0]))
			}
		}
	}
	for _, ts := range out {
		for _, u := range ts.updates {
			ts.least = min(ts.least, u)
		}
	}
	return out, true
}

func shareOf(xs []float64) HOTShare {
	if len(xs) == 0 {
		return HOTShare{}
	}
	return HOTShare{Median: stats.Median(xs), Low: slices.Min(xs), High: slices.Max(xs)}
}

// assignedColumns are, per table, the columns the statements of both
// sides set (from pg_stat_statements' texts).
func assignedColumns(sides ...workRows) map[tableName][]string {
	seen := map[string]bool{}
	out := map[tableName][]string{}
	for _, w := range sides {
		for _, run := range w.runs {
			for _, q := range run {
				if seen[q.Query] {
					continue
				}
				seen[q.Query] = true
				for _, a := range fingerprint.AssignedColumns(q.Query) {
					k := tableName{a.Name.Schema, a.Name.Name}
					for _, c := range a.Columns {
						if !slices.Contains(out[k], c) {
							out[k] = append(out[k], c)
						}
					}
				}
			}
		}
	}
	return out
}

// columnsOf are the updated columns of t: those set by statements that
// name it with its schema, or without one.
func columnsOf(assigned map[tableName][]string, t tableName) []string {
	var cols []string
	for _, k := range []tableName{t, {"", t.name}} {
		for _, c := range assigned[k] {
			if !slices.Contains(cols, c) {
				cols = append(cols, c)
			}
		}
	}
	slices.Sort(cols)
	return cols
}

// indexing are the indexes among ixs that cover column c and stop HOT
// updates.
func indexing(ixs []observe.TableIndex, c string) []string {
	var out []string
	for _, ix := range ixs {
		if !ix.Summarizing && slices.Contains(ix.Columns, c) {
			out = append(out, ix.Name)
		}
	}
	return out
}

// compareHOT fills ServerWork.HOT from both sides' table counters.
func (r *Report) compareHOT(b, k workRows, measured bool) {
	sw := r.ServerWork
	if sw == nil {
		return
	}
	bt, ok1 := sideTables(b)
	kt, ok2 := sideTables(k)
	if !ok1 || !ok2 {
		return
	}
	assigned := assignedColumns(b, k)
	var out []TableHOT
	for name, bs := range bt {
		ks := kt[name]
		if ks == nil {
			continue
		}
		t := TableHOT{Schema: name.schema, Name: name.name, BaselineUpdates: medianInt(bs.updates), CandidateUpdates: medianInt(ks.updates),
			Baseline: shareOf(bs.shares), Candidate: shareOf(ks.shares), UpdatedColumns: columnsOf(assigned, name)}
		t.Judged = measured && bs.runs == len(b.tables) && ks.runs == len(k.tables) && min(bs.least, ks.least) >= MinHOTUpdates
		if t.Judged {
			t.Dropped = t.Candidate.High < t.Baseline.Low && t.Baseline.Median-t.Candidate.Median >= MinHOTDrop
			t.Rose = t.Candidate.Low > t.Baseline.High && t.Candidate.Median-t.Baseline.Median >= MinHOTDrop
		}
		if t.Dropped {
			var cause HOTCause
			for _, c := range t.UpdatedColumns {
				ix := indexing(ks.indexes, c)
				if len(ix) == 0 || len(indexing(bs.indexes, c)) > 0 {
					continue
				}
				cause.Columns = append(cause.Columns, c)
				for _, n := range ix {
					if !slices.Contains(cause.Indexes, n) {
						cause.Indexes = append(cause.Indexes, n)
					}
				}
			}
			if len(cause.Columns) > 0 {
				t.Cause = &cause
			}
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b TableHOT) int {
		return cmp.Or(cmpBool(b.Dropped, a.Dropped), cmp.Compare(b.Baseline.Median-b.Candidate.Median, a.Baseline.Median-a.Candidate.Median),
			cmp.Compare(b.BaselineUpdates, a.BaselineUpdates), cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Name, b.Name))
	})
	sw.HOT = out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
