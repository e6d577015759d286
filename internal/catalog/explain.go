package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// Explainer runs EXPLAIN on one connection. It is not safe for concurrent
// use, as the connection is not.
type Explainer struct {
	Conn *pgx.Conn
	// Timeout bounds each statement; 0 means 10 s.
	Timeout time.Duration
	// AllowAnalyze lets a Request ask for EXPLAIN ANALYZE, which runs
	// the statement; even then only a plain SELECT is analyzed.
	AllowAnalyze bool
}

// Request is a statement to explain.
type Request struct {
	// Query is one SQL statement, with $n placeholders when it has
	// parameters.
	Query string
	// Params are the values of $1, $2, ... in text form, nil for NULL.
	// With parameters and Generic unset, they are bound as logged and
	// the planner sees them (a custom plan, as the server made it for
	// the first five executions of a prepared statement).
	Params []*string
	// Generic asks for the generic plan (plan_cache_mode =
	// force_generic_plan), for a statement whose values are unknown:
	// the placeholders are bound to NULL, which a generic plan ignores.
	Generic bool
	// Analyze asks for EXPLAIN ANALYZE; see Explainer.AllowAnalyze.
	Analyze bool
}

// Plan is an EXPLAIN (FORMAT JSON) result.
type Plan struct {
	Root PlanNode `json:"Plan"`
	// PlanningMS is set by EXPLAIN ANALYZE only.
	PlanningMS float64 `json:"Planning Time"`
	// Mode says how the statement was explained: "literal" (a
	// statement with no parameters), "custom" (with the logged
	// values), "generic", and " analyze" is appended when it ran.
	Mode string `json:"-"`
}

// PlanNode is one node of a plan, with the fields the findings read.
type PlanNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Alias     string     `json:"Alias"`
	IndexName string     `json:"Index Name"`
	Filter    string     `json:"Filter"`
	PlanRows  float64    `json:"Plan Rows"`
	TotalCost float64    `json:"Total Cost"`
	Removed   float64    `json:"Rows Removed by Filter"`
	Plans     []PlanNode `json:"Plans"`
}

// Walk calls f on n and every node below it, depth first.
func (n *PlanNode) Walk(f func(*PlanNode)) {
	f(n)
	for i := range n.Plans {
		n.Plans[i].Walk(f)
	}
}

const stmtName = "pgrehearse_explain"

// Explain explains r in a read-only transaction that is rolled back.
func (e *Explainer) Explain(ctx context.Context, r Request) (*Plan, error) {
	var plan *Plan
	err := e.inTx(ctx, r, func(tx pgx.Tx) error {
		var err error
		plan, err = e.explain(ctx, tx, r)
		return err
	})
	return plan, err
}

// Hypo is what Explainer.Hypothetical found.
type Hypo struct {
	// Before is the plan without the hypothetical index, After the plan
	// with it.
	Before, After *Plan
	// Index is the name hypopg gave the hypothetical index, as EXPLAIN
	// prints it ("<13828>btree_queue_items_referenced_at").
	Index string
	// Used says whether After reads Index.
	Used bool
}

// Hypothetical explains r, then creates the hypothetical index ddl (a
// CREATE INDEX statement, without CONCURRENTLY) with hypopg, which must be
// installed in the database, and explains r again.
//
// Nothing is written to the server: hypopg keeps hypothetical indexes in
// the memory of this connection's backend. They are not transactional, so a
// rollback would leave them behind; every hypothetical index of the
// session is removed with hypopg_reset() before the first EXPLAIN and
// after the last one, whatever happened in between. Each EXPLAIN prepares
// the statement afresh: a generic plan cached by the first would
// otherwise be reused by the second, blind to the new index, since
// creating a hypothetical index invalidates no plan.
func (e *Explainer) Hypothetical(ctx context.Context, r Request, ddl string) (h *Hypo, err error) {
	r.Analyze = false // a hypothetical index cannot be executed
	reset := func(ctx context.Context) error {
		err := e.inTx(ctx, Request{}, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "SELECT hypopg_reset()")
			return err
		})
		if err != nil {
			return fmt.Errorf("hypopg_reset: %w", err)
		}
		return nil
	}
	if err := reset(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if rerr := reset(context.WithoutCancel(ctx)); rerr != nil && err == nil {
			h, err = nil, rerr
		}
	}()
	h = &Hypo{}
	if h.Before, err = e.Explain(ctx, r); err != nil {
		return nil, err
	}
	err = e.inTx(ctx, Request{}, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT indexname FROM hypopg_create_index($1)", ddl).Scan(&h.Index)
	})
	if err != nil {
		return nil, fmt.Errorf("hypopg_create_index: %w", err)
	}
	if h.After, err = e.Explain(ctx, r); err != nil {
		return nil, err
	}
	h.After.Root.Walk(func(n *PlanNode) { h.Used = h.Used || n.IndexName == h.Index })
	return h, nil
}

func (e *Explainer) inTx(ctx context.Context, r Request, f func(pgx.Tx) error) error {
	if r.Analyze && !e.AllowAnalyze {
		return fmt.Errorf("EXPLAIN ANALYZE not allowed")
	}
	if r.Analyze && !PlainSelect(r.Query) {
		return ErrNotReadOnly
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	tx, err := e.Conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	prepared := false
	defer func() {
		bg := context.WithoutCancel(ctx)
		tx.Rollback(bg)
		// PREPARE is not transactional: the statement outlives the
		// rollback.
		if prepared {
			e.Conn.Exec(bg, "DEALLOCATE "+stmtName)
		}
	}()
	setup := []string{
		fmt.Sprintf("SET LOCAL statement_timeout = %d", timeout.Milliseconds()),
		"SET LOCAL standard_conforming_strings = on",
	}
	if r.Generic {
		setup = append(setup, "SET LOCAL plan_cache_mode = force_generic_plan")
	}
	for _, s := range setup {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	if r.Generic || len(r.Params) > 0 {
		if _, err := tx.Exec(ctx, "PREPARE "+stmtName+" AS "+TrimStatement(r.Query)); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		prepared = true
	}
	return f(tx)
}

func (e *Explainer) explain(ctx context.Context, tx pgx.Tx, r Request) (*Plan, error) {
	opts := "FORMAT JSON"
	if r.Analyze {
		opts = "ANALYZE, FORMAT JSON"
	}
	var sql, mode string
	switch {
	case r.Generic:
		n := max(len(r.Params), MaxParam(r.Query))
		sql, mode = "EXPLAIN ("+opts+") EXECUTE "+stmtName+ExecuteArgs(make([]*string, n)), "generic"
	case len(r.Params) > 0:
		sql, mode = "EXPLAIN ("+opts+") EXECUTE "+stmtName+ExecuteArgs(r.Params), "custom"
	default:
		sql, mode = "EXPLAIN ("+opts+") "+TrimStatement(r.Query), "literal"
	}
	if r.Analyze {
		mode += " analyze"
	}
	var out string
	if err := tx.QueryRow(ctx, sql, pgx.QueryExecModeSimpleProtocol).Scan(&out); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	var plans []Plan
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		return nil, fmt.Errorf("explain: unexpected output %.200q: %v", out, err)
	}
	plans[0].Mode = mode
	return &plans[0], nil
}

// ExecuteArgs renders parameter values as an EXECUTE argument list of
// quoted literals, whose type the prepared statement decides: "" without
// parameters, else "('a', NULL)".
func ExecuteArgs(params []*string) string {
	if len(params) == 0 {
		return ""
	}
	parts := make([]string, len(params))
	for i, p := range params {
		if p == nil {
			parts[i] = "NULL"
		} else {
			parts[i] = QuoteLiteral(*p)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// QuoteLiteral quotes s as a string literal, with standard_conforming_strings on.
func QuoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

var paramRef = regexp.MustCompile(`\$(\d+)`)

// MaxParam is the highest $n in a normalized query, which holds no
// literals that could contain one.
func MaxParam(q string) int {
	n := 0
	for _, m := range paramRef.FindAllStringSubmatch(q, -1) {
		// The protocol allows 65,535 parameters: a larger $n is no
		// parameter, and must not size an argument list.
		if v, err := strconv.Atoi(m[1]); err == nil && v <= 65535 {
			n = max(n, v)
		}
	}
	return n
}

// TrimStatement is q without surrounding space and trailing semicolons,
// to follow PREPARE ... AS or EXPLAIN.
func TrimStatement(q string) string {
	return strings.TrimRight(strings.TrimSpace(q), "; \t\n")
}

// PlainSelect reports whether q is one SELECT that neither locks rows nor
// writes, in a CTE, a subquery or INTO: the only statement EXPLAIN
// ANALYZE may run. It is fingerprint's answer (Class.PlainSelect).
func PlainSelect(q string) bool { return fingerprint.PlainSelect(q) }
