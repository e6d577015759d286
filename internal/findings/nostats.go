package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
)

// noStatistics flags the big tables the workload touches that have no
// planner statistics on the server: no rows in pg_stats (never analyzed,
// or a schema restored without them: pg_upgrade before PostgreSQL 18
// carries none over, 18's carries the tables' and columns' but not the
// extended statistics), or extended statistics never computed. Until an
// ANALYZE the planner estimates from the table's size and default
// selectivities, so its plans may differ from the server the workload
// came from, and a rehearsal on it measures those plans.
func (e *eval) noStatistics() {
	c := e.in.Catalog
	if c == nil {
		e.lacking(IDNoStatistics, LackServer, "planner statistics unknown")
		return
	}
	queries := map[*catalog.Table][]QueryRef{}
	var order []*catalog.Table
	for i := range e.w().Queries {
		q := &e.w().Queries[i]
		cl := classOf(q.Query)
		if cl == nil {
			continue
		}
		seen := map[*catalog.Table]bool{}
		for _, n := range cl.Touch {
			t := c.Table(n.Schema, n.Name)
			if t == nil || seen[t] || t.SizePages < e.th.IndexMinPages {
				continue
			}
			seen[t] = true
			if queries[t] == nil {
				order = append(order, t)
			}
			queries[t] = append(queries[t], e.ref(q))
		}
	}
	var rows [][]string
	var names, unreadable []string
	var refs []QueryRef
	seenRef := map[string]bool{}
	for _, t := range order {
		missing := ""
		switch {
		case !t.Readable:
			unreadable = append(unreadable, t.QualifiedName())
			continue
		case !t.ColumnStats:
			missing = "no column statistics in pg_stats"
		case len(t.UnbuiltStatistics) > 0:
			missing = "extended statistics not computed: " + strings.Join(t.UnbuiltStatistics, ", ")
		default:
			continue
		}
		analyzed := "never (pg_stat_user_tables)"
		if t.Analyzed {
			analyzed = "yes"
		}
		names = append(names, t.QualifiedName()+" ("+missing+")")
		rows = append(rows, []string{t.QualifiedName(), fnum(float64(t.SizePages)), missing, analyzed})
		for _, r := range queries[t] {
			if !seenRef[r.Fingerprint] {
				seenRef[r.Fingerprint] = true
				refs = append(refs, r)
			}
		}
	}
	if len(unreadable) > 0 {
		e.skip(IDNoStatistics, "no SELECT privilege, so pg_stats shows none of their rows: "+strings.Join(unreadable, ", "))
	}
	if len(names) == 0 {
		return
	}
	slices.SortStableFunc(refs, func(a, b QueryRef) int {
		switch {
		case a.TotalMS > b.TotalMS:
			return -1
		case a.TotalMS < b.TotalMS:
			return 1
		}
		return 0
	})
	e.add(Finding{
		ID: IDNoStatistics, Severity: Warning, Subject: c.Database,
		Title: "Tables without planner statistics",
		Summary: fmt.Sprintf("%s the workload touches lacking planner statistics on this server: %s. "+
			"Until ANALYZE the planner estimates from their size and default selectivities, "+
			"so plans may differ from a server that has statistics, and what was measured here may not hold after ANALYZE",
			tablesCount(len(names)), strings.Join(names, "; ")),
		Recommendation: "Run ANALYZE on them before rehearsing, as production will have it: after pg_upgrade, " +
			"vacuumdb --all --analyze-in-stages (--missing-stats-only from PostgreSQL 18, whose pg_upgrade carries the " +
			"tables' statistics but not the extended ones). To rehearse the hour right after an upgrade instead, keep " +
			"them as they are and read the plans as those of a server without statistics.",
		Evidence: Evidence{
			Figures: []Figure{fig("tables_without_statistics", float64(len(names)), "")},
			Queries: refs,
			Tables: []Table{{Title: "Tables without planner statistics", Head: []string{"table", "pages", "missing", "analyzed"},
				Rows: rows}},
			Notes: []string{fmt.Sprintf("tables of at least %d pages (pg_relation_size) that the workload's statements touch", e.th.IndexMinPages)},
		},
	})
}

// tablesCount is "1 table" or "n tables".
func tablesCount(n int) string {
	if n == 1 {
		return "1 table"
	}
	return fmt.Sprintf("%d tables", n)
}
