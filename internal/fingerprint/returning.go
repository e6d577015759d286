package fingerprint

import (
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Returning is what an INSERT's RETURNING list returns of its table
// (Class.Insert.Rel): the columns it reads, and those the INSERT gives a
// value of its own, so that a caller that knows which columns a sequence
// fills (a nextval default, an identity) can tell whether the statement
// returns a value the target's sequence assigned, which differs from the
// original's whenever that sequence stood elsewhere.
type Returning struct {
	// Columns are the table's columns the list reads, each once, as
	// PostgreSQL folds them; All: it returns every column (a star).
	Columns []string
	All     bool
	// Given are the columns of the INSERT's column list that take a
	// value of the statement's in some row (not DEFAULT in every VALUES
	// row). Positional: it has no column list, so its values fill the
	// table's columns in order, which the text alone does not name.
	Given      []string
	Positional bool
}

// Defaulted reports whether the statement returns column col as the
// table's default made it: it reads it and gives it no value of its own.
func (r *Returning) Defaulted(col string) bool {
	if r == nil || r.Positional || slices.Contains(r.Given, col) {
		return false
	}
	return r.All || slices.Contains(r.Columns, col)
}

// returningOf is an INSERT's Returning; nil without a RETURNING list.
func returningOf(ins *pg_query.InsertStmt) *Returning {
	if ins == nil || len(ins.ReturningList) == 0 {
		return nil
	}
	r := &Returning{Positional: len(ins.Cols) == 0}
	for _, n := range ins.ReturningList {
		rt := n.GetResTarget()
		if rt == nil || rt.Val == nil {
			continue
		}
		eachMessage(rt.Val.ProtoReflect(), func(m protoreflect.Message) bool {
			cr, ok := m.Interface().(*pg_query.ColumnRef)
			if !ok {
				// A subquery's columns are another table's.
				_, sub := m.Interface().(*pg_query.SubLink)
				return !sub
			}
			if last := cr.Fields[len(cr.Fields)-1]; last.GetAStar() != nil {
				r.All = true
			} else if name := lastName(cr.Fields); name != "" && !slices.Contains(r.Columns, name) {
				r.Columns = append(r.Columns, name)
			}
			return true
		})
	}
	var rows []*pg_query.Node
	if sel := ins.SelectStmt.GetSelectStmt(); sel != nil {
		rows = sel.ValuesLists
	}
	for i, c := range ins.Cols {
		rt := c.GetResTarget()
		if rt == nil {
			continue
		}
		if len(rows) == 0 || !allDefault(rows, i) {
			r.Given = append(r.Given, rt.Name)
		}
	}
	return r
}

// allDefault reports whether value i of every VALUES row is DEFAULT.
func allDefault(rows []*pg_query.Node, i int) bool {
	for _, row := range rows {
		l := row.GetList()
		if l == nil || i >= len(l.Items) || l.Items[i].GetSetToDefault() == nil {
			return false
		}
	}
	return true
}
