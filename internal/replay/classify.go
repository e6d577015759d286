package replay

import (
	"strings"
	"sync"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// class is what the replay needs to know of a statement's kind.
type class struct {
	// copyIn: COPY ... FROM STDIN, whose data the log does not have.
	copyIn bool
	// readOnly: the statement cannot write (a plain SELECT, SHOW, SET,
	// transaction control...). Functions called by a SELECT may still
	// write; the session's default_transaction_read_only catches those.
	// An SQL-level EXECUTE is not readOnly here: whether it writes is its
	// prepared statement's kind, which the session knows (see sqlExecute).
	readOnly bool
	// SQL-level prepared statements, whose names the fingerprint drops
	// (EXECUTE a(1) and EXECUTE b(2) share one): the session reads the
	// name from the statement itself (preparedName).
	sqlPrepare    bool // PREPARE name AS query; readOnly is the query's
	sqlExecute    bool // EXECUTE name, also under EXPLAIN ANALYZE
	sqlDeallocate bool // DEALLOCATE name or ALL, DISCARD ALL
	// destructive names what a statement destroys or reshapes ("DROP
	// TABLE", "TRUNCATE", "DELETE without WHERE", "ALTER TABLE"...), for
	// the list a user sees before replaying against a server that
	// matters; empty for the others.
	destructive string
	// tx is what the statement does to the session's transaction block:
	// opens it (BEGIN, START TRANSACTION), ends it (COMMIT, ROLLBACK,
	// END, ABORT, PREPARE TRANSACTION) or keeps it open (COMMIT AND
	// CHAIN); txNone for the others.
	tx txEffect
}

// txEffect is a statement's effect on its session's transaction block.
type txEffect uint8

const (
	txNone txEffect = iota
	txBegin
	txEnd
)

// classifier decides statement kinds by parsing, once per fingerprint: the
// fingerprint keeps a statement's structure and drops only its constants,
// so every text of a fingerprint is of the same kind. It is safe for
// concurrent use.
type classifier struct {
	mu sync.RWMutex
	m  map[string]class
}

// maxClasses bounds the classifier's memory; beyond it, it starts over.
const maxClasses = 100_000

func newClassifier() *classifier { return &classifier{m: map[string]class{}} }

func (c *classifier) get(it fingerprint.Item) class {
	if it.Unparsed {
		return class{}
	}
	c.mu.RLock()
	cl, ok := c.m[it.Fingerprint]
	c.mu.RUnlock()
	if ok {
		return cl
	}
	cl = classify(it.Query)
	c.mu.Lock()
	if len(c.m) >= maxClasses {
		c.m = map[string]class{}
	}
	c.m[it.Fingerprint] = cl
	c.mu.Unlock()
	return cl
}

// classify parses one statement (normalized, with $n for constants).
func classify(sql string) class {
	res, err := pg_query.Parse(sql)
	if err != nil || len(res.Stmts) != 1 {
		return class{}
	}
	n := res.Stmts[0].Stmt
	if cp := n.GetCopyStmt(); cp != nil {
		stdio := cp.Filename == "" && !cp.IsProgram
		// COPY ... TO STDOUT needs nothing: exchange reads its data
		// and drops it.
		return class{copyIn: cp.IsFrom && stdio, readOnly: !cp.IsFrom && !cp.IsProgram}
	}
	cl := class{readOnly: readOnly(n), destructive: destructive(n), tx: transaction(n)}
	switch {
	case n.GetPrepareStmt() != nil:
		cl.sqlPrepare = true
	case executeOf(n) != nil:
		cl.sqlExecute = true
	case n.GetDeallocateStmt() != nil:
		cl.sqlDeallocate = true
	case n.GetDiscardStmt() != nil:
		// DISCARD ALL deallocates too; DISCARD PLANS or TEMP do not.
		cl.sqlDeallocate = n.GetDiscardStmt().Target == pg_query.DiscardMode_DISCARD_ALL
	}
	return cl
}

// executeOf returns the EXECUTE of a statement that runs one: EXECUTE
// itself, or EXPLAIN ANALYZE EXECUTE (a plain EXPLAIN does not run it).
func executeOf(n *pg_query.Node) *pg_query.ExecuteStmt {
	if e := n.GetExecuteStmt(); e != nil {
		return e
	}
	if ex := n.GetExplainStmt(); ex != nil && explainAnalyze(ex) && ex.Query != nil {
		return ex.Query.GetExecuteStmt()
	}
	return nil
}

func explainAnalyze(ex *pg_query.ExplainStmt) bool {
	for _, o := range ex.Options {
		if d := o.GetDefElem(); d != nil && strings.EqualFold(d.Defname, "analyze") {
			return defTrue(d)
		}
	}
	return false
}

// defTrue reads a boolean option as the server does; what it cannot read
// is true, which for ANALYZE is the conservative answer.
func defTrue(d *pg_query.DefElem) bool {
	switch {
	case d.Arg == nil:
		return true
	case d.Arg.GetString_() != nil:
		v := strings.ToLower(d.Arg.GetString_().Sval)
		return v != "false" && v != "off" && v != "no" && v != "0"
	case d.Arg.GetInteger() != nil:
		return d.Arg.GetInteger().Ival != 0
	case d.Arg.GetBoolean() != nil:
		return d.Arg.GetBoolean().Boolval
	}
	return true
}

// preparedName reads the prepared statement name of one PREPARE, EXECUTE
// or DEALLOCATE statement; all is true for DEALLOCATE ALL and DISCARD
// ALL. The fingerprint drops these names, so they are parsed per
// statement; the replay does so only for these statements, and only with
// --read-only.
func preparedName(sql string) (name string, all bool) {
	res, err := pg_query.Parse(sql)
	if err != nil || len(res.Stmts) != 1 {
		return "", false
	}
	n := res.Stmts[0].Stmt
	switch {
	case n.GetPrepareStmt() != nil:
		return n.GetPrepareStmt().Name, false
	case executeOf(n) != nil:
		return executeOf(n).Name, false
	case n.GetDeallocateStmt() != nil:
		d := n.GetDeallocateStmt()
		return d.Name, d.Isall || d.Name == ""
	case n.GetDiscardStmt() != nil:
		return "", true
	}
	return "", false
}

// readOnly reports whether a statement cannot write, by its parse tree.
// What it does not know is a write.
func readOnly(n *pg_query.Node) bool {
	if n == nil {
		return false
	}
	switch {
	case n.GetSelectStmt() != nil:
		return selectReadOnly(n.GetSelectStmt())
	case n.GetExplainStmt() != nil:
		ex := n.GetExplainStmt()
		if explainAnalyze(ex) {
			return readOnly(ex.Query)
		}
		return true
	case n.GetTransactionStmt() != nil, n.GetVariableSetStmt() != nil, n.GetVariableShowStmt() != nil,
		n.GetFetchStmt() != nil, n.GetClosePortalStmt() != nil, n.GetDeallocateStmt() != nil,
		n.GetDiscardStmt() != nil, n.GetListenStmt() != nil, n.GetUnlistenStmt() != nil:
		return true
	case n.GetDeclareCursorStmt() != nil:
		return readOnly(n.GetDeclareCursorStmt().Query)
	case n.GetPrepareStmt() != nil:
		return readOnly(n.GetPrepareStmt().Query)
	}
	return false
}

func selectReadOnly(s *pg_query.SelectStmt) bool {
	if s == nil {
		return true
	}
	if s.IntoClause != nil || len(s.LockingClause) > 0 {
		return false
	}
	if w := s.WithClause; w != nil {
		for _, c := range w.Ctes {
			if cte := c.GetCommonTableExpr(); cte != nil && !readOnly(cte.Ctequery) {
				return false
			}
		}
	}
	return selectReadOnly(s.Larg) && selectReadOnly(s.Rarg)
}

// destructive names what n destroys or reshapes, or "".
func destructive(n *pg_query.Node) string {
	switch {
	case n.GetDropStmt() != nil:
		return "DROP " + objectName(n.GetDropStmt().RemoveType)
	case n.GetDropdbStmt() != nil:
		return "DROP DATABASE"
	case n.GetDropRoleStmt() != nil:
		return "DROP ROLE"
	case n.GetDropOwnedStmt() != nil:
		return "DROP OWNED"
	case n.GetTruncateStmt() != nil:
		return "TRUNCATE"
	case n.GetDeleteStmt() != nil && n.GetDeleteStmt().WhereClause == nil:
		return "DELETE without WHERE"
	case n.GetUpdateStmt() != nil && n.GetUpdateStmt().WhereClause == nil:
		return "UPDATE without WHERE"
	case n.GetAlterTableStmt() != nil:
		return "ALTER " + objectName(n.GetAlterTableStmt().Objtype)
	case n.GetRenameStmt() != nil:
		return "ALTER " + objectName(n.GetRenameStmt().RenameType) + " RENAME"
	case n.GetAlterSystemStmt() != nil:
		return "ALTER SYSTEM"
	case n.GetAlterDatabaseStmt() != nil, n.GetAlterDatabaseSetStmt() != nil:
		return "ALTER DATABASE"
	case n.GetAlterRoleStmt() != nil:
		return "ALTER ROLE"
	}
	return ""
}

// objectName is "TABLE" for OBJECT_TABLE, "MATERIALIZED VIEW" for
// OBJECT_MATVIEW.
func objectName(t pg_query.ObjectType) string {
	name := strings.TrimPrefix(t.String(), "OBJECT_")
	if name == "MATVIEW" {
		return "MATERIALIZED VIEW"
	}
	return strings.ReplaceAll(name, "_", " ")
}

// transaction is n's effect on the transaction block.
func transaction(n *pg_query.Node) txEffect {
	t := n.GetTransactionStmt()
	if t == nil {
		return txNone
	}
	switch t.Kind {
	case pg_query.TransactionStmtKind_TRANS_STMT_BEGIN, pg_query.TransactionStmtKind_TRANS_STMT_START:
		return txBegin
	case pg_query.TransactionStmtKind_TRANS_STMT_COMMIT, pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		if t.Chain {
			return txBegin // ends one and opens the next
		}
		return txEnd
	case pg_query.TransactionStmtKind_TRANS_STMT_PREPARE:
		return txEnd
	}
	return txNone
}
