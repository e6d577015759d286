package findings

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// missingIndex explains the top queries by total time and flags
// sequential scans with a filter on big tables. Channable's engineering blog: a job
// queue's poll took 23 s after a new filter column without an index made
// the planner scan the table; a composite index fixed it.
func (e *eval) missingIndex() {
	if e.in.Explainer == nil || e.in.Catalog == nil {
		e.lacking(IDMissingIndex, LackServer, "plans cannot be explained")
		return
	}
	w := e.w()
	byTable := map[string]*Finding{}
	verdicts := map[string]hypoVerdict{}
	var order []string
	n := 0
	total := w.TotalMS()
	for i := range w.Queries {
		if n >= e.th.IndexTop {
			break
		}
		q := &w.Queries[i]
		kind := statementKind(classOf(q.Query))
		if kind != "select" && kind != "update" && kind != "delete" {
			continue
		}
		n++
		ex, req, how, err := e.explain(q)
		if err != nil {
			e.skip(IDMissingIndex, fmt.Sprintf("query %s not explained: %v", q.Fingerprint, err))
			continue
		}
		ex.Root.Walk(func(node *plan.Node) bool {
			if node.Type != "Seq Scan" || node.Filter == "" || node.Relation == "" {
				return true
			}
			t := e.table("", node.Relation)
			if t == nil || (t.Tuples < e.th.IndexMinRows && t.Pages < e.th.IndexMinPages) {
				return true
			}
			if t.Tuples > 0 && node.PlanRows/t.Tuples > e.th.IndexMaxSelectivity {
				return true // most of the table qualifies: a scan is right
			}
			cols := filterColumns(node.Filter, t)
			if len(cols) == 0 {
				return true
			}
			if ix := leadingIndex(t, cols); ix != "" {
				e.skip(IDMissingIndex, fmt.Sprintf("query %s scans %s although index %s starts with a filter column: the planner judged it worse",
					q.Fingerprint, t.QualifiedName(), ix))
				return true
			}
			ddl := fmt.Sprintf("CREATE INDEX CONCURRENTLY ON %s (%s)", t.QualifiedName(), quoteAll(cols))
			key := ddl
			f := byTable[key]
			if f == nil {
				f = &Finding{
					ID: IDMissingIndex, Severity: Warning, Subject: t.QualifiedName() + " (" + strings.Join(cols, ", ") + ")",
					Title: "Sequential scan of " + t.QualifiedName() + " behind a filter",
					Recommendation: "Create an index on the filter's columns, equality columns first: " + ddl +
						". Then check the plan again with EXPLAIN; a query whose filter keeps many rows may still rightly scan.",
				}
				f.Evidence.Figures = append(f.Evidence.Figures,
					fig("table_rows", t.Tuples, ""), fig("table_pages", float64(t.Pages), ""),
					fig("plan_rows", node.PlanRows, ""), fig("scan_cost", node.TotalCost, ""))
				f.Evidence.Tables = append(f.Evidence.Tables, Table{Title: "Plan node", Head: []string{"node", "table", "filter", "filter columns", "plan"},
					Rows: [][]string{{node.Type, t.QualifiedName(), node.Filter, strings.Join(cols, ", "), how}}})
				verdicts[key] = e.verify(f, req, ddl)
				byTable[key] = f
				order = append(order, key)
			}
			f.Evidence.Queries = append(f.Evidence.Queries, e.ref(q))
			return true
		})
	}
	for _, key := range order {
		f := byTable[key]
		var ms float64
		for _, r := range f.Evidence.Queries {
			ms += r.TotalMS
		}
		share := pct(ms, total)
		f.Evidence.Figures = append(f.Evidence.Figures, fig("share_of_total_time_pct", share, "%"))
		f.Summary = fmt.Sprintf("%d of the top queries scan %s (%s rows) with filter %s: %.1f%% of the workload's time",
			len(f.Evidence.Queries), strings.SplitN(f.Subject, " ", 2)[0], fnum(f.Evidence.Figures[0].Value),
			f.Evidence.Tables[0].Rows[0][2], share)
		if verdicts[key] != hypoNotUsed {
			// On a copy nothing else runs: no need to build it
			// concurrently, which takes two scans.
			f.Fix = &Fix{SQL: strings.Replace(key, "CREATE INDEX CONCURRENTLY ", "CREATE INDEX ", 1), Relation: strings.SplitN(f.Subject, " ", 2)[0]}
		}
		switch {
		case verdicts[key] == hypoNotUsed:
			f.Summary += "; the planner would not use the suggested index (hypopg)"
		case share >= 20:
			f.Severity = Critical
		}
		e.add(*f)
	}
}

// explain explains q as it ran: with the values of its slowest logged
// execution when the input kept one (Observed), else its generic plan
// when its normalized text prepares, else with a real execution read
// from its logs (Input.Examples), whose plan is redacted since its values
// are not to be kept. A normalized text the server refuses ("interval
// $3", "$2 + $3") is never the answer: without any execution it is
// errNoSample. It returns the request that worked, for verify to explain
// again.
func (e *eval) explain(q *Query) (*catalog.Explained, catalog.Request, string, error) {
	var reqs []catalog.Request
	if oq := e.in.Observed.query(q.Fingerprint); oq != nil && oq.Sample != nil && oq.Sample.Complete {
		s := oq.Sample
		reqs = append(reqs, catalog.Request{Query: s.Query, Params: s.Params})
	}
	// The normalized text's placeholders stand for literals whose values
	// are gone: only the generic plan ignores them.
	reqs = append(reqs, catalog.Request{Query: q.Query, Generic: true})
	var err error
	for _, r := range reqs {
		var ex *catalog.Explained
		if ex, err = e.in.Explainer.Explain(e.ctx, r); err == nil {
			return ex, r, explainedHow(ex), nil
		}
	}
	if len(reqs) == 1 && refused(err) && e.in.Examples != nil {
		if s := e.in.Examples(q.Fingerprint); s != nil {
			r := catalog.Request{Query: s.Query, Params: s.Params}
			ex, exErr := e.in.Explainer.Explain(e.ctx, r)
			if exErr == nil {
				// A plan of this text is the server's, fresh: the
				// plans' explainer serves normalized texts only.
				ex.Plan.Redact()
				return ex, r, explainedHow(ex), nil
			}
			err = fmt.Errorf("neither its normalized text nor an execution read from its logs plans: %w", exErr)
			return nil, catalog.Request{}, "", err
		}
	}
	if untyped(err) {
		if len(reqs) == 1 {
			return nil, catalog.Request{}, "", errNoSample{fmt.Errorf("the server cannot infer the types of its parameters from the normalized query alone (as in $2 + $3, where the log had two constants), so its generic plan cannot be prepared: %w", err)}
		}
		err = fmt.Errorf("the server cannot infer the types of its parameters from the normalized query alone (as in $2 + $3, where the log had two constants), so its generic plan cannot be prepared, and its logged execution did not plan either: %w", err)
	} else if len(reqs) == 1 && refused(err) {
		return nil, catalog.Request{}, "", errNoSample{fmt.Errorf("its normalized text does not prepare (a constant where a parameter cannot stand, as in interval $1): %w", err)}
	}
	return nil, catalog.Request{}, "", err
}

// explainedHow says how a plan was made, for the finding's evidence.
func explainedHow(ex *catalog.Explained) string {
	return map[string]string{
		"literal": "EXPLAIN of the logged statement",
		"custom":  "EXPLAIN EXECUTE with the logged parameter values",
		"generic": "EXPLAIN EXECUTE of the generic plan (plan_cache_mode = force_generic_plan)",
	}[ex.Mode]
}

// errNoSample is explain's error for a statement that has no execution
// to plan (no sample kept, none read from its logs) and whose normalized
// text the server refuses: "no sample", and why the text is not enough.
type errNoSample struct{ why error }

func (e errNoSample) Error() string { return "no sample: " + e.why.Error() }
func (e errNoSample) Unwrap() error { return e.why }

// refused reports whether err is the server refusing a normalized text
// itself, which a real execution mends: a syntax error where a constant
// became a parameter ("interval $3"), or parameters whose types it
// cannot infer (untyped).
func refused(err error) bool {
	const syntaxError = "42601"
	var pe *pgconn.PgError
	return untyped(err) || errors.As(err, &pe) && pe.Code == syntaxError
}

// untyped reports whether err is the server's refusal to prepare a
// statement whose parameters' types it cannot infer: an operator or a
// function of parameters alone (42725, "operator is not unique: unknown +
// unknown"), or a parameter with no context (42P18).
func untyped(err error) bool {
	const ambiguousFunction, indeterminateDatatype = "42725", "42P18"
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == ambiguousFunction || pe.Code == indeterminateDatatype)
}

// hypoVerdict is what verify concluded about a suggested index.
type hypoVerdict int

const (
	hypoUnverified hypoVerdict = iota // hypopg missing, or its check failed
	hypoUsed                          // the planner uses the hypothetical index
	hypoNotUsed                       // the planner keeps its plan despite it
)

// verify checks a suggested index with hypopg when it is installed in the
// database: the statement is explained again, as r, with the index
// created hypothetically. When the planner would use it, the evidence
// gets the plan costs before and after. When it would not (the filter
// keeps much of the table, or tests an expression of the column that an
// index on the column cannot serve), the suggestion is withdrawn: the
// finding stays, as info, so that the scan is still reported, but its
// recommendation no longer offers the index. Without hypopg the finding
// says how to install it.
func (e *eval) verify(f *Finding, r catalog.Request, ddl string) hypoVerdict {
	create := "CREATE EXTENSION hypopg; in database " + e.in.Catalog.Database
	switch e.in.Catalog.HypoPG {
	case "installed":
	case "available":
		f.Evidence.Notes = append(f.Evidence.Notes, "not verified with a hypothetical index: hypopg is available on the server but not installed in this database; run "+create+" (it writes nothing but the extension's functions) and analyze again")
		return hypoUnverified
	default:
		pkg := "postgresql-<major>-hypopg"
		if v := e.in.Catalog.ServerVersion; v >= 100000 {
			pkg = fmt.Sprintf("postgresql-%d-hypopg", v/10000)
		}
		f.Evidence.Notes = append(f.Evidence.Notes, "not verified with a hypothetical index: hypopg is not installed on the server; install it (Debian and Ubuntu package "+pkg+
			", or from https://github.com/HypoPG/hypopg), then run "+create+" and analyze again")
		return hypoUnverified
	}
	h, err := e.in.Explainer.Hypothetical(e.ctx, r, strings.Replace(ddl, " CONCURRENTLY", "", 1))
	if err != nil {
		f.Evidence.Notes = append(f.Evidence.Notes, "not verified: the hypopg check failed: "+err.Error())
		return hypoUnverified
	}
	before, after := h.Before.Root.TotalCost, h.After.Root.TotalCost
	f.Evidence.Figures = append(f.Evidence.Figures,
		fig("hypopg_cost_before", before, ""), fig("hypopg_cost_after", after, ""))
	scans := planScans(h.After.Root)
	if h.Used {
		f.Evidence.Notes = append(f.Evidence.Notes, fmt.Sprintf(
			"verified with hypopg: with the index created hypothetically the plan would use it (%s); estimated cost %s -> %s (%s)",
			scans, fnum(before), fnum(after), cheaper(before, after)))
		return hypoUsed
	}
	f.Evidence.Notes = append(f.Evidence.Notes, fmt.Sprintf(
		"hypopg: the hypothetical index did not help: with it created hypothetically the planner still chose %s; estimated cost %s -> %s",
		scans, fnum(before), fnum(after)))
	f.Severity = Info
	f.Title = "Sequential scan of " + strings.SplitN(f.Subject, " ", 2)[0] + " that an index on the filter's columns would not avoid"
	f.Recommendation = "Do not create " + ddl + " for this query: hypopg shows the planner would not use it. " +
		"If the filter keeps much of the table, the scan is the right plan; if it tests an expression of a column " +
		"(a function, an operator, a cast), an index on that expression, or a filter on the bare column, may help: check it with hypopg_create_index."
	return hypoNotUsed
}

// planScans describes the scan nodes of a plan ("Seq Scan on t, Index
// Scan using i on t").
func planScans(root *plan.Node) string {
	var out []string
	root.Walk(func(n *plan.Node) bool {
		if n.Relation == "" && n.Index == "" {
			return true
		}
		s := n.Type
		if n.Index != "" {
			s += " using " + n.Index
		}
		if n.Relation != "" {
			s += " on " + n.Relation
		}
		out = append(out, s)
		return true
	})
	if len(out) == 0 {
		return "a plan without scans"
	}
	return strings.Join(out, ", ")
}

// cheaper says how many times cheaper after is than before.
func cheaper(before, after float64) string {
	if after <= 0 {
		return "cheaper"
	}
	return fmt.Sprintf("%sx cheaper", fnum(before/after))
}

var identRe = regexp.MustCompile(`"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*`)

// filterColumns returns the table's columns a plan's Filter uses, in the
// order of a composite index: equality tests first (usually the most
// selective), then IS NULL tests, then the others (ranges), each in order
// of appearance.
func filterColumns(filter string, t *catalog.Table) []string {
	var eq, null, other []string
	seen := map[string]bool{}
	for _, loc := range identRe.FindAllStringIndex(filter, -1) {
		id := filter[loc[0]:loc[1]]
		if strings.HasPrefix(id, `"`) {
			id = strings.ReplaceAll(id[1:len(id)-1], `""`, `"`)
		}
		// A type name after "::" is not a column.
		if loc[0] >= 2 && filter[loc[0]-2:loc[0]] == "::" {
			continue
		}
		if t.Column(id) == nil || seen[id] {
			continue
		}
		seen[id] = true
		rest := strings.TrimLeft(filter[loc[1]:], ") ")
		switch {
		case strings.HasPrefix(rest, "= "):
			eq = append(eq, id)
		case strings.HasPrefix(rest, "IS NULL"):
			null = append(null, id)
		default:
			other = append(other, id)
		}
	}
	return append(append(eq, null...), other...)
}

// leadingIndex returns an index of t whose first column is one of cols.
func leadingIndex(t *catalog.Table, cols []string) string {
	for _, ix := range t.Indexes {
		if len(ix.Columns) > 0 && !ix.Partial && slices.Contains(cols, ix.Columns[0]) {
			return ix.Name
		}
	}
	return ""
}

func quoteAll(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = catalog.QuoteIdent(c)
	}
	return strings.Join(q, ", ")
}
