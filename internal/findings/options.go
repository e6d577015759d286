package findings

// Options are the thresholds a caller may change: those the CLI has flags
// for and those tests shrink to make "large" small. The zero value of a
// field means its default, given in Thresholds' comment of the same
// field. Every other threshold is fixed (defaults); Report.Thresholds
// lists all of them as an evaluation used them.
type Options struct {
	IndexMinRows        float64
	IndexMaxSelectivity float64
	HotCallsPerCore     float64
	KeyMinRows          float64
}

// Thresholds are every threshold of the findings, as an evaluation used
// them, so that a reader can see what was assumed.
type Thresholds struct {
	// BatchMinRate is the rate of single-row INSERTs into one table,
	// per second over the workload's span, from which batch-inserts
	// fires: 10.
	BatchMinRate float64 `json:"batch_min_rate"`
	// BatchMinCalls is the fewest single-row INSERTs into one table:
	// 500.
	BatchMinCalls int64 `json:"batch_min_calls"`

	// IndexTop is how many queries, by total time, missing-index
	// explains: 10.
	IndexTop int `json:"index_top"`
	// IndexMinRows and IndexMinPages make a table big enough for a
	// sequential scan on it to matter (either suffices): 100,000 rows
	// (an Option) and 1,000 pages (8 MB).
	IndexMinRows  float64 `json:"index_min_rows"`
	IndexMinPages int64   `json:"index_min_pages"`
	// IndexMaxSelectivity: a scan whose filter keeps more than this
	// share of the table is left alone, an index would not help: 0.2
	// (an Option).
	IndexMaxSelectivity float64 `json:"index_max_selectivity"`

	// PlanMinShare is the share of planning in a query's total time
	// (planning + execution) from which planning-heavy fires: 0.3.
	// PlanMinMeanMS is the least mean planning time, so that trivial
	// statements planned in microseconds are left alone: 0.5 ms.
	// PlanMinCalls is the fewest calls: 5.
	PlanMinShare  float64 `json:"plan_min_share"`
	PlanMinMeanMS float64 `json:"plan_min_mean_ms"`
	PlanMinCalls  int64   `json:"plan_min_calls"`

	// HotCallsPerCore is K in hot-queryid's model: one query id risks
	// pg_stat_statements spinlock contention from K x CPU cores calls
	// per second (half that with track_planning on): 10,000 (an
	// Option).
	HotCallsPerCore float64 `json:"hot_calls_per_core"`
	// HotWarnFraction is the fraction of that limit from which the
	// finding warns: 0.5.
	HotWarnFraction float64 `json:"hot_warn_fraction"`

	// KeyMinRows makes a table large for random-keys: 1,000,000 rows
	// (an Option). KeyMinInsertRate makes it insert-heavy: INSERTs per
	// second in the workload: 10.
	KeyMinRows       float64 `json:"key_min_rows"`
	KeyMinInsertRate float64 `json:"key_min_insert_rate"`

	// QueueMinCalls is the fewest calls of a polling query: 10.
	QueueMinCalls int64 `json:"queue_min_calls"`

	// ErrorWarnPct and ErrorCriticalPct are the error rates, in percent
	// of statements, for a warning and a critical errors finding;
	// below, any error is an info finding: 1 and 5.
	ErrorWarnPct     float64 `json:"error_warn_pct"`
	ErrorCriticalPct float64 `json:"error_critical_pct"`
}

// defaults are the thresholds of an evaluation with zero Options.
var defaults = Thresholds{
	BatchMinRate:        10,
	BatchMinCalls:       500,
	IndexTop:            10,
	IndexMinRows:        100_000,
	IndexMinPages:       1000,
	IndexMaxSelectivity: 0.2,
	PlanMinShare:        0.3,
	PlanMinMeanMS:       0.5,
	PlanMinCalls:        5,
	HotCallsPerCore:     10_000,
	HotWarnFraction:     0.5,
	KeyMinRows:          1_000_000,
	KeyMinInsertRate:    10,
	QueueMinCalls:       10,
	ErrorWarnPct:        1,
	ErrorCriticalPct:    5,
}

// thresholds are the defaults with the options given.
func (o Options) thresholds() Thresholds {
	t := defaults
	set := func(v *float64, opt float64) {
		if opt > 0 {
			*v = opt
		}
	}
	set(&t.IndexMinRows, o.IndexMinRows)
	set(&t.IndexMaxSelectivity, o.IndexMaxSelectivity)
	set(&t.HotCallsPerCore, o.HotCallsPerCore)
	set(&t.KeyMinRows, o.KeyMinRows)
	return t
}
