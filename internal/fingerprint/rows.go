package fingerprint

import (
	"slices"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// RowAccess says which rows of one relation a statement reaches, as far
// as its text tells: what lets a synchronized replay order statements by
// the rows they touch rather than by whole tables. Whether the columns
// are a key of the relation is the catalog's business (package syncdep);
// this is only what the text says.
//
// It is set only for these forms, where the relation is named once in
// the whole statement and no WITH clause is used:
//
//   - SELECT from that one relation (no join, no set operation), FOR
//     UPDATE or not: Op is 0;
//   - UPDATE without FROM, DELETE without USING: Op is OpUpdate or
//     OpDelete;
//   - INSERT with a column list: Op is OpInsert. Eq is filled only for a
//     single VALUES row.
//
// For the first two, Eq lists the columns that a top-level AND of the
// WHERE clause compares for equality with a bind parameter ($n, possibly
// cast to an integer, text or uuid type): the statement reaches at most
// the rows whose columns equal those parameters. For an INSERT, Eq lists
// the columns whose value in its one row is such a parameter.
type RowAccess struct {
	Rel Name
	Op  Op
	Eq  []ColumnParam
	// Set are the columns an UPDATE assigns, or an INSERT's ON CONFLICT
	// DO UPDATE.
	Set []string
	// Upsert: an INSERT with ON CONFLICT.
	Upsert bool
	// Cols are an INSERT's column list (the others take their
	// defaults); nil without one.
	Cols []string
	// Ranges are, for a SELECT, the columns that a top-level AND of
	// the WHERE clause bounds by bind parameters (BETWEEN $a AND $b,
	// >= $a, <= $b...): the statement reads only rows whose column is
	// within them (see ColumnRange).
	Ranges []ColumnRange
}

// ColumnRange is a column and the bind parameters that bound it: Lo
// from below, Hi from above, 0 for no bound on that side. The bounds
// are taken as inclusive (a strict one reads less, never more).
type ColumnRange struct {
	Column string
	Lo, Hi int32
}

// ColumnParam is a column and the bind parameter ($Param, from 1) that
// it equals.
type ColumnParam struct {
	Column string
	Param  int32
}

// Param returns the parameter Eq gives for column, 0 for none.
func (r *RowAccess) Param(column string) int32 {
	for _, c := range r.Eq {
		if c.Column == column {
			return c.Param
		}
	}
	return 0
}

// rowAccess returns the RowAccess of a statement whose relations c
// holds, nil when it has none of the forms above.
func rowAccess(n *pg_query.Node) *RowAccess {
	var ra *RowAccess
	var rv *pg_query.RangeVar
	switch x := n.Node.(type) {
	case *pg_query.Node_SelectStmt:
		s := x.SelectStmt
		if s.WithClause != nil || s.Op > pg_query.SetOperation_SETOP_NONE || len(s.FromClause) != 1 || s.IntoClause != nil {
			return nil
		}
		if rv = s.FromClause[0].GetRangeVar(); rv == nil {
			return nil
		}
		ra = &RowAccess{Eq: equalities(s.WhereClause, rv), Ranges: ranges(s.WhereClause, rv)}
	case *pg_query.Node_UpdateStmt:
		u := x.UpdateStmt
		if u.WithClause != nil || len(u.FromClause) > 0 || u.WhereClause.GetCurrentOfExpr() != nil {
			return nil
		}
		rv = u.Relation
		ra = &RowAccess{Op: OpUpdate, Eq: equalities(u.WhereClause, rv), Set: setColumns(u.TargetList)}
	case *pg_query.Node_DeleteStmt:
		d := x.DeleteStmt
		if d.WithClause != nil || len(d.UsingClause) > 0 || d.WhereClause.GetCurrentOfExpr() != nil {
			return nil
		}
		rv = d.Relation
		ra = &RowAccess{Op: OpDelete, Eq: equalities(d.WhereClause, rv)}
	case *pg_query.Node_InsertStmt:
		in := x.InsertStmt
		// Without a column list, the values' columns are the table's
		// in order, which only the catalog knows: no Eq, but still a
		// RowAccess, for an insert into a table without unique indexes
		// is blind whatever its columns (syncdep's rowEffect).
		if in.WithClause != nil || in.SelectStmt == nil {
			return nil
		}
		rv = in.Relation
		ra = &RowAccess{Op: OpInsert, Upsert: in.OnConflictClause != nil}
		cols := make([]string, len(in.Cols))
		for i, c := range in.Cols {
			rt := c.GetResTarget()
			if rt == nil || rt.Name == "" || len(rt.Indirection) > 0 {
				return nil
			}
			cols[i] = rt.Name
		}
		if len(cols) > 0 {
			ra.Cols = cols
		}
		if oc := in.OnConflictClause; oc != nil && oc.Action == pg_query.OnConflictAction_ONCONFLICT_UPDATE {
			ra.Set = setColumns(oc.TargetList)
		}
		if sel := in.SelectStmt.GetSelectStmt(); sel != nil && len(sel.ValuesLists) == 1 {
			row := sel.ValuesLists[0].GetList().GetItems()
			if len(cols) == 0 {
				break
			}
			if len(row) != len(cols) {
				return nil
			}
			for i, v := range row {
				if p := paramOf(v); p > 0 && !slices.ContainsFunc(ra.Eq, func(c ColumnParam) bool { return c.Column == cols[i] }) {
					ra.Eq = append(ra.Eq, ColumnParam{Column: cols[i], Param: p})
				}
			}
		}
	default:
		return nil
	}
	if rv == nil || rv.Relname == "" || namedTimes(n, rv.Relname) != 1 {
		return nil
	}
	ra.Rel = rangeVarName(rv)
	return ra
}

// setColumns are the columns of a SET list (SET a[1] = ... assigns a).
func setColumns(targets []*pg_query.Node) []string {
	var out []string
	for _, t := range targets {
		if rt := t.GetResTarget(); rt != nil && rt.Name != "" && !slices.Contains(out, rt.Name) {
			out = append(out, rt.Name)
		}
	}
	return out
}

// equalities returns the columns of rv that the top-level AND of where
// compares with "=" to a bind parameter.
func equalities(where *pg_query.Node, rv *pg_query.RangeVar) []ColumnParam {
	var out []ColumnParam
	conjuncts(where, func(n *pg_query.Node) {
		e := n.GetAExpr()
		if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || len(e.Name) != 1 || e.Name[0].GetString_().GetSval() != "=" {
			return
		}
		col, p := columnOf(e.Lexpr, rv), paramOf(e.Rexpr)
		if col == "" || p == 0 {
			col, p = columnOf(e.Rexpr, rv), paramOf(e.Lexpr)
		}
		if col != "" && p > 0 && !slices.ContainsFunc(out, func(c ColumnParam) bool { return c.Column == col }) {
			out = append(out, ColumnParam{Column: col, Param: p})
		}
	})
	return out
}

// conjuncts calls fn with each operand of where's top-level AND (where
// itself when it is no AND) that is no boolean expression: an OR or a NOT
// is passed over, as nothing in it bounds every row.
func conjuncts(where *pg_query.Node, fn func(*pg_query.Node)) {
	if where == nil {
		return
	}
	if b := where.GetBoolExpr(); b != nil {
		if b.Boolop == pg_query.BoolExprType_AND_EXPR {
			for _, a := range b.Args {
				conjuncts(a, fn)
			}
		}
		return
	}
	fn(where)
}

// ranges returns the columns of rv that the top-level AND of where bounds
// by bind parameters: BETWEEN (not SYMMETRIC, not NOT), >=, >, <=, <,
// either side; a column bounded twice on one side keeps its first
// bound.
func ranges(where *pg_query.Node, rv *pg_query.RangeVar) []ColumnRange {
	var out []ColumnRange
	bound := func(col string, lo, hi int32) {
		i := slices.IndexFunc(out, func(c ColumnRange) bool { return c.Column == col })
		if i < 0 {
			out = append(out, ColumnRange{Column: col})
			i = len(out) - 1
		}
		if out[i].Lo == 0 {
			out[i].Lo = lo
		}
		if out[i].Hi == 0 {
			out[i].Hi = hi
		}
	}
	conjuncts(where, func(n *pg_query.Node) {
		e := n.GetAExpr()
		if e == nil {
			return
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN {
			args := e.Rexpr.GetList().GetItems()
			if col := columnOf(e.Lexpr, rv); col != "" && len(args) == 2 {
				if lo, hi := paramOf(args[0]), paramOf(args[1]); lo > 0 && hi > 0 {
					bound(col, lo, hi)
				}
			}
			return
		}
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || len(e.Name) != 1 {
			return
		}
		op := e.Name[0].GetString_().GetSval()
		col, p := columnOf(e.Lexpr, rv), paramOf(e.Rexpr)
		if col == "" || p == 0 {
			// $n op col: the other way round.
			col, p = columnOf(e.Rexpr, rv), paramOf(e.Lexpr)
			switch op {
			case ">", ">=":
				op = "<"
			case "<", "<=":
				op = ">"
			}
		}
		if col == "" || p == 0 {
			return
		}
		switch op {
		case ">", ">=":
			bound(col, p, 0)
		case "<", "<=":
			bound(col, 0, p)
		}
	})
	return out
}

// columnOf returns the column a reference names, when it is a column of
// rv: "c", "t.c" or "alias.c" (and "s.t.c" with rv's schema).
func columnOf(n *pg_query.Node, rv *pg_query.RangeVar) string {
	cr := n.GetColumnRef()
	if cr == nil {
		return ""
	}
	f := make([]string, len(cr.Fields))
	for i, x := range cr.Fields {
		s := x.GetString_()
		if s == nil {
			return "" // t.*
		}
		f[i] = s.Sval
	}
	qual := rv.Relname
	if rv.Alias != nil {
		qual = rv.Alias.Aliasname
	}
	switch {
	case len(f) == 1:
		return f[0]
	case len(f) == 2 && f[0] == qual:
		return f[1]
	case len(f) == 3 && rv.Alias == nil && f[0] == rv.Schemaname && f[1] == rv.Relname:
		return f[2]
	}
	return ""
}

// keyCasts are the types a parameter may be cast to and still be
// compared by its value as logged (see syncdep's key kinds).
var keyCasts = map[string]bool{"int2": true, "int4": true, "int8": true, "text": true, "varchar": true, "uuid": true}

// paramOf returns n's bind parameter number, when n is $n or $n cast to
// one of keyCasts; 0 otherwise.
func paramOf(n *pg_query.Node) int32 {
	if tc := n.GetTypeCast(); tc != nil {
		names := tc.TypeName.GetNames()
		if len(names) == 0 || len(tc.TypeName.ArrayBounds) > 0 || !keyCasts[names[len(names)-1].GetString_().GetSval()] {
			return 0
		}
		n = tc.Arg
	}
	if p := n.GetParamRef(); p != nil && p.Number > 0 {
		return p.Number
	}
	return 0
}

// namedTimes counts the RangeVars under n named name, in any schema.
func namedTimes(n *pg_query.Node, name string) int {
	count := 0
	eachMessage(n.ProtoReflect(), func(m protoreflect.Message) bool {
		rv, ok := m.Interface().(*pg_query.RangeVar)
		if ok && rv.Relname == name {
			count++
		}
		return !ok
	})
	return count
}

// MaxParamRef returns the highest bind parameter ($n) that text refers
// to, outside string literals, quoted identifiers and comments; -1 when
// it cannot tell (a string literal with a backslash, whose end depends on
// standard_conforming_strings, or one left open).
//
// A normalized statement numbers the constants it replaces after the
// highest parameter of its text: of a normalized $n, only those up to
// MaxParamRef of the logged text are bind parameters whose values the
// log holds.
func MaxParamRef(text string) int32 {
	// The shape lexer's steps (shape.go), which follow PostgreSQL's
	// lexical rules; what they are unsure of is -1 here.
	var hi int32
	n := len(text)
	// tok is where the last token this loop stepped over ended: a "$"
	// right after it starts a token, not the rest of an identifier.
	tok := -1
	for i := 0; i < n; {
		if i = skipPlain(text, i); i >= n {
			break
		}
		switch byteClass[text[i]] {
		case cQuote:
			escapes := i > 0 && (text[i-1] == 'E' || text[i-1] == 'e') && (i < 2 || !isIdent(text[i-2]))
			end, ok := endQuoted(text, i, escapes)
			if !ok || !escapes && strings.IndexByte(text[i:end], '\\') >= 0 {
				return -1
			}
			i, tok = end, end
		case cDQuote:
			end, ok := endQuoted(text, i, false)
			if !ok {
				return -1
			}
			i, tok = end, end
		case cDollar:
			if i > 0 && isIdent(text[i-1]) && i != tok {
				// The rest of an identifier (a$1 is a name).
				end, _, _ := endDollar(text, i)
				i = end
				continue
			}
			end, quoted, ok := dollarToken(text, i)
			if !ok {
				return -1
			}
			if !quoted {
				v, err := strconv.ParseInt(text[i+1:end], 10, 32)
				if err != nil {
					return -1
				}
				hi = max(hi, int32(v))
			}
			i, tok = end, end
		case cDash:
			if i+1 < n && text[i+1] == '-' {
				nl := strings.IndexByte(text[i:], '\n')
				if nl < 0 {
					return hi
				}
				i += nl
				continue
			}
			i++
		case cSlash:
			if i+1 < n && text[i+1] == '*' {
				end, ok := endComment(text, i)
				if !ok {
					return -1
				}
				i = end
				continue
			}
			i++
		case cDot:
			if i+1 < n && isDigit(text[i+1]) {
				end, ok := endNumber(text, i)
				if !ok {
					return -1
				}
				i = end
				continue
			}
			i++
		case cDigit:
			end, ok := endNumber(text, i)
			if !ok {
				return -1
			}
			i = end
		case cMark:
			return -1 // not a text the server takes
		default:
			i++
		}
	}
	return hi
}
