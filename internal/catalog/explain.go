package catalog

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// Explainer runs EXPLAIN on one connection: the one EXPLAIN runner, used
// by the findings and by the plan comparison (package explain). It is not
// safe for concurrent use, as the connection is not.
type Explainer struct {
	Conn *pgx.Conn
	// Timeout bounds each statement; 0 means 10 s.
	Timeout time.Duration
	// LockTimeout, when positive, bounds each wait for a lock (SET
	// LOCAL lock_timeout); 0 leaves the server's.
	LockTimeout time.Duration
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
	// GenericOption, with Generic, asks for it with EXPLAIN
	// (GENERIC_PLAN) instead, which PostgreSQL 16 and later have:
	// nothing is prepared.
	GenericOption bool
	// ForceCustom, with Params, sets plan_cache_mode =
	// force_custom_plan.
	ForceCustom bool
	// Analyze asks for EXPLAIN ANALYZE; see Explainer.AllowAnalyze.
	Analyze bool
	// Buffers adds BUFFERS to an EXPLAIN ANALYZE; Warm runs it once
	// before the run that is kept, so that the cache is warm, as
	// production's is.
	Buffers, Warm bool
	// Set are settings changed for this EXPLAIN only (SET LOCAL), set
	// in the order of their names.
	Set map[string]string
}

// Explained is a plan and how it was made.
type Explained struct {
	*plan.Plan
	// Mode says how the statement was explained: "literal" (a
	// statement with no parameters), "custom" (with the logged
	// values), "generic", and " analyze" is appended when it ran.
	Mode string
}

// StepError is an EXPLAIN's failure and the step that failed: "prepare"
// (PREPARE of the statement), "explain" (the EXPLAIN itself), "read"
// (its output).
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string {
	if e.Step == "read" {
		return "read EXPLAIN's output: " + e.Err.Error()
	}
	return e.Step + ": " + e.Err.Error()
}

func (e *StepError) Unwrap() error { return e.Err }

const stmtName = "pgrehearse_explain"

// Explain explains r in a read-only transaction that is rolled back.
func (e *Explainer) Explain(ctx context.Context, r Request) (*Explained, error) {
	var out *Explained
	err := e.inTx(ctx, r, func(tx pgx.Tx) error {
		var err error
		out, err = e.explain(ctx, tx, r)
		return err
	})
	return out, err
}

// Hypo is what Explainer.Hypothetical found.
type Hypo struct {
	// Before is the plan without the hypothetical index, After the plan
	// with it.
	Before, After *Explained
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
	h.After.Root.Walk(func(n *plan.Node) bool {
		h.Used = h.Used || n.Index == h.Index
		return true
	})
	return h, nil
}

// prepares reports whether r is explained through a prepared statement.
func (r *Request) prepares() bool {
	return r.Generic && !r.GenericOption || len(r.Params) > 0
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
			e.Conn.Exec(bg, "DEALLOCATE "+stmtName, pgx.QueryExecModeSimpleProtocol)
		}
	}()
	setup := []string{fmt.Sprintf("SET LOCAL statement_timeout = %d", timeout.Milliseconds())}
	if e.LockTimeout > 0 {
		setup = append(setup, fmt.Sprintf("SET LOCAL lock_timeout = %d", e.LockTimeout.Milliseconds()))
	}
	setup = append(setup, "SET LOCAL standard_conforming_strings = on")
	switch {
	case r.Generic && !r.GenericOption:
		setup = append(setup, "SET LOCAL plan_cache_mode = force_generic_plan")
	case !r.Generic && r.ForceCustom && len(r.Params) > 0:
		setup = append(setup, "SET LOCAL plan_cache_mode = force_custom_plan")
	}
	for _, k := range slices.Sorted(maps.Keys(r.Set)) {
		setup = append(setup, "SET LOCAL "+pgx.Identifier{k}.Sanitize()+" = "+QuoteLiteral(r.Set[k]))
	}
	for _, s := range setup {
		if _, err := tx.Exec(ctx, s, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
	}
	if r.prepares() {
		if _, err := tx.Exec(ctx, "PREPARE "+stmtName+" AS "+TrimStatement(r.Query), pgx.QueryExecModeSimpleProtocol); err != nil {
			return &StepError{"prepare", err}
		}
		prepared = true
	}
	return f(tx)
}

func (e *Explainer) explain(ctx context.Context, tx pgx.Tx, r Request) (*Explained, error) {
	opts := "FORMAT JSON"
	if r.Analyze {
		opts = "ANALYZE, FORMAT JSON"
		if r.Buffers {
			opts = "ANALYZE, BUFFERS, FORMAT JSON"
		}
	}
	var sql, mode string
	switch {
	case r.Generic && r.GenericOption:
		sql, mode = "EXPLAIN (GENERIC_PLAN, "+opts+") "+TrimStatement(r.Query), "generic"
	case r.Generic:
		n := max(len(r.Params), MaxParam(r.Query))
		sql, mode = "EXPLAIN ("+opts+") EXECUTE "+stmtName+ExecuteArgs(make([]*string, n)), "generic"
	case len(r.Params) > 0:
		sql, mode = "EXPLAIN ("+opts+") EXECUTE "+stmtName+ExecuteArgs(r.Params), "custom"
	default:
		sql, mode = "EXPLAIN ("+opts+") "+TrimStatement(r.Query), "literal"
	}
	runs := 1
	if r.Analyze {
		mode += " analyze"
		if r.Warm {
			runs = 2
		}
	}
	var out *Explained
	for range runs {
		text, err := explainText(ctx, tx, sql)
		if err != nil {
			return nil, &StepError{"explain", err}
		}
		p, err := plan.ParseJSON(text)
		if err != nil {
			return nil, &StepError{"read", err}
		}
		out = &Explained{Plan: p, Mode: mode}
	}
	return out, nil
}

// explainText runs an EXPLAIN (FORMAT JSON) with the simple protocol and
// returns its one value. Straight through pgconn: pgx's simple protocol
// would substitute the $n of a GENERIC_PLAN's statement (PostgreSQL 16
// and later) with arguments, and fails with "insufficient arguments"
// when there are none.
func explainText(ctx context.Context, tx pgx.Tx, sql string) ([]byte, error) {
	results, err := tx.Conn().PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(results) != 1 || len(results[0].Rows) != 1 || len(results[0].Rows[0]) != 1 {
		return nil, fmt.Errorf("EXPLAIN returned %d results, not one value", len(results))
	}
	return results[0].Rows[0][0], nil
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
