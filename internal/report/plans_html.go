package report

import (
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/numfmt"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// PlansSection returns the Plans section of an HTML report: a table of
// the statements explained (verdict, first change, cause) whose rows open
// on the causes; for each compared statement both plan trees side by
// side, node against aligned node, the changed nodes highlighted, with
// per-node time and buffers where analyzed; and the settings and
// statistics that differ between the servers.
//
// status holds the comparison's status of the fingerprints it found
// slower or doing more work (compareplans.Flagged).
func PlansSection(rep *explain.Report, status map[string]compare.Status, h PlanHints) htmlreport.Section {
	s := htmlreport.Section{ID: "plans", Title: "Plans"}
	if rep == nil {
		s.Text = []string{"Plans were not explained" + paren(h.Connections) + "."}
		return s
	}
	var changed, same, not int
	generic := false
	t := htmlreport.Table{
		Title:    "Statements explained on both servers",
		Columns:  []htmlreport.Column{{Label: "fingerprint"}, {Label: "verdict"}, {Label: "change or growth"}, {Label: "cause"}},
		Sortable: true,
		Empty:    "No statement was explained.",
	}
	for i := range rep.Outcomes {
		o := &rep.Outcomes[i]
		generic = generic || o.Generic
		w := planWordsOf(o, status[o.Fingerprint])
		class := ""
		switch o.Verdict {
		case explain.PlanChanged:
			changed++
			class = "bad"
		case explain.SamePlan:
			same++
		default:
			not++
			class = "muted"
		}
		m := o.Main()
		// The text as normalized, not renumbered (DisplayQuery): a
		// generic plan's conditions name its parameters by these numbers.
		d := &htmlreport.Detail{Title: o.Fingerprint, Code: o.Query}
		if o.Verdict == explain.PlanChanged {
			d.Notes = append(d.Notes, "First change: "+ChangeLong(m))
		}
		for _, c := range o.Causes {
			// The versions, said once above the table, explain a
			// same plan neither slower nor doing more work no further.
			if c.Kind == explain.CauseVersion && o.Verdict == explain.SamePlan && !flagged(status[o.Fingerprint]) {
				continue
			}
			d.Notes = append(d.Notes, "Cause: "+CauseText(c, m))
		}
		if o.Verdict == explain.PlanChanged && len(o.Causes) == 0 {
			d.Notes = append(d.Notes, "No difference in settings, indexes or statistics found explains this change.")
		}
		for _, e := range o.Explained {
			d.Notes = append(d.Notes, explainedNote(&e))
		}
		for _, p := range o.Problems {
			d.Notes = append(d.Notes, "Not explained on the "+string(p.Side)+": "+ProblemText(p))
		}
		t.Rows = append(t.Rows, htmlreport.Row{
			Cells: []htmlreport.Cell{htmlreport.Text(o.Fingerprint), htmlreport.Text(w.verdict),
				{Text: OneLine(w.what, 90), Title: w.what}, htmlreport.Text(w.cause)},
			Detail: d, Class: class,
		})
	}
	s.Cards = []htmlreport.Card{
		{Label: "plan changed", Value: i64(int64(changed)), Status: map[bool]string{true: "bad"}[changed > 0]},
		{Label: "same plan", Value: i64(int64(same))},
		{Label: "not explained", Value: i64(int64(not))},
	}
	if v := VersionsNote(rep); v != "" {
		s.Notes = append(s.Notes, v+".")
	}
	if generic {
		s.Notes = append(s.Notes, "Generic plans: no parameter values were kept, so the plans are those the servers make for unknown values"+
			paren(h.KeepSamples)+"; a custom plan for real values may differ.")
	}
	s.Tables = append(s.Tables, t)
	for i := range rep.Outcomes {
		o := &rep.Outcomes[i]
		if m := o.Main(); m != nil && (o.Verdict == explain.PlanChanged || flagged(status[o.Fingerprint])) {
			s.Tables = append(s.Tables, PlanTreesTable(o.Fingerprint, m))
		}
	}
	s.Tables = append(s.Tables, differencesTables(rep)...)
	return s
}

// explainedNote says how one comparison was made.
func explainedNote(e *explain.Explained) string {
	side := func(sp *explain.SidePlan) string {
		if sp == nil {
			return "not explained"
		}
		s := string(sp.Mode) + " plan " + sp.Plan.Hash()
		switch {
		case sp.Plan.Analyzed:
			s += ", analyzed"
		case sp.NotAnalyzed == explain.SkipVolatile:
			s += ", not analyzed: it calls " + sp.VolatileFunction + "(), a volatile function"
		case sp.NotAnalyzed == explain.SkipNotSelect:
			s += ", not analyzed: not a plain SELECT, never executed"
		}
		return s
	}
	who := "Values of the " + string(e.Sample) + " execution"
	switch e.Sample {
	case "":
		who = "Without values"
	case explain.SampleExample:
		who = "Values of an execution from the log, not kept (its normalized text cannot be planned)"
	}
	return who + ": control " + side(e.Control) + "; candidate " + side(e.Candidate) + "."
}

// PlanTreesTable lays the two plans of one comparison side by side, a
// row per aligned pair of nodes (a node one side lacks faces an empty
// cell), the rows of changed nodes marked.
func PlanTreesTable(fingerprint string, m *explain.Explained) htmlreport.Table {
	a, b := m.Control.Plan, m.Candidate.Plan
	na, nb := a.Nodes(), b.Nodes()
	da, db := nodeDepths(a), nodeDepths(b)
	ctlChanged, candChanged := m.Diff.ChangedNodes(a, b)
	// A node of the same plan that did more on the candidate is marked
	// on the candidate's side.
	for _, g := range m.Growths {
		candChanged[g.Candidate] = true
	}
	pairOf := map[int]int{}
	pairedB := map[int]bool{}
	for _, p := range m.Diff.Pairs {
		pairOf[p.Control] = p.Candidate
		pairedB[p.Candidate] = true
	}
	cols := []htmlreport.Column{{Label: "control plan"}, {Label: "est. rows", Numeric: true}, {Label: "actual", Tooltip: "rows x loops, own time", Numeric: true},
		{Label: "hit / read", Tooltip: "the node's own shared blocks found in shared_buffers / read from outside, and temporary blocks"},
		{Label: "candidate plan"}, {Label: "est. rows", Numeric: true}, {Label: "actual", Numeric: true}, {Label: "hit / read"}}
	t := htmlreport.Table{Title: "Plans of " + fingerprint + " (" + string(m.Control.Mode) + " / " + string(m.Candidate.Mode) + ")", Columns: cols}
	cells := func(nodes []*plan.Node, depth []int, i int, changed map[int]bool) []htmlreport.Cell {
		if i < 0 {
			return []htmlreport.Cell{{}, {}, {}, {}}
		}
		n := nodes[i]
		label := strings.Repeat("\u00a0\u00a0", depth[i])
		if depth[i] > 0 {
			label += "-> "
		}
		label += n.Label()
		if n.Subplan != "" {
			label = strings.Repeat("\u00a0\u00a0", depth[i]) + n.Subplan + ": " + n.Label()
		}
		// The node's name and its figures wrap (htmlreport's "node" and
		// "fig" cells), so that both trees fit a 1,400 pixel page
		// rather than push the candidate's figures off the card.
		c := []htmlreport.Cell{{Text: label, Title: nodeTitle(n), Class: htmlreport.ClassNode}, htmlreport.Num(numfmt.Figure(n.PlanRows), n.PlanRows)}
		if w, ok := plan.WorkOf(n); ok {
			c = append(c, htmlreport.Num(rowsText(w.Rows)+", "+msText(w.SelfMS), w.SelfMS))
			c[len(c)-1].Class = htmlreport.ClassFigure
			buf := ""
			if n.Buffers != nil {
				buf = blockCount(w.SharedHit) + " / " + blockCount(w.SharedRead)
				if w.TempWritten+w.TempRead > 0 {
					buf += ", temp " + blockCount(w.TempRead+w.TempWritten)
				}
			}
			if n.Spilled() {
				buf = strings.TrimPrefix(buf+"; "+spillText(n), "; ")
			}
			c = append(c, htmlreport.Cell{Text: buf, Class: htmlreport.ClassFigure})
		} else {
			c = append(c, htmlreport.Text(""), htmlreport.Text(""))
		}
		if changed[i] {
			for k := range c {
				c[k].Class = strings.TrimSpace(c[k].Class + " bad")
			}
		}
		return c
	}
	row := func(i, j int) {
		r := htmlreport.Row{Cells: append(cells(na, da, i, ctlChanged), cells(nb, db, j, candChanged)...)}
		if i >= 0 && ctlChanged[i] || j >= 0 && candChanged[j] && m.Diff != nil && !m.Diff.Same {
			r.Class = "bad"
		}
		t.Rows = append(t.Rows, r)
	}
	// Both trees in their own order; a pair whose nodes come at once is
	// one row, a node unpaired or paired out of order (a join's inputs
	// swapped) a row of its own.
	done := map[int]bool{}
	i, j := 0, 0
	for i < len(na) || j < len(nb) {
		for j < len(nb) && done[j] {
			j++
		}
		switch {
		case i < len(na) && j < len(nb) && pairOf[i] == j && hasKey(pairOf, i):
			row(i, j)
			done[j] = true
			i++
			j++
		case i < len(na) && !hasKey(pairOf, i):
			row(i, -1)
			i++
		case j < len(nb) && !pairedB[j]:
			row(-1, j)
			done[j] = true
			j++
		case i < len(na):
			row(i, pairOf[i])
			done[pairOf[i]] = true
			i++
		default:
			if j < len(nb) {
				row(-1, j)
				done[j] = true
				j++
			}
		}
	}
	return t
}

func hasKey(m map[int]int, k int) bool { _, ok := m[k]; return ok }

// depths returns each node's depth in the plan, by index in Nodes.
func nodeDepths(p *plan.Plan) []int {
	var out []int
	var walk func(n *plan.Node, d int)
	walk = func(n *plan.Node, d int) {
		out = append(out, d)
		for _, c := range n.Children {
			walk(c, d+1)
		}
	}
	if p.Root != nil {
		walk(p.Root, 0)
	}
	return out
}

// nodeTitle is a node's conditions, shown on hover.
func nodeTitle(n *plan.Node) string {
	var parts []string
	for _, kv := range [][2]string{{"Index Cond", n.IndexCond}, {"Recheck Cond", n.RecheckCond}, {"Filter", n.Filter},
		{"Hash Cond", n.HashCond}, {"Merge Cond", n.MergeCond}, {"Join Filter", n.JoinFilter}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+": "+kv[1])
		}
	}
	if len(n.SortKey) > 0 {
		parts = append(parts, "Sort Key: "+strings.Join(n.SortKey, ", "))
	}
	if len(n.GroupKey) > 0 {
		parts = append(parts, "Group Key: "+strings.Join(n.GroupKey, ", "))
	}
	if n.Actual != nil && n.Actual.RemovedByFilter > 0 {
		parts = append(parts, "Rows Removed by Filter: "+numfmt.Figure(n.Actual.RemovedByFilter))
	}
	return strings.Join(parts, "\n")
}

// differencesTables are the settings that differ between the servers,
// and the statistics of the relations the plans touch, per database.
func differencesTables(rep *explain.Report) []htmlreport.Table {
	var out []htmlreport.Table
	dbs := make([]string, 0, len(rep.Candidate))
	for db := range rep.Candidate {
		if rep.Control[db] != nil {
			dbs = append(dbs, db)
		}
	}
	slices.Sort(dbs)
	for _, db := range dbs {
		a, b := rep.Control[db], rep.Candidate[db]
		st := htmlreport.Table{Title: "Settings that differ (database " + db + ")",
			Columns: []htmlreport.Column{{Label: "setting"}, {Label: "control"}, {Label: "candidate"}},
			Empty:   "The planner and resource settings are the same on both servers."}
		if a.VersionText != b.VersionText {
			st.Rows = append(st.Rows, htmlreport.Row{Cells: []htmlreport.Cell{htmlreport.Text("server_version"), htmlreport.Text(a.VersionText), htmlreport.Text(b.VersionText)}})
		}
		for _, c := range explain.SettingDiffs(a, b) {
			st.Rows = append(st.Rows, htmlreport.Row{Cells: []htmlreport.Cell{htmlreport.Text(c.Setting), htmlreport.Text(c.Control), htmlreport.Text(c.Candidate)}})
		}
		out = append(out, st)
		rt := htmlreport.Table{Title: "Statistics of the plans' relations (database " + db + ")",
			Columns: []htmlreport.Column{{Label: "relation"}, {Label: "rows (control / candidate)"}, {Label: "last analyze"},
				{Label: "modified since"}, {Label: "indexes only on the control"}, {Label: "indexes only on the candidate"}}}
		var names []string
		for name := range b.Relations {
			names = append(names, name)
		}
		for name := range a.Relations {
			if _, ok := b.Relations[name]; !ok {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			ra, rb := a.Relations[name], b.Relations[name]
			if ra == nil && rb == nil {
				continue
			}
			r := htmlreport.Row{Cells: []htmlreport.Cell{htmlreport.Text(name),
				htmlreport.Text(relTuples(ra) + " / " + relTuples(rb)),
				htmlreport.Text(lastAnalyze(ra) + " / " + lastAnalyze(rb)),
				htmlreport.Text(modSince(ra) + " / " + modSince(rb)),
				htmlreport.Text(strings.Join(indexesOnly(ra, rb), ", ")),
				htmlreport.Text(strings.Join(indexesOnly(rb, ra), ", ")),
			}}
			if rb != nil && rb.NeverAnalyzed() || ra != nil && ra.NeverAnalyzed() || len(indexesOnly(ra, rb))+len(indexesOnly(rb, ra)) > 0 {
				r.Class = "bad"
			}
			rt.Rows = append(rt.Rows, r)
		}
		out = append(out, rt)
	}
	return out
}

func relTuples(r *explain.Relation) string {
	if r == nil {
		return "absent"
	}
	if r.Tuples < 0 {
		return "-1 (never analyzed)"
	}
	return numfmt.Figure(float64(int64(r.Tuples)))
}

func lastAnalyze(r *explain.Relation) string {
	switch {
	case r == nil:
		return "absent"
	case r.LastAnalyze != nil:
		return r.LastAnalyze.UTC().Format("2006-01-02 15:04 UTC")
	case r.ColumnStats:
		return "unknown (statistics present)"
	}
	return "never"
}

func modSince(r *explain.Relation) string {
	if r == nil {
		return "absent"
	}
	return numfmt.Thousands(i64(r.ModSinceAnalyze))
}

// indexesOnly lists the valid indexes of a that b lacks (by name), and
// a's invalid ones.
func indexesOnly(a, b *explain.Relation) []string {
	if a == nil || b == nil {
		return nil
	}
	var out []string
	for _, ix := range a.Indexes {
		switch {
		case !ix.Valid:
			out = append(out, ix.Name+" (invalid)")
		case b.Index(ix.Name) == nil:
			out = append(out, ix.Name)
		}
	}
	return out
}
