package fingerprint

import (
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Assigned is a relation a statement updates in place and the columns it
// assigns there: what decides whether the update can be HOT (a new row
// version that no index needs to know of), which it cannot be once an
// index covers one of these columns and the value changes.
type Assigned struct {
	Name
	// Columns are the columns of the SET lists, each once, in order
	// of first appearance, as PostgreSQL folds them (unquoted names
	// in lower case). SET (a, b) = (...) assigns a and b; SET a[1] =
	// ... and SET a.f = ... assign a.
	Columns []string
}

// AssignedColumns returns the relations one SQL statement updates in
// place with the columns it assigns: the SET list of an UPDATE, of
// INSERT ... ON CONFLICT DO UPDATE, and of a MERGE's WHEN MATCHED THEN
// UPDATE, data-modifying CTEs included. A relation updated twice is
// listed once, with the columns of both. nil when the statement updates
// nothing, does not parse or holds several statements. It is read in the
// same parse as Statement's Class (one parse per distinct text), but it
// is not part of the Class an Item gives, which every replayed statement
// gets and which only a plan's explanation needs this of.
func AssignedColumns(sql string) []Assigned {
	c, err := Statement(sql)
	if err != nil {
		return nil
	}
	return c.assigned
}

func visitAssigned(m protoreflect.Message, out *[]Assigned) {
	eachMessage(m, func(m protoreflect.Message) bool {
		switch x := m.Interface().(type) {
		case *pg_query.UpdateStmt:
			addAssigned(out, x.Relation, x.TargetList)
		case *pg_query.InsertStmt:
			if oc := x.OnConflictClause; oc != nil && oc.Action == pg_query.OnConflictAction_ONCONFLICT_UPDATE {
				addAssigned(out, x.Relation, oc.TargetList)
			}
		case *pg_query.MergeStmt:
			for _, w := range x.MergeWhenClauses {
				if mw := w.GetMergeWhenClause(); mw != nil && mw.CommandType == pg_query.CmdType_CMD_UPDATE {
					addAssigned(out, x.Relation, mw.TargetList)
				}
			}
		}
		return true
	})
}

// eachMessage calls fn for m and, while fn returns true for a message,
// for every message under it, depth first.
func eachMessage(m protoreflect.Message, fn func(protoreflect.Message) bool) {
	if !fn(m) {
		return
	}
	// In the order the fields are declared, not Range's: protobuf
	// leaves Range's order undefined, and varies it from one build of
	// the binary to another, so the first of several things found
	// (Class.Volatile, ServerState) would change with the build.
	type field struct {
		fd protoreflect.FieldDescriptor
		v  protoreflect.Value
	}
	var buf [8]field
	fields := buf[:0]
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.MessageKind && !fd.IsMap() {
			fields = append(fields, field{fd, v})
		}
		return true
	})
	slices.SortFunc(fields, func(a, b field) int { return a.fd.Index() - b.fd.Index() })
	for _, f := range fields {
		if f.fd.IsList() {
			l := f.v.List()
			for i := range l.Len() {
				eachMessage(l.Get(i).Message(), fn)
			}
			continue
		}
		eachMessage(f.v.Message(), fn)
	}
}

func addAssigned(out *[]Assigned, rv *pg_query.RangeVar, targets []*pg_query.Node) {
	if rv == nil || rv.Relname == "" {
		return
	}
	n := rangeVarName(rv)
	i := slices.IndexFunc(*out, func(a Assigned) bool { return a.Name == n })
	if i < 0 {
		*out = append(*out, Assigned{Name: n})
		i = len(*out) - 1
	}
	a := &(*out)[i]
	for _, t := range targets {
		if rt := t.GetResTarget(); rt != nil && rt.Name != "" && !slices.Contains(a.Columns, rt.Name) {
			a.Columns = append(a.Columns, rt.Name)
		}
	}
}
