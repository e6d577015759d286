package findings

// Options are the thresholds of the findings. The zero value of a field
// means its default, given in its comment.
type Options struct {
	// BatchMinRate is the rate of single-row INSERTs into one table,
	// per second over the workload's span, from which batch-inserts
	// fires; 0 means 10.
	BatchMinRate float64 `json:"batch_min_rate"`
	// BatchMinCalls is the fewest single-row INSERTs into one table;
	// 0 means 500.
	BatchMinCalls int64 `json:"batch_min_calls"`

	// IndexTop is how many queries, by total time, missing-index
	// explains; 0 means 10.
	IndexTop int `json:"index_top"`
	// IndexMinRows and IndexMinPages make a table big enough for a
	// sequential scan on it to matter (either suffices); 0 means
	// 100,000 rows and 1,000 pages (8 MB).
	IndexMinRows  float64 `json:"index_min_rows"`
	IndexMinPages int64   `json:"index_min_pages"`
	// IndexMaxSelectivity: a scan whose filter keeps more than this
	// share of the table is left alone, an index would not help; 0
	// means 0.2.
	IndexMaxSelectivity float64 `json:"index_max_selectivity"`

	// PlanMinShare is the share of planning in a query's total time
	// (planning + execution) from which planning-heavy fires; 0 means
	// 0.3. PlanMinMeanMS is the least mean planning time, so that
	// trivial statements planned in microseconds are left alone; 0
	// means 0.5 ms. PlanMinCalls: 0 means 5.
	PlanMinShare  float64 `json:"plan_min_share"`
	PlanMinMeanMS float64 `json:"plan_min_mean_ms"`
	PlanMinCalls  int64   `json:"plan_min_calls"`

	// HotCallsPerCore is K in hot-queryid's model: one query id risks
	// pg_stat_statements spinlock contention from K x CPU cores calls
	// per second (half that with track_planning on); 0 means 10,000.
	HotCallsPerCore float64 `json:"hot_calls_per_core"`
	// HotWarnFraction is the fraction of that limit from which the
	// finding warns; 0 means 0.5.
	HotWarnFraction float64 `json:"hot_warn_fraction"`

	// KeyMinRows makes a table large for random-keys; 0 means
	// 1,000,000 rows. KeyMinInsertRate makes it insert-heavy: INSERTs
	// per second in the workload; 0 means 10.
	KeyMinRows       float64 `json:"key_min_rows"`
	KeyMinInsertRate float64 `json:"key_min_insert_rate"`

	// QueueMinCalls is the fewest calls of a polling query; 0 means 10.
	QueueMinCalls int64 `json:"queue_min_calls"`

	// ErrorWarnPct and ErrorCriticalPct are the error rates, in percent
	// of statements, for a warning and a critical errors finding;
	// below, any error is an info finding. 0 means 1 and 5.
	ErrorWarnPct     float64 `json:"error_warn_pct"`
	ErrorCriticalPct float64 `json:"error_critical_pct"`
}

func (o Options) withDefaults() Options {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.BatchMinRate, 10)
	defInt(&o.BatchMinCalls, 500)
	if o.IndexTop <= 0 {
		o.IndexTop = 10
	}
	def(&o.IndexMinRows, 100_000)
	defInt(&o.IndexMinPages, 1000)
	def(&o.IndexMaxSelectivity, 0.2)
	def(&o.PlanMinShare, 0.3)
	def(&o.PlanMinMeanMS, 0.5)
	defInt(&o.PlanMinCalls, 5)
	def(&o.HotCallsPerCore, 10_000)
	def(&o.HotWarnFraction, 0.5)
	def(&o.KeyMinRows, 1_000_000)
	def(&o.KeyMinInsertRate, 10)
	defInt(&o.QueueMinCalls, 10)
	def(&o.ErrorWarnPct, 1)
	def(&o.ErrorCriticalPct, 5)
	return o
}
