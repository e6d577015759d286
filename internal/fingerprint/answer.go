package fingerprint

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// volatileFuncs are functions whose result changes from one call to the
// next, or from one server to another, by design: a replay's answer of a
// statement that calls one may differ from the original's with nothing
// wrong.
var volatileFuncs = map[string]bool{
	"now": true, "clock_timestamp": true, "statement_timestamp": true, "transaction_timestamp": true,
	"timeofday": true, "random": true, "random_normal": true, "setseed": true,
	"gen_random_uuid": true, "uuidv4": true, "uuidv7": true, "uuid_generate_v1": true,
	"uuid_generate_v1mc": true, "uuid_generate_v4": true,
	"nextval": true, "currval": true, "lastval": true, "setval": true,
	"txid_current": true, "txid_current_if_assigned": true, "txid_current_snapshot": true,
	"pg_current_xact_id": true, "pg_current_xact_id_if_assigned": true, "pg_current_snapshot": true,
	"inet_client_addr": true, "inet_client_port": true, "inet_server_addr": true, "inet_server_port": true,
}

// serverStateFuncs are functions outside the pg_ prefix that read what
// a server assigned or keeps for itself: txid_status (pg_xact_status's
// older name) reads the commit status of a transaction id, which a
// replay's statement carries from the original's server (psql's txid
// test writes the id txid_current() returned into the text) while the
// target gave that id to another transaction.
var serverStateFuncs = map[string]bool{"txid_status": true}

// serverIDTypes are the types whose values a server assigns (object ids
// and their names, transaction ids, positions in the WAL): a cast to one
// reads what the target assigned otherwise.
var serverIDTypes = map[string]bool{
	"oid": true, "regclass": true, "regtype": true, "regproc": true, "regprocedure": true,
	"regoper": true, "regoperator": true, "regnamespace": true, "regrole": true,
	"regconfig": true, "regdictionary": true, "regcollation": true,
	"xid": true, "xid8": true, "cid": true, "tid": true, "pg_lsn": true,
}

// systemColumns are the columns every table has that the server assigns.
var systemColumns = map[string]bool{
	"oid": true, "ctid": true, "xmin": true, "xmax": true, "cmin": true, "cmax": true, "tableoid": true,
}

// answerTraits sets what decides how a statement's answer compares with
// a replay's (Class.Sorted, Volatile, ServerState).
func answerTraits(n *pg_query.Node, c *Class) {
	if sel := n.GetSelectStmt(); sel != nil {
		c.Sorted = len(sel.SortClause) > 0
	}
	eachMessage(n.ProtoReflect(), func(m protoreflect.Message) bool {
		switch x := m.Interface().(type) {
		case *pg_query.FuncCall:
			name := lastName(x.Funcname)
			switch {
			case volatileFuncs[name]:
				setOnce(&c.Volatile, name+"()")
			case strings.HasPrefix(name, "pg_") && name != "pg_sleep" && name != "pg_typeof" || serverStateFuncs[name]:
				// pg_backend_pid(), pg_relation_size(), pg_get_*():
				// the server's own state.
				setOnce(&c.ServerState, name+"()")
			}
		case *pg_query.SQLValueFunction:
			if x.Op >= pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE && x.Op <= pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N {
				setOnce(&c.Volatile, strings.TrimSuffix(strings.TrimPrefix(x.Op.String(), "SVFOP_"), "_N"))
			}
		case *pg_query.TypeName:
			if t := lastName(x.Names); serverIDTypes[t] {
				setOnce(&c.ServerState, t)
			}
		case *pg_query.ColumnRef:
			if col := lastName(x.Fields); systemColumns[col] {
				setOnce(&c.ServerState, col)
			}
		case *pg_query.RangeVar:
			if x.Schemaname == "pg_catalog" || x.Schemaname == "information_schema" || strings.HasPrefix(x.Relname, "pg_") {
				setOnce(&c.ServerState, x.Relname)
			}
		}
		return true
	})
}

// lastName is the last part of a qualified name, "" when it is not a
// string (a star).
func lastName(parts []*pg_query.Node) string {
	if len(parts) == 0 {
		return ""
	}
	return parts[len(parts)-1].GetString_().GetSval()
}

func setOnce(s *string, v string) {
	if *s == "" {
		*s = v
	}
}
