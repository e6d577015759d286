package fingerprint

import (
	"errors"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// InsertRow is a single-row INSERT ... VALUES whose row is constants,
// bind parameters and DEFAULT only: consecutive ones with the same Key
// can be sent as one multi-row INSERT (MergeInserts) that writes the
// same rows.
type InsertRow struct {
	// Key is the target table and the column list as the statement
	// names them (with the row's width): rows merge only with rows of
	// the same Key.
	Key string
	// Table is the target table, schema-qualified when the statement
	// qualifies it.
	Table string
	// MaxParam is the highest $n the row uses, 0 for literals only.
	MaxParam int32

	tree *pg_query.ParseResult
}

// NotBatchable says why an INSERT cannot be merged with its neighbours.
type NotBatchable string

// Why an INSERT is not merged (ParseInsertRow).
const (
	NotBatchableUnparsed   NotBatchable = "does not parse"
	NotBatchableSeveral    NotBatchable = "several statements in one query string"
	NotBatchableReturning  NotBatchable = "RETURNING"
	NotBatchableOnConflict NotBatchable = "ON CONFLICT"
	NotBatchableWith       NotBatchable = "WITH"
	NotBatchableSelect     NotBatchable = "INSERT ... SELECT or DEFAULT VALUES"
	NotBatchableMultiRow   NotBatchable = "already several rows"
	NotBatchableExpression NotBatchable = "a value that is not a constant, a parameter or DEFAULT"
)

// ParseInsertRow parses text as a single-row INSERT ... VALUES that may be
// merged with others. It returns nil and "" for a text that is not one
// INSERT (another statement, which a batch does not cross), and nil
// with the reason for an INSERT that cannot be merged.
func ParseInsertRow(text string) (*InsertRow, NotBatchable) {
	res, err := pg_query.Parse(text)
	switch {
	case err != nil:
		if isInsertText(text) {
			return nil, NotBatchableUnparsed
		}
		return nil, ""
	case len(res.Stmts) != 1:
		for _, s := range res.Stmts {
			if s.Stmt.GetInsertStmt() != nil {
				return nil, NotBatchableSeveral
			}
		}
		return nil, ""
	}
	ins := res.Stmts[0].Stmt.GetInsertStmt()
	if ins == nil {
		return nil, ""
	}
	sel := ins.SelectStmt.GetSelectStmt()
	switch {
	case len(ins.ReturningList) > 0:
		return nil, NotBatchableReturning
	case ins.OnConflictClause != nil:
		return nil, NotBatchableOnConflict
	case ins.WithClause != nil || sel != nil && sel.WithClause != nil:
		return nil, NotBatchableWith
	case sel == nil || len(sel.ValuesLists) == 0:
		return nil, NotBatchableSelect
	case len(sel.ValuesLists) > 1:
		return nil, NotBatchableMultiRow
	}
	row := sel.ValuesLists[0].GetList()
	if row == nil {
		return nil, NotBatchableExpression
	}
	r := &InsertRow{tree: res, Table: ins.Relation.GetRelname()}
	if sch := ins.Relation.GetSchemaname(); sch != "" {
		r.Table = sch + "." + r.Table
	}
	for _, v := range row.Items {
		p, ok := plainValue(v)
		if !ok {
			return nil, NotBatchableExpression
		}
		r.MaxParam = max(r.MaxParam, p)
	}
	var key strings.Builder
	key.WriteString(r.Table)
	key.WriteString(" (")
	for i, c := range ins.Cols {
		if i > 0 {
			key.WriteString(", ")
		}
		rt := c.GetResTarget()
		key.WriteString(rt.GetName())
		for _, ind := range rt.GetIndirection() {
			// a[1] or a.b: merged as written, kept in the key.
			key.WriteString(ind.String())
		}
	}
	key.WriteString(") ")
	key.WriteString(strconv.Itoa(len(row.Items)))
	if ins.Override != pg_query.OverridingKind_OVERRIDING_NOT_SET {
		key.WriteString(" " + ins.Override.String())
	}
	r.Key = key.String()
	return r, ""
}

// isInsertText reports whether text begins with INSERT, for a text that
// does not parse.
func isInsertText(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n(")
	return len(t) >= 6 && strings.EqualFold(t[:6], "insert")
}

// plainValue reports whether n is a constant, a bind parameter, DEFAULT
// or a cast of one of those, and the highest parameter it uses.
func plainValue(n *pg_query.Node) (int32, bool) {
	switch {
	case n.GetAConst() != nil, n.GetSetToDefault() != nil:
		return 0, true
	case n.GetParamRef() != nil:
		// $0 parses, and the server refuses it: not merged.
		p := n.GetParamRef().Number
		return p, p > 0
	case n.GetTypeCast() != nil:
		return plainValue(n.GetTypeCast().Arg)
	}
	return 0, false
}

// MergeInserts is the one INSERT that writes the rows of rows, which
// must all have the same Key, in their order. params[i] is how many bind
// parameters row i was executed with: the merged statement's parameters
// are theirs one after the other, so row i's $n becomes $(n + the sum
// of params before i). Constants are kept as written.
func MergeInserts(rows []*InsertRow, params []int) (string, error) {
	if len(rows) == 0 {
		return "", errors.New("no rows to merge")
	}
	if len(params) != len(rows) {
		return "", errors.New("one parameter count per row is needed")
	}
	tree := proto.Clone(rows[0].tree).(*pg_query.ParseResult)
	sel := tree.Stmts[0].Stmt.GetInsertStmt().SelectStmt.GetSelectStmt()
	sel.ValuesLists = sel.ValuesLists[:0]
	offset := int32(0)
	for i, r := range rows {
		if r.Key != rows[0].Key {
			return "", errors.New("rows of different tables or column lists: " + r.Key + ", " + rows[0].Key)
		}
		if int(r.MaxParam) > params[i] {
			return "", errors.New("a row uses more parameters than it was given")
		}
		src := r.tree.Stmts[0].Stmt.GetInsertStmt().SelectStmt.GetSelectStmt().ValuesLists[0]
		row := src
		if offset > 0 {
			// Renumbered in a copy: rows stay as parsed.
			row = proto.Clone(src).(*pg_query.Node)
			eachMessage(row.ProtoReflect(), func(m protoreflect.Message) bool {
				if p, ok := m.Interface().(*pg_query.ParamRef); ok {
					p.Number += offset
				}
				return true
			})
		}
		sel.ValuesLists = append(sel.ValuesLists, row)
		offset += int32(params[i])
	}
	// The statement's own text is not kept: the deparsed one is what
	// PostgreSQL's parser makes of it, and whitespace and comments go.
	tree.Stmts[0].StmtLocation, tree.Stmts[0].StmtLen = 0, 0
	return pg_query.Deparse(tree)
}
