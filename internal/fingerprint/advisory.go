package fingerprint

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// AdvisoryOp is what a call of one of PostgreSQL's advisory-lock
// functions does.
type AdvisoryOp uint8

// Advisory-lock operations.
const (
	// AdvisoryLock: pg_advisory_lock and its _shared and _xact forms,
	// which wait for the lock.
	AdvisoryLock AdvisoryOp = iota + 1
	// AdvisoryTry: pg_try_advisory_lock and its forms, which take the
	// lock if it is free and answer whether they did.
	AdvisoryTry
	// AdvisoryUnlock: pg_advisory_unlock and pg_advisory_unlock_shared.
	AdvisoryUnlock
	// AdvisoryUnlockAll: pg_advisory_unlock_all, which releases every
	// session-level lock of the session.
	AdvisoryUnlockAll
)

// Advisory is one call of an advisory-lock function in a statement.
type Advisory struct {
	Op AdvisoryOp
	// Shared: a _shared form; Xact: an _xact form (held until the
	// transaction ends, not until unlocked).
	Shared, Xact bool
	// Key is the lock's key: one bigint, or two integers (a separate
	// key space on the server), as the call's arguments give them.
	// Nil for AdvisoryUnlockAll, and when an argument is neither a
	// constant nor a bind parameter (a column, hashtext('...'), an
	// expression): the key is then not known from the text.
	Key []KeyArg
}

// KeyArg is one argument of an advisory-lock call: the $n of the
// normalized statement it is (a bind parameter, or a constant the
// normalization numbered), or, where the statement was parsed from its
// logged text, the integer constant itself (Const).
type KeyArg struct {
	Param int32
	Value int64
	Const bool
}

// advisoryFuncs names the advisory-lock functions by their names in
// pg_catalog: what each does.
var advisoryFuncs = map[string]Advisory{
	"pg_advisory_lock":                 {Op: AdvisoryLock},
	"pg_advisory_lock_shared":          {Op: AdvisoryLock, Shared: true},
	"pg_advisory_xact_lock":            {Op: AdvisoryLock, Xact: true},
	"pg_advisory_xact_lock_shared":     {Op: AdvisoryLock, Shared: true, Xact: true},
	"pg_try_advisory_lock":             {Op: AdvisoryTry},
	"pg_try_advisory_lock_shared":      {Op: AdvisoryTry, Shared: true},
	"pg_try_advisory_xact_lock":        {Op: AdvisoryTry, Xact: true},
	"pg_try_advisory_xact_lock_shared": {Op: AdvisoryTry, Shared: true, Xact: true},
	"pg_advisory_unlock":               {Op: AdvisoryUnlock},
	"pg_advisory_unlock_shared":        {Op: AdvisoryUnlock, Shared: true},
	"pg_advisory_unlock_all":           {Op: AdvisoryUnlockAll},
}

// callsAdvisory reports whether c names an advisory-lock function.
func (c *Class) callsAdvisory() bool {
	for _, f := range c.funcNames {
		if strings.HasPrefix(f, "pg_advisory") || strings.HasPrefix(f, "pg_try_advisory") {
			return true
		}
	}
	return false
}

// advisoryCalls returns the advisory-lock calls of statement n, in the
// order of its text, when c says it has any.
func advisoryCalls(n *pg_query.Node, c *Class) []Advisory {
	if n == nil || !c.callsAdvisory() {
		return nil
	}
	var out []Advisory
	var visit func(m protoreflect.Message)
	visit = func(m protoreflect.Message) {
		if f, ok := m.Interface().(*pg_query.FuncCall); ok {
			if a, ok := advisoryOf(f); ok {
				out = append(out, a)
			}
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Kind() != protoreflect.MessageKind, fd.IsMap():
			case fd.IsList():
				l := v.List()
				for i := range l.Len() {
					visit(l.Get(i).Message())
				}
			default:
				visit(v.Message())
			}
			return true
		})
	}
	visit(n.ProtoReflect())
	return out
}

// advisoryOf reads one function call as an advisory-lock call.
func advisoryOf(f *pg_query.FuncCall) (Advisory, bool) {
	parts := f.Funcname
	if len(parts) == 0 || len(parts) > 2 {
		return Advisory{}, false
	}
	if len(parts) == 2 && parts[0].GetString_().GetSval() != "pg_catalog" {
		return Advisory{}, false
	}
	a, ok := advisoryFuncs[parts[len(parts)-1].GetString_().GetSval()]
	if !ok {
		return Advisory{}, false
	}
	if a.Op == AdvisoryUnlockAll || len(f.Args) == 0 || len(f.Args) > 2 {
		return a, true
	}
	key := make([]KeyArg, 0, len(f.Args))
	for _, arg := range f.Args {
		k, ok := keyArg(arg)
		if !ok {
			return a, true // the key is not known from the text
		}
		key = append(key, k)
	}
	a.Key = key
	return a, true
}

// keyArg reads an argument that is a $n or an integer constant, under
// any casts ($1::bigint).
func keyArg(n *pg_query.Node) (KeyArg, bool) {
	for n.GetTypeCast() != nil {
		n = n.GetTypeCast().Arg
	}
	if p := n.GetParamRef(); p != nil && p.Number > 0 {
		return KeyArg{Param: p.Number}, true
	}
	if c := n.GetAConst(); c != nil && c.GetIval() != nil {
		return KeyArg{Value: int64(c.GetIval().Ival), Const: true}, true
	}
	return KeyArg{}, false
}
