package syncdep

import (
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Control says how a statement moves its session's transaction.
type Control uint8

const (
	TxNone Control = iota
	// TxBegin: BEGIN or START TRANSACTION.
	TxBegin
	// TxCommit: COMMIT or END (with Chain: COMMIT AND CHAIN, which opens
	// the next transaction at once).
	TxCommit
	// TxRollback: ROLLBACK or ABORT (with Chain: ROLLBACK AND CHAIN).
	TxRollback
	// TxPrepare: PREPARE TRANSACTION gid, which moves the transaction
	// out of the session until COMMIT PREPARED or ROLLBACK PREPARED.
	TxPrepare
	TxCommitPrepared
	TxRollbackPrepared
	// TxSavepoint: SAVEPOINT, RELEASE and ROLLBACK TO SAVEPOINT, which
	// keep the transaction open. What a rolled-back savepoint wrote is
	// still counted as written: more waiting, never less.
	TxSavepoint
)

// Op is a kind of write, for the foreign keys it checks.
type Op uint8

const (
	OpInsert Op = 1 << iota
	OpUpdate
	OpDelete
)

// Name is a relation or function as the statement names it: Schema is
// empty when the name is not qualified. Identifiers are as PostgreSQL
// folds them (unquoted names in lower case).
type Name struct {
	Schema, Name string
}

// Write is a relation a statement writes, and how.
type Write struct {
	Name
	Op Op
}

// Statement is what one SQL statement does, from its text alone.
type Statement struct {
	Control Control
	// Chain: COMMIT AND CHAIN or ROLLBACK AND CHAIN.
	Chain bool
	// Gid is the global transaction id of PREPARE TRANSACTION, COMMIT
	// PREPARED and ROLLBACK PREPARED.
	Gid string
	// Touch lists the relations read or written; Write those written.
	// Every Write is also in Touch.
	Touch []Name
	Write []Write
	// Funcs lists the functions called, whose effects the catalog
	// decides (see Resolver).
	Funcs []Name
	// Opaque: what the statement reads and writes cannot be known from
	// its text (DDL, DO, CALL, an SQL-level EXECUTE, SELECT INTO, text
	// the parser rejects after normalization). It waits for every
	// earlier commit, and its transaction counts as writing everything.
	Opaque bool
	// ReadAll: it may read anything but writes nothing (VACUUM or
	// ANALYZE of a whole database).
	ReadAll bool
	// LockRows: it locks the rows it reads (SELECT ... FOR UPDATE or
	// FOR SHARE), so it may wait for other transactions' row locks as a
	// write does.
	LockRows bool
}

// Analyze reads one SQL statement (as logged or normalized with $n for
// constants). Text that does not parse, or holds other than one
// statement, is Opaque: unknown effects wait as in commit mode.
func Analyze(sql string) Statement {
	res, err := pg_query.Parse(sql)
	if err != nil || len(res.Stmts) != 1 {
		return Statement{Opaque: true}
	}
	return analyzeNode(res.Stmts[0].Stmt)
}

func analyzeNode(n *pg_query.Node) Statement {
	var st Statement
	if n == nil {
		return Statement{Opaque: true}
	}
	switch x := n.Node.(type) {
	case *pg_query.Node_TransactionStmt:
		analyzeTransaction(x.TransactionStmt, &st)
	case *pg_query.Node_SelectStmt:
		if x.SelectStmt.IntoClause != nil {
			st.Opaque = true // creates a table
			break
		}
		walk(n, &st)
	case *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt, *pg_query.Node_MergeStmt:
		walk(n, &st)
	case *pg_query.Node_CopyStmt:
		cp := x.CopyStmt
		if cp.Relation != nil && cp.IsFrom {
			st.addWrite(cp.Relation, OpInsert)
		}
		walk(n, &st)
	case *pg_query.Node_TruncateStmt:
		for _, r := range x.TruncateStmt.Relations {
			if rv := r.GetRangeVar(); rv != nil {
				st.addWrite(rv, OpDelete)
			}
		}
		walk(n, &st)
	case *pg_query.Node_LockStmt:
		walk(n, &st)
	case *pg_query.Node_ExplainStmt:
		// A plain EXPLAIN reads only the catalog; EXPLAIN ANALYZE runs
		// the statement.
		if explainAnalyze(x.ExplainStmt) {
			return analyzeNode(x.ExplainStmt.Query)
		}
	case *pg_query.Node_DeclareCursorStmt:
		walk(x.DeclareCursorStmt.Query, &st)
	case *pg_query.Node_VacuumStmt:
		if len(x.VacuumStmt.Rels) == 0 {
			st.ReadAll = true
		}
		walk(n, &st)
	case *pg_query.Node_VariableSetStmt, *pg_query.Node_VariableShowStmt, *pg_query.Node_ListenStmt,
		*pg_query.Node_UnlistenStmt, *pg_query.Node_NotifyStmt, *pg_query.Node_FetchStmt,
		*pg_query.Node_ClosePortalStmt, *pg_query.Node_DeallocateStmt, *pg_query.Node_DiscardStmt,
		*pg_query.Node_PrepareStmt, *pg_query.Node_CheckPointStmt, *pg_query.Node_LoadStmt,
		*pg_query.Node_ConstraintsSetStmt:
		// Session state, notifications, cursors already declared:
		// nothing read from tables now. (A PREPARE only plans.)
	default:
		// DDL, DO, CALL, EXECUTE of an SQL-level prepared statement,
		// GRANT, REFRESH MATERIALIZED VIEW...
		st.Opaque = true
	}
	return st
}

func analyzeTransaction(t *pg_query.TransactionStmt, st *Statement) {
	switch t.Kind {
	case pg_query.TransactionStmtKind_TRANS_STMT_BEGIN, pg_query.TransactionStmtKind_TRANS_STMT_START:
		st.Control = TxBegin
	case pg_query.TransactionStmtKind_TRANS_STMT_COMMIT:
		st.Control, st.Chain = TxCommit, t.Chain
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		st.Control, st.Chain = TxRollback, t.Chain
	case pg_query.TransactionStmtKind_TRANS_STMT_PREPARE:
		st.Control, st.Gid = TxPrepare, t.Gid
	case pg_query.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED:
		st.Control, st.Gid = TxCommitPrepared, t.Gid
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
		st.Control, st.Gid = TxRollbackPrepared, t.Gid
	default:
		st.Control = TxSavepoint
	}
}

func explainAnalyze(ex *pg_query.ExplainStmt) bool {
	for _, o := range ex.Options {
		d := o.GetDefElem()
		if d == nil || !strings.EqualFold(d.Defname, "analyze") {
			continue
		}
		// What cannot be read is true: running it is the careful
		// assumption.
		switch {
		case d.Arg == nil:
			return true
		case d.Arg.GetBoolean() != nil:
			return d.Arg.GetBoolean().Boolval
		case d.Arg.GetInteger() != nil:
			return d.Arg.GetInteger().Ival != 0
		case d.Arg.GetString_() != nil:
			v := strings.ToLower(d.Arg.GetString_().Sval)
			return v != "false" && v != "off" && v != "no" && v != "0"
		}
		return true
	}
	return false
}

// walk visits every node under n: each relation named is touched, the
// target of every INSERT, UPDATE, DELETE and MERGE (data-modifying CTEs
// included) is written, and every function call is listed. Names of CTEs
// are not told apart from tables: a CTE that shares a table's name only
// adds a wait.
func walk(n *pg_query.Node, st *Statement) {
	if n == nil {
		return
	}
	visit(n.ProtoReflect(), st)
}

func visit(m protoreflect.Message, st *Statement) {
	switch x := m.Interface().(type) {
	case *pg_query.RangeVar:
		st.addTouch(x)
		return
	case *pg_query.InsertStmt:
		st.addWrite(x.Relation, OpInsert)
	case *pg_query.UpdateStmt:
		st.addWrite(x.Relation, OpUpdate)
	case *pg_query.DeleteStmt:
		st.addWrite(x.Relation, OpDelete)
	case *pg_query.MergeStmt:
		st.addWrite(x.Relation, OpInsert|OpUpdate|OpDelete)
	case *pg_query.FuncCall:
		st.addFunc(x.Funcname)
	case *pg_query.SelectStmt:
		st.LockRows = st.LockRows || len(x.LockingClause) > 0
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := range l.Len() {
				visit(l.Get(i).Message(), st)
			}
			return true
		}
		if fd.IsMap() {
			return true
		}
		visit(v.Message(), st)
		return true
	})
}

func rangeVarName(rv *pg_query.RangeVar) Name {
	return Name{Schema: rv.Schemaname, Name: rv.Relname}
}

func (st *Statement) addTouch(rv *pg_query.RangeVar) {
	if rv == nil || rv.Relname == "" {
		return
	}
	n := rangeVarName(rv)
	if !slices.Contains(st.Touch, n) {
		st.Touch = append(st.Touch, n)
	}
}

func (st *Statement) addWrite(rv *pg_query.RangeVar, op Op) {
	if rv == nil || rv.Relname == "" {
		return
	}
	st.addTouch(rv)
	n := rangeVarName(rv)
	for i := range st.Write {
		if st.Write[i].Name == n {
			st.Write[i].Op |= op
			return
		}
	}
	st.Write = append(st.Write, Write{Name: n, Op: op})
}

func (st *Statement) addFunc(parts []*pg_query.Node) {
	var n Name
	switch len(parts) {
	case 1:
		n.Name = parts[0].GetString_().GetSval()
	case 2:
		n.Schema, n.Name = parts[0].GetString_().GetSval(), parts[1].GetString_().GetSval()
	default:
		// catalog.schema.name, or something odd: unknown.
		n.Name = ""
	}
	if !slices.Contains(st.Funcs, n) {
		st.Funcs = append(st.Funcs, n)
	}
}
