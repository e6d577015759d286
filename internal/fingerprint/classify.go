package fingerprint

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Class is what one statement does, read from its parse tree: its effect
// on the session's transaction, whether it can write, what it destroys,
// the relations it reads and writes, and the SQL-level prepared
// statements it handles. Every consumer that needs a statement's kind
// (the replay's --read-only and transaction tracking, the pre-flight's
// list of destructive statements, the synchronization's dependencies, the
// sweep's transaction counts) reads it here, so that a statement is
// parsed for it once, not once per consumer.
//
// A Class is shared between callers and must not be modified.
type Class struct {
	// Tx is what the statement does to the session's transaction.
	Tx TxControl
	// Chain: COMMIT AND CHAIN or ROLLBACK AND CHAIN, which open the
	// next transaction at once.
	Chain bool
	// Gid is the global transaction id of PREPARE TRANSACTION, COMMIT
	// PREPARED and ROLLBACK PREPARED.
	Gid string

	// ReadOnly: the statement cannot write (a plain SELECT, SHOW, SET,
	// transaction control, a plain EXPLAIN...). Functions a SELECT calls
	// may still write. An SQL-level EXECUTE is not ReadOnly: whether it
	// writes is its prepared statement's kind, which only its session
	// knows (see Prepared).
	ReadOnly bool
	// Destructive names what the statement destroys or reshapes ("DROP
	// TABLE", "TRUNCATE", "DELETE without WHERE", "ALTER TABLE"...); ""
	// for the others.
	Destructive string
	// CopyIn: COPY ... FROM STDIN, whose data a log does not hold.
	CopyIn bool
	// ExplainAnalyze: EXPLAIN with ANALYZE on, which runs its statement
	// (the other fields describe that statement where it matters).
	ExplainAnalyze bool

	// Prepared is the SQL-level prepared statement the statement
	// handles, PreparedName its name (DeallocateAll: DEALLOCATE ALL or
	// DISCARD ALL). EXECUTE under EXPLAIN ANALYZE counts as an EXECUTE.
	Prepared      PreparedOp
	PreparedName  string
	DeallocateAll bool

	// Touch lists the relations read or written, Write those written
	// (every Write is also in Touch), Funcs the functions called.
	Touch []Name
	Write []Write
	Funcs []Name
	// Advisory are its calls of advisory-lock functions, in the order
	// of its text (see Advisory).
	Advisory []Advisory
	// Notification is its LISTEN, UNLISTEN or NOTIFY (or pg_notify
	// call), nil for none.
	Notification *Notification
	// Opaque: what it reads and writes cannot be known from its text
	// (DDL, DO, CALL, an SQL-level EXECUTE, SELECT INTO, text the parser
	// refuses).
	Opaque bool
	// ReadAll: it may read anything but writes nothing (VACUUM or
	// ANALYZE of a whole database).
	ReadAll bool
	// LockRows: it locks the rows it reads (SELECT ... FOR UPDATE or FOR
	// SHARE), so it may wait for other transactions' row locks as a
	// write does.
	LockRows bool
	// LockShares: one of its locking clauses is FOR SHARE or FOR KEY
	// SHARE, which other sessions' shared locks of the rows do not wait
	// for (with LockRows; without it, every clause is FOR UPDATE or FOR
	// NO KEY UPDATE).
	LockShares bool
	// SkipsLocked: a locking clause in it skips locked rows (FOR UPDATE
	// SKIP LOCKED): which rows it returns depends on the transactions of
	// other sessions open at that moment, not only on those that ended
	// (a job queue's poll), so its answer may differ in a replay that
	// keeps every commit's order.
	SkipsLocked bool
	// Rows: which rows of the relation it names it reaches, as far as
	// the text tells (see RowAccess); nil when the text does not tell.
	Rows *RowAccess

	// Sorted: a query whose top level has ORDER BY, so that the order
	// of its rows is part of its answer (of the others, the order is the
	// plan's).
	Sorted bool
	// Volatile names what the statement calls whose result changes
	// from one call to the next ("now()", "nextval()", "random()",
	// "CURRENT_TIMESTAMP"), ServerState what it reads that a server
	// assigns or keeps for itself (a catalog: "pg_class"; an object or
	// transaction id: "regclass", "oid", "xmin"; its own state:
	// "pg_backend_pid()"); "" for none. Either may make a replay's
	// answer differ from the original's with nothing wrong.
	Volatile, ServerState string

	// Kind is the command at the statement's top level.
	Kind Kind
	// PlainSelect: a SELECT (or VALUES) that is ReadOnly and locks no
	// row anywhere (no FOR UPDATE or FOR SHARE in a CTE, a subquery or
	// a branch of a set operation): the only statement EXPLAIN ANALYZE
	// may run.
	PlainSelect bool
	// Insert is an INSERT's target, columns and first row; nil for
	// other statements.
	Insert *Insert
	// Returning: of an INSERT with a RETURNING list, what it returns
	// of its table (Insert.Rel); nil for other statements.
	Returning *Returning
	// Queue: whether the statement is a job-queue poll whose pollers
	// wait for each other.
	Queue QueueShape
	// Creates names the role, database or relation a CREATE ROLE (or
	// USER, or GROUP), CREATE DATABASE or CREATE TABLE (VIEW, SEQUENCE,
	// TABLE AS) makes: "role:NAME", "db:NAME", "rel:NAME".
	Creates string

	// funcNames: Funcs' names without schema (see FuncNames).
	funcNames []string
	// assigned: AssignedColumns' answer, set by Statements only.
	assigned []Assigned
	// limitSub: a SELECT with LIMIT that does not skip locked rows is
	// somewhere in the statement (for Queue).
	limitSub bool
}

// TxControl is a statement's effect on its session's transaction.
type TxControl uint8

// Transaction effects.
const (
	TxNone TxControl = iota
	// TxBegin: BEGIN or START TRANSACTION.
	TxBegin
	// TxCommit: COMMIT or END (with Chain: COMMIT AND CHAIN).
	TxCommit
	// TxRollback: ROLLBACK or ABORT (with Chain: ROLLBACK AND CHAIN).
	TxRollback
	// TxPrepare: PREPARE TRANSACTION gid, which moves the transaction
	// out of the session until COMMIT PREPARED or ROLLBACK PREPARED.
	TxPrepare
	TxCommitPrepared
	TxRollbackPrepared
	// TxSavepoint: SAVEPOINT, RELEASE and ROLLBACK TO SAVEPOINT, which
	// keep the transaction open.
	TxSavepoint
)

// Block is what a statement does to the session's explicit transaction
// block: opens it (BEGIN, START TRANSACTION, COMMIT AND CHAIN, which ends
// one and opens the next), ends it (COMMIT, END, ROLLBACK, ABORT, PREPARE
// TRANSACTION), or neither.
func (c *Class) Block() BlockEffect {
	switch c.Tx {
	case TxBegin:
		return BlockOpens
	case TxCommit, TxRollback:
		if c.Chain {
			return BlockOpens
		}
		return BlockEnds
	case TxPrepare:
		return BlockEnds
	}
	return BlockNone
}

// RanBeforeFailure returns the statements of a string of several (one
// simple-protocol query, text) that ran in a session where the string
// failed: those up to the one that failed, since the server skips the
// rest of the string after an error. The log does not say which failed;
// transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) does not fail
// but for a COMMIT's deferred constraint, so it is taken to be the last
// statement that is not transaction control: BEGIN; INSERT ...; ROLLBACK
// that failed ran BEGIN and the INSERT, and its session stayed in the
// aborted block. A string of transaction control alone ran whole.
func RanBeforeFailure(items []Item, text string) []Item {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Class(text).Tx == TxNone {
			return items[:i+1]
		}
	}
	return items
}

// BlockEffect is a statement's effect on its session's transaction block;
// see Class.Block.
type BlockEffect uint8

// Block effects.
const (
	BlockNone BlockEffect = iota
	BlockOpens
	BlockEnds
)

// PreparedOp is what a statement does with an SQL-level prepared
// statement.
type PreparedOp uint8

// Prepared statement operations.
const (
	PreparedNone PreparedOp = iota
	// PreparedPrepare: PREPARE name AS query; ReadOnly is the query's.
	PreparedPrepare
	// PreparedExecute: EXECUTE name, also under EXPLAIN ANALYZE.
	PreparedExecute
	// PreparedDeallocate: DEALLOCATE name or ALL, DISCARD ALL.
	PreparedDeallocate
)

// Op is a kind of write, for the foreign keys it checks.
type Op uint8

// Kinds of writes.
const (
	OpInsert Op = 1 << iota
	OpUpdate
	OpDelete
)

// Name is a relation or function as a statement names it: Schema is
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

// classSlot holds the Class of one Item, made on first use: analyses
// never ask for it, and a replay asks for the statements it reads.
type classSlot struct {
	once sync.Once
	c    *Class
	// i and n: the Item is statement i of n of its text, for reading
	// the logged text where the normalized one does not parse.
	i, n int32
}

// classParses counts the statements parsed for their Class, for tests
// that check that a text is parsed once.
var classParses atomic.Int64

// ClassParses returns how many statement texts were parsed for their
// Class so far in the process.
func ClassParses() int64 { return classParses.Load() }

// Class returns what the statement does. text is the logged text the
// Item was found for (any text of the Item's Cache entry); it is parsed
// only where the normalized statement is one the parser refuses (SET
// TRANSACTION ISOLATION LEVEL $1), and may be "" when the caller has
// none. The Class is made once per Item and shared: every text that
// maps to the Item (by its exact text, or its shape) gets it without
// parsing again.
func (it Item) Class(text string) *Class {
	s := it.cls
	if s == nil {
		// An Item not made by Compute: nothing to keep it in.
		return classifyItem(it, text, 0, 1)
	}
	s.once.Do(func() { s.c = classifyItem(it, text, int(s.i), int(s.n)) })
	return s.c
}

// unknownClass is the Class of a statement that does not parse: its
// effects are unknown.
var unknownClass = &Class{Opaque: true}

// unparsedClass is the Class of an Unparsed item: it fails on the server
// without running, so it does nothing, and is not known to be read-only.
var unparsedClass = &Class{}

func classifyItem(it Item, text string, i, n int) *Class {
	if it.Unparsed {
		return unparsedClass
	}
	if node := parseOne(it.Query, text, i, n); node != nil {
		return classifyNode(node)
	}
	return unknownClass
}

// parseOne parses statement i of n of an event: its normalized text, or
// where normalization made text the parser refuses (SET TRANSACTION
// ISOLATION LEVEL $1), the same statement of the logged text. nil when
// neither parses.
func parseOne(norm, text string, i, n int) *pg_query.Node {
	classParses.Add(1)
	if res, err := pg_query.Parse(norm); err == nil && len(res.Stmts) == 1 {
		return res.Stmts[0].Stmt
	}
	if text == "" {
		return nil
	}
	classParses.Add(1)
	if res, err := pg_query.Parse(text); err == nil && len(res.Stmts) == n {
		return res.Stmts[i].Stmt
	}
	return nil
}

// Classify returns the Class of one SQL statement, parsed once per
// distinct text (see Statements). Text that does not parse, or holds
// other than one statement, has unknown effects (Opaque).
func Classify(sql string) *Class {
	c, err := Statement(sql)
	if err != nil {
		return unknownClass
	}
	return c
}

func classifyNode(n *pg_query.Node) *Class {
	c := &Class{}
	if n == nil {
		c.Opaque = true
		return c
	}
	c.ReadOnly = readOnly(n)
	c.Destructive = destructive(n)
	if ex := n.GetExplainStmt(); ex != nil {
		c.ExplainAnalyze = explainAnalyze(ex)
	}
	relations(n, c)
	c.Advisory = advisoryCalls(n, c)
	c.Notification = notificationOf(n, c)
	if !c.Opaque {
		c.Rows = rowAccess(n)
	}
	c.Kind = kindOf(n)
	answerTraits(n, c)
	c.PlainSelect = c.Kind == KindSelect && c.ReadOnly && !c.LockRows
	c.Creates = createdOf(n)
	switch c.Kind {
	case KindInsert:
		c.Insert = insertOf(n.GetInsertStmt())
		if c.Insert != nil {
			c.Returning = returningOf(n.GetInsertStmt())
		}
	case KindSelect:
		if sel := n.GetSelectStmt(); sel.LimitCount != nil && waits(sel.LockingClause) {
			c.Queue = QueueSelectLimitLocks
		}
	case KindUpdate, KindDelete:
		if c.limitSub {
			c.Queue = QueueModifyLimitSubquery
		}
	}
	switch {
	case n.GetCopyStmt() != nil:
		cp := n.GetCopyStmt()
		c.CopyIn = cp.IsFrom && cp.Filename == "" && !cp.IsProgram
	case n.GetPrepareStmt() != nil:
		c.Prepared, c.PreparedName = PreparedPrepare, n.GetPrepareStmt().Name
	case executeOf(n) != nil:
		c.Prepared, c.PreparedName = PreparedExecute, executeOf(n).Name
	case n.GetDeallocateStmt() != nil:
		d := n.GetDeallocateStmt()
		c.Prepared, c.PreparedName, c.DeallocateAll = PreparedDeallocate, d.Name, d.Isall || d.Name == ""
	case n.GetDiscardStmt() != nil:
		// DISCARD ALL deallocates too; DISCARD PLANS or TEMP do not.
		if n.GetDiscardStmt().Target == pg_query.DiscardMode_DISCARD_ALL {
			c.Prepared, c.DeallocateAll = PreparedDeallocate, true
		}
	}
	return c
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

// explainAnalyze reports whether an EXPLAIN runs its statement.
func explainAnalyze(ex *pg_query.ExplainStmt) bool {
	for _, o := range ex.Options {
		if d := o.GetDefElem(); d != nil && strings.EqualFold(d.Defname, "analyze") {
			return defTrue(d)
		}
	}
	return false
}

// defTrue reads a boolean option as the server does; what it cannot read
// is true, which for ANALYZE is the careful answer (it runs).
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
	case n.GetCopyStmt() != nil:
		// COPY ... TO STDOUT needs nothing written.
		cp := n.GetCopyStmt()
		return !cp.IsFrom && !cp.IsProgram
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

// relations fills what the statement does to relations and to the
// transaction.
func relations(n *pg_query.Node, c *Class) {
	switch x := n.Node.(type) {
	case *pg_query.Node_TransactionStmt:
		transaction(x.TransactionStmt, c)
	case *pg_query.Node_SelectStmt:
		if x.SelectStmt.IntoClause != nil {
			c.Opaque = true // creates a table
			break
		}
		walk(n, c)
	case *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt, *pg_query.Node_MergeStmt:
		walk(n, c)
	case *pg_query.Node_CopyStmt:
		cp := x.CopyStmt
		if cp.Relation != nil && cp.IsFrom {
			c.addWrite(cp.Relation, OpInsert)
		}
		walk(n, c)
	case *pg_query.Node_TruncateStmt:
		for _, r := range x.TruncateStmt.Relations {
			if rv := r.GetRangeVar(); rv != nil {
				c.addWrite(rv, OpDelete)
			}
		}
		walk(n, c)
	case *pg_query.Node_LockStmt:
		walk(n, c)
	case *pg_query.Node_ExplainStmt:
		// A plain EXPLAIN reads only the catalog; EXPLAIN ANALYZE runs
		// the statement.
		if explainAnalyze(x.ExplainStmt) {
			if x.ExplainStmt.Query == nil {
				c.Opaque = true
				return
			}
			relations(x.ExplainStmt.Query, c)
		}
	case *pg_query.Node_DeclareCursorStmt:
		walk(x.DeclareCursorStmt.Query, c)
	case *pg_query.Node_VacuumStmt:
		if len(x.VacuumStmt.Rels) == 0 {
			c.ReadAll = true
		}
		walk(n, c)
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
		c.Opaque = true
	}
}

func transaction(t *pg_query.TransactionStmt, c *Class) {
	switch t.Kind {
	case pg_query.TransactionStmtKind_TRANS_STMT_BEGIN, pg_query.TransactionStmtKind_TRANS_STMT_START:
		c.Tx = TxBegin
	case pg_query.TransactionStmtKind_TRANS_STMT_COMMIT:
		c.Tx, c.Chain = TxCommit, t.Chain
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		c.Tx, c.Chain = TxRollback, t.Chain
	case pg_query.TransactionStmtKind_TRANS_STMT_PREPARE:
		c.Tx, c.Gid = TxPrepare, t.Gid
	case pg_query.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED:
		c.Tx, c.Gid = TxCommitPrepared, t.Gid
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
		c.Tx, c.Gid = TxRollbackPrepared, t.Gid
	default:
		c.Tx = TxSavepoint
	}
}

// walk visits every node under n: each relation named is touched, the
// target of every INSERT, UPDATE, DELETE and MERGE (data-modifying CTEs
// included) is written, and every function call is listed. Names of CTEs
// are not told apart from tables: a CTE that shares a table's name only
// adds a wait.
func walk(n *pg_query.Node, c *Class) {
	if n == nil {
		return
	}
	visit(n.ProtoReflect(), c)
}

func visit(m protoreflect.Message, c *Class) {
	switch x := m.Interface().(type) {
	case *pg_query.RangeVar:
		c.addTouch(x)
		return
	case *pg_query.InsertStmt:
		c.addWrite(x.Relation, OpInsert)
	case *pg_query.UpdateStmt:
		c.addWrite(x.Relation, OpUpdate)
	case *pg_query.DeleteStmt:
		c.addWrite(x.Relation, OpDelete)
	case *pg_query.MergeStmt:
		c.addWrite(x.Relation, OpInsert|OpUpdate|OpDelete)
	case *pg_query.FuncCall:
		c.addFunc(x.Funcname)
	case *pg_query.SelectStmt:
		c.LockRows = c.LockRows || len(x.LockingClause) > 0
		for _, l := range x.LockingClause {
			lc := l.GetLockingClause()
			if lc.GetWaitPolicy() == pg_query.LockWaitPolicy_LockWaitSkip {
				c.SkipsLocked = true
			}
			switch lc.GetStrength() {
			case pg_query.LockClauseStrength_LCS_FORSHARE, pg_query.LockClauseStrength_LCS_FORKEYSHARE:
				c.LockShares = true
			}
		}
		if x.LimitCount != nil && (len(x.LockingClause) == 0 || waits(x.LockingClause)) {
			c.limitSub = true
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := range l.Len() {
				visit(l.Get(i).Message(), c)
			}
			return true
		}
		if fd.IsMap() {
			return true
		}
		visit(v.Message(), c)
		return true
	})
}

func rangeVarName(rv *pg_query.RangeVar) Name {
	return Name{Schema: rv.Schemaname, Name: rv.Relname}
}

func (c *Class) addTouch(rv *pg_query.RangeVar) {
	if rv == nil || rv.Relname == "" {
		return
	}
	n := rangeVarName(rv)
	if !slices.Contains(c.Touch, n) {
		c.Touch = append(c.Touch, n)
	}
}

func (c *Class) addWrite(rv *pg_query.RangeVar, op Op) {
	if rv == nil || rv.Relname == "" {
		return
	}
	c.addTouch(rv)
	n := rangeVarName(rv)
	for i := range c.Write {
		if c.Write[i].Name == n {
			c.Write[i].Op |= op
			return
		}
	}
	c.Write = append(c.Write, Write{Name: n, Op: op})
}

func (c *Class) addFunc(parts []*pg_query.Node) {
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
	if !slices.Contains(c.Funcs, n) {
		c.Funcs = append(c.Funcs, n)
	}
	if len(parts) > 0 {
		if name := parts[len(parts)-1].GetString_().GetSval(); name != "" && !slices.Contains(c.funcNames, name) {
			c.funcNames = append(c.funcNames, name)
		}
	}
}
