package findings

import (
	"strconv"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// parseOne parses q and returns its only statement, or nil.
func parseOne(q string) *pg_query.Node {
	tree, err := pg_query.Parse(q)
	if err != nil || len(tree.Stmts) != 1 {
		return nil
	}
	return tree.Stmts[0].Stmt
}

// insertShape is what an INSERT ... VALUES says about its target.
type insertShape struct {
	Schema, Table string
	// Columns are the named target columns; nil when the statement
	// lists none (values go to the table's columns in order).
	Columns []string
	// Rows is the number of VALUES rows; 0 for INSERT ... SELECT.
	Rows int
	// values are the expressions of the first VALUES row.
	values []*pg_query.Node
}

// Qualified is the table as the statement names it.
func (s *insertShape) Qualified() string {
	if s.Schema != "" {
		return s.Schema + "." + s.Table
	}
	return s.Table
}

// parseInsert returns the shape of an INSERT statement, or nil for any
// other statement.
func parseInsert(q string) *insertShape {
	stmt := parseOne(q)
	if stmt == nil {
		return nil
	}
	ins := stmt.GetInsertStmt()
	if ins == nil || ins.Relation == nil {
		return nil
	}
	s := &insertShape{Schema: ins.Relation.Schemaname, Table: ins.Relation.Relname}
	for _, c := range ins.Cols {
		if rt := c.GetResTarget(); rt != nil {
			s.Columns = append(s.Columns, rt.Name)
		}
	}
	if sel := ins.SelectStmt.GetSelectStmt(); sel != nil && len(sel.ValuesLists) > 0 {
		s.Rows = len(sel.ValuesLists)
		if l := sel.ValuesLists[0].GetList(); l != nil {
			s.values = l.Items
		}
	}
	return s
}

// value returns the text of the i-th value of the first row: a literal, or
// the logged parameter it refers to. ok is false for anything else (an
// expression, DEFAULT, a NULL).
func (s *insertShape) value(i int, params []*string) (string, bool) {
	if i >= len(s.values) {
		return "", false
	}
	n := s.values[i]
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	if p := n.GetParamRef(); p != nil {
		k := int(p.Number) - 1
		if k < 0 || k >= len(params) || params[k] == nil {
			return "", false
		}
		return *params[k], true
	}
	c := n.GetAConst()
	if c == nil || c.Isnull {
		return "", false
	}
	switch {
	case c.GetSval() != nil:
		return c.GetSval().Sval, true
	case c.GetIval() != nil:
		return strconv.Itoa(int(c.GetIval().Ival)), true
	case c.GetFval() != nil:
		return c.GetFval().Fval, true
	}
	return "", false
}

// statementKind is "select", "insert", "update", "delete" or "".
func statementKind(stmt *pg_query.Node) string {
	switch {
	case stmt == nil:
		return ""
	case stmt.GetSelectStmt() != nil:
		return "select"
	case stmt.GetInsertStmt() != nil:
		return "insert"
	case stmt.GetUpdateStmt() != nil:
		return "update"
	case stmt.GetDeleteStmt() != nil:
		return "delete"
	}
	return ""
}

// Queue patterns.
const (
	patternSelectForUpdate = "SELECT ... LIMIT n FOR UPDATE without SKIP LOCKED"
	patternUpdateSubquery  = "UPDATE/DELETE of rows picked by a subquery with LIMIT, without SKIP LOCKED"
)

// queuePattern recognizes a job-queue poll that makes concurrent pollers
// wait for each other: a top-level SELECT with LIMIT that locks rows and
// waits for locked ones, or an UPDATE or DELETE whose rows come from a
// subquery with LIMIT that does not skip locked rows (locking or not: an
// unlocked one lets two workers claim the same rows, a locking one queues
// them). NOWAIT is not a wait, so it does not count.
func queuePattern(q string) string {
	stmt := parseOne(q)
	if stmt == nil {
		return ""
	}
	if sel := stmt.GetSelectStmt(); sel != nil {
		if sel.LimitCount != nil && waits(sel.LockingClause) {
			return patternSelectForUpdate
		}
		return ""
	}
	var root protoreflect.Message
	switch {
	case stmt.GetUpdateStmt() != nil:
		root = stmt.GetUpdateStmt().ProtoReflect()
	case stmt.GetDeleteStmt() != nil:
		root = stmt.GetDeleteStmt().ProtoReflect()
	default:
		return ""
	}
	found := false
	walk(root, func(m protoreflect.Message) {
		sel, ok := m.Interface().(*pg_query.SelectStmt)
		if !ok || sel.LimitCount == nil {
			return
		}
		if len(sel.LockingClause) == 0 || waits(sel.LockingClause) {
			found = true
		}
	})
	if found {
		return patternUpdateSubquery
	}
	return ""
}

// waits reports whether a locking clause waits for locked rows.
func waits(clauses []*pg_query.Node) bool {
	for _, c := range clauses {
		lc := c.GetLockingClause()
		if lc == nil {
			continue
		}
		if lc.WaitPolicy != pg_query.LockWaitPolicy_LockWaitSkip && lc.WaitPolicy != pg_query.LockWaitPolicy_LockWaitError {
			return true
		}
	}
	return false
}

// walk calls f on m and every message below it.
func walk(m protoreflect.Message, f func(protoreflect.Message)) {
	f(m)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walk(l.Get(i).Message(), f)
			}
		case fd.IsMap():
		case fd.Message() != nil:
			walk(v.Message(), f)
		}
		return true
	})
}
