package findings

import (
	"cmp"
	"fmt"
	"slices"
)

// batchInserts flags tables that receive many single-row INSERTs per
// second. Heap's engineering blog ("How Basic Performance Analysis Saved
// Us Millions"): per-row inserts into a table with thousands of
// partial indexes spent ~55% of CPU opening indexes (ExecOpenIndices);
// batching ~50 rows per INSERT cut CPU ~10x.
func (e *eval) batchInserts() {
	w := e.w()
	if w.SpanS <= 0 {
		e.skip(IDBatchInserts, "the workload's time span is unknown, so no rate")
		return
	}
	type group struct {
		schema, table string
		single        []*Query
		singleCalls   int64
		singleMS      float64
		multiCalls    int64
		sessions      map[string]struct{}
	}
	groups := map[string]*group{}
	for i := range w.Queries {
		q := &w.Queries[i]
		s := parseInsert(q.Query)
		if s == nil || s.Rows == 0 {
			continue
		}
		g := groups[s.Qualified()]
		if g == nil {
			g = &group{schema: s.Schema, table: s.Table, sessions: map[string]struct{}{}}
			groups[s.Qualified()] = g
		}
		if s.Rows > 1 {
			g.multiCalls += q.Calls
			continue
		}
		g.single = append(g.single, q)
		g.singleCalls += q.Calls
		g.singleMS += q.TotalMS
		if oq := e.in.Observed.query(q.Fingerprint); oq != nil {
			for _, s := range oq.Sessions {
				g.sessions[s] = struct{}{}
			}
		}
	}
	total := w.TotalMS()
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		g := groups[name]
		rate := w.Rate(g.singleCalls)
		if g.singleCalls < e.th.BatchMinCalls || rate < e.th.BatchMinRate {
			continue
		}
		share := pct(g.singleMS, total)
		f := Finding{
			ID: IDBatchInserts, Severity: Warning, Subject: name,
			Title: "Single-row INSERTs into " + name,
			Summary: fmt.Sprintf("%s single-row INSERTs into %s, %s per second, %.1f%% of the workload's time",
				fnum(float64(g.singleCalls)), name, fnum(round(rate, 1)), share),
			Recommendation: "Insert rows in batches: one INSERT ... VALUES (...), (...), ... of 50 to 1,000 rows, or COPY ... FROM STDIN " +
				"for bulk loads. Each statement is planned, opens every index of the table and evaluates every partial-index " +
				"predicate and index expression once per statement: batching pays that once per batch (Heap's engineering " +
				"blog, \"How Basic Performance Analysis Saved Us Millions\": batches of ~50 events cut CPU ~10x on tables " +
				"with many partial indexes). Measure with a flame graph before " +
				"assuming where the time goes.",
		}
		f.Evidence.Figures = append(f.Evidence.Figures,
			fig("single_row_inserts", float64(g.singleCalls), ""),
			fig("inserts_per_s", rate, "/s"),
			fig("share_of_total_time_pct", share, "%"),
		)
		if g.multiCalls > 0 {
			f.Evidence.Figures = append(f.Evidence.Figures, fig("multi_row_inserts", float64(g.multiCalls), ""))
		}
		if e.in.Observed != nil && len(g.sessions) > 0 {
			n := float64(len(g.sessions))
			f.Evidence.Figures = append(f.Evidence.Figures,
				fig("sessions", n, ""), fig("inserts_per_session_per_s", rate/n, "/s"))
		} else {
			f.Evidence.Notes = append(f.Evidence.Notes, "sessions not counted for this input")
		}
		if share >= 50 {
			f.Severity = Critical
		}
		slices.SortFunc(g.single, func(a, b *Query) int { return cmp.Compare(b.Calls, a.Calls) })
		for _, q := range g.single {
			f.Evidence.Queries = append(f.Evidence.Queries, e.ref(q))
		}
		e.indexCosts(&f, g.schema, g.table)
		e.batchMeasured(&f, name)
		e.add(f)
	}
}

// batchMeasured adds to f what batching was measured to save on the
// table's rows; when it was not, its fix (untriedFixes) says how to
// measure it, in one line.
func (e *eval) batchMeasured(f *Finding, table string) {
	f.addBatchMeasure(e.in.Batched, table)
}

// AddBatchMeasure has r's batch-inserts findings say what m measured
// batching saves on their table's rows (a measure made after the
// findings: rehearse --batch-inserts' rounds).
func (r *Report) AddBatchMeasure(m *BatchMeasure) {
	if r == nil || m == nil {
		return
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.ID == IDBatchInserts {
			f.addBatchMeasure(m, f.Subject)
		}
	}
}

// addBatchMeasure says in f what m measured on table's rows; false when
// m did not batch them.
func (f *Finding) addBatchMeasure(m *BatchMeasure, table string) bool {
	said := m.measured(table)
	if said == "" {
		return false
	}
	f.Summary += "; " + said
	// Measured: its fix line says where, not how to.
	f.Fix = &Fix{Untried: untriedBatchMeasured}
	f.Evidence.Figures = append(f.Evidence.Figures,
		fig("batch_rows", float64(m.Max), ""),
		fig("batch_time_per_row_factor", m.Time.Ratio, "x"),
		fig("batch_time_per_row_factor_low", m.Time.Low, "x"),
		fig("batch_time_per_row_factor_high", m.Time.High, "x"))
	if m.WAL != nil {
		f.Evidence.Figures = append(f.Evidence.Figures,
			fig("batch_wal_per_row_factor", m.WAL.Ratio, "x"),
			fig("batch_wal_per_row_factor_low", m.WAL.Low, "x"),
			fig("batch_wal_per_row_factor_high", m.WAL.High, "x"))
	}
	return true
}

// indexCosts adds to f the partial and expression indexes of the table,
// which every INSERT evaluates.
func (e *eval) indexCosts(f *Finding, schema, name string) {
	if e.in.Catalog == nil {
		f.Evidence.Notes = append(f.Evidence.Notes, "indexes unknown: without a connection to the server, the partial and expression indexes each INSERT evaluates are not listed")
		return
	}
	t := e.table(schema, name)
	if t == nil {
		f.Evidence.Notes = append(f.Evidence.Notes, "table not found in database "+e.in.Catalog.Database)
		return
	}
	tab := Table{Title: "Partial and expression indexes of " + t.QualifiedName() + " (evaluated by every INSERT)",
		Head: []string{"index", "kind", "definition"}}
	var partial, expr int
	for _, ix := range t.Indexes {
		kind := ""
		switch {
		case ix.Partial && ix.Expression:
			kind, partial, expr = "partial, expression", partial+1, expr+1
		case ix.Partial:
			kind, partial = "partial", partial+1
		case ix.Expression:
			kind, expr = "expression", expr+1
		default:
			continue
		}
		tab.Rows = append(tab.Rows, []string{ix.Name, kind, ix.Def})
	}
	f.Evidence.Figures = append(f.Evidence.Figures,
		fig("indexes", float64(len(t.Indexes)), ""), fig("partial_indexes", float64(partial), ""), fig("expression_indexes", float64(expr), ""))
	if len(tab.Rows) > 0 {
		f.Evidence.Tables = append(f.Evidence.Tables, tab)
	}
	if partial+expr >= 10 {
		f.Severity = Critical
		f.Summary += fmt.Sprintf("; %d partial and %d expression indexes evaluated per statement", partial, expr)
	}
}
