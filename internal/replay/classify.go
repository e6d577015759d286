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
	// copyOut: COPY ... TO STDOUT, which is read with the copy protocol.
	copyOut bool
	// readOnly: the statement cannot write (a plain SELECT, SHOW, SET,
	// transaction control...). Functions called by a SELECT may still
	// write; the session's default_transaction_read_only catches those.
	readOnly bool
}

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
		return class{copyIn: cp.IsFrom && stdio, copyOut: !cp.IsFrom && stdio, readOnly: !cp.IsFrom && !cp.IsProgram}
	}
	return class{readOnly: readOnly(n)}
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
		for _, o := range ex.Options {
			if d := o.GetDefElem(); d != nil && strings.EqualFold(d.Defname, "analyze") {
				return readOnly(ex.Query)
			}
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
