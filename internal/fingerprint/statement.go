package fingerprint

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Kind is the command a statement is, at its top level.
type Kind uint8

// Statement kinds.
const (
	// KindOther: anything but the four below (utility statements,
	// EXPLAIN, DDL, transaction control...).
	KindOther Kind = iota
	// KindSelect: SELECT, VALUES, TABLE, with or without WITH.
	KindSelect
	KindInsert
	KindUpdate
	KindDelete
	KindMerge
)

// Insert is what an INSERT says about its target: the Class of an
// INSERT has one, any other statement's nil.
type Insert struct {
	Rel Name
	// Columns are the named target columns; nil when the statement
	// lists none (values go to the table's columns in order).
	Columns []string
	// Rows is the number of VALUES rows; 0 for INSERT ... SELECT.
	Rows int
	// Values are the first VALUES row's values, as far as the text
	// tells them.
	Values []Value
}

// Value is one value of an INSERT's first VALUES row: a bind parameter
// ($Param), a literal (Literal is its text), or anything else (an
// expression, DEFAULT, NULL: neither set). A cast around a parameter or
// a literal is looked through.
type Value struct {
	Param     int
	Literal   string
	IsLiteral bool
}

// QueueShape says whether a statement is a job-queue poll that makes
// concurrent pollers wait for each other.
type QueueShape uint8

// Queue shapes.
const (
	QueueNone QueueShape = iota
	// QueueSelectLimitLocks: a top-level SELECT with LIMIT that locks
	// rows and waits for locked ones (not SKIP LOCKED, not NOWAIT).
	QueueSelectLimitLocks
	// QueueModifyLimitSubquery: an UPDATE or DELETE whose rows come from
	// a subquery with LIMIT that does not skip locked rows, locking or
	// not (an unlocked one lets two workers claim the same rows, a
	// locking one queues them).
	QueueModifyLimitSubquery
)

// ErrSeveral is Statement's answer for a text that holds other than one
// statement.
var ErrSeveral = errors.New("the text holds other than one statement")

// Statements parses sql once and returns the Class of each of its
// statements; err is the parser's when it refuses the text. Answers are
// remembered by exact text (within a bounded memory), so every package
// that asks about the same text shares one parse: this and Item.Class
// are the only ways into the classifier.
func Statements(sql string) ([]*Class, error) {
	return memo.get(sql)
}

// Statement is Statements for a text of one statement: ErrSeveral when
// it holds none or several.
func Statement(sql string) (*Class, error) {
	cls, err := Statements(sql)
	if err != nil {
		return nil, err
	}
	if len(cls) != 1 {
		return nil, ErrSeveral
	}
	return cls[0], nil
}

// PlainSelect reports whether sql is one SELECT (or VALUES) that writes
// nothing and locks no row, in any CTE, subquery or branch: the only
// statement that EXPLAIN ANALYZE may run.
func PlainSelect(sql string) bool {
	c, err := Statement(sql)
	return err == nil && c.PlainSelect
}

// FuncNames returns the names of the functions c calls, without schema,
// each once in order of first call: a function named with its database
// (db.schema.f, which the server refuses) is f.
func (c *Class) FuncNames() []string {
	return c.funcNames
}

// memoEntry is a text's answer.
type memoEntry struct {
	cls []*Class
	err error
}

// memoBudget is the memory the texts' answers may hold: two generations
// of about half of it each, as in Cache.
const memoBudget = 16 << 20

// classMemo remembers Statements' answers by exact text.
type classMemo struct {
	mu       sync.Mutex
	cur, old map[string]memoEntry
	curBytes int64
}

var memo = &classMemo{cur: map[string]memoEntry{}, old: map[string]memoEntry{}}

func (m *classMemo) get(sql string) ([]*Class, error) {
	m.mu.Lock()
	e, ok := m.cur[sql]
	if !ok {
		if e, ok = m.old[sql]; ok {
			delete(m.old, sql)
			m.put(sql, e)
		}
	}
	m.mu.Unlock()
	if ok {
		return e.cls, e.err
	}
	e = parseStatements(sql)
	m.mu.Lock()
	if kept, ok := m.cur[sql]; ok {
		e = kept
	} else {
		// The text may be a slice of a large reader buffer; a copy
		// keeps the memo from pinning it.
		m.put(strings.Clone(sql), e)
	}
	m.mu.Unlock()
	return e.cls, e.err
}

func (m *classMemo) put(sql string, e memoEntry) {
	if m.curBytes >= memoBudget/2 {
		m.old, m.cur, m.curBytes = m.cur, make(map[string]memoEntry, len(m.cur)), 0
	}
	m.cur[sql] = e
	m.curBytes += int64(len(sql)) + 256*int64(len(e.cls)+1)
}

func parseStatements(sql string) memoEntry {
	classParses.Add(1)
	res, err := pg_query.Parse(sql)
	if err != nil {
		return memoEntry{err: err}
	}
	cls := make([]*Class, len(res.Stmts))
	for i, st := range res.Stmts {
		c := classifyNode(st.Stmt)
		if st.Stmt != nil {
			visitAssigned(st.Stmt.ProtoReflect(), &c.assigned)
		}
		cls[i] = c
	}
	return memoEntry{cls: cls}
}

// kindOf is n's Kind.
func kindOf(n *pg_query.Node) Kind {
	switch {
	case n.GetSelectStmt() != nil:
		return KindSelect
	case n.GetInsertStmt() != nil:
		return KindInsert
	case n.GetUpdateStmt() != nil:
		return KindUpdate
	case n.GetDeleteStmt() != nil:
		return KindDelete
	case n.GetMergeStmt() != nil:
		return KindMerge
	}
	return KindOther
}

// insertOf reads an INSERT's target, columns and first VALUES row.
func insertOf(ins *pg_query.InsertStmt) *Insert {
	if ins == nil || ins.Relation == nil {
		return nil
	}
	s := &Insert{Rel: rangeVarName(ins.Relation)}
	for _, c := range ins.Cols {
		if rt := c.GetResTarget(); rt != nil {
			s.Columns = append(s.Columns, rt.Name)
		}
	}
	if sel := ins.SelectStmt.GetSelectStmt(); sel != nil && len(sel.ValuesLists) > 0 {
		s.Rows = len(sel.ValuesLists)
		if l := sel.ValuesLists[0].GetList(); l != nil {
			s.Values = make([]Value, len(l.Items))
			for i, n := range l.Items {
				s.Values[i] = valueOf(n)
			}
		}
	}
	return s
}

func valueOf(n *pg_query.Node) Value {
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	if p := n.GetParamRef(); p != nil {
		return Value{Param: int(p.Number)}
	}
	c := n.GetAConst()
	if c == nil || c.Isnull {
		return Value{}
	}
	switch {
	case c.GetSval() != nil:
		return Value{Literal: c.GetSval().Sval, IsLiteral: true}
	case c.GetIval() != nil:
		return Value{Literal: strconv.Itoa(int(c.GetIval().Ival)), IsLiteral: true}
	case c.GetFval() != nil:
		return Value{Literal: c.GetFval().Fval, IsLiteral: true}
	}
	return Value{}
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

// createdOf names the role, database or relation n creates
// ("role:NAME", "db:NAME", "rel:NAME": a table, view, materialized view
// or sequence, without its schema, as the server's "relation does not
// exist" names it when unqualified), "" for other statements.
func createdOf(n *pg_query.Node) string {
	var rv *pg_query.RangeVar
	switch x := n.GetNode().(type) {
	case *pg_query.Node_CreateRoleStmt:
		return "role:" + x.CreateRoleStmt.GetRole()
	case *pg_query.Node_CreatedbStmt:
		return "db:" + x.CreatedbStmt.GetDbname()
	case *pg_query.Node_CreateStmt:
		rv = x.CreateStmt.GetRelation()
	case *pg_query.Node_CreateTableAsStmt:
		rv = x.CreateTableAsStmt.GetInto().GetRel()
	case *pg_query.Node_ViewStmt:
		rv = x.ViewStmt.GetView()
	case *pg_query.Node_CreateSeqStmt:
		rv = x.CreateSeqStmt.GetSequence()
	}
	if rv.GetRelname() != "" && rv.GetRelpersistence() != "t" {
		return "rel:" + rv.GetRelname()
	}
	return ""
}
