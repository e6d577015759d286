package replay

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// TestBakedOIDParam: an OID lookup error of a statement that passed an id
// the original's server assigned, typed as an object id (by a cast in its
// text, a literal or a parameter, or by its Parse), is a baked id; any
// other error, a built-in id, an id not typed so, is not.
func TestBakedOIDParam(t *testing.T) {
	const partkey = "SELECT pg_catalog.pg_get_partkeydef($1::pg_catalog.oid)"
	const lookup = "cache lookup failed for relation 16390"
	params := func(vs ...string) []event.Param {
		var ps []event.Param
		for _, v := range vs {
			ps = append(ps, event.Param{Value: v})
		}
		return ps
	}
	wire := func(ev *event.Event, oids []uint32, formats []int16) *event.Event {
		ev.SetWire(&event.Wire{ParamOIDs: oids, ParamFormats: formats})
		return ev
	}
	for _, c := range []struct {
		name    string
		message string
		ev      *event.Event
		want    bool
	}{
		{"psql's \\d, extended", lookup, &event.Event{Kind: event.Execute, Query: partkey, Params: params("16390")}, true},
		{"psql's \\d, simple", lookup, &event.Event{Kind: event.Statement, Query: "SELECT pg_catalog.pg_get_partkeydef('16390'::pg_catalog.oid);"}, true},
		{"bare literal, regclass", "could not open relation with OID 16390", &event.Event{Kind: event.Statement, Query: "SELECT relname FROM pg_class WHERE oid = 16390::regclass"}, true},
		{"ereport form", "relation with OID 16390 does not exist", &event.Event{Kind: event.Execute, Query: "SELECT $2::text, $1 :: OID", Params: params("16390", "x")}, true},
		{"typed by the Parse", lookup, wire(&event.Event{Kind: event.Execute, Query: "SELECT pg_get_partkeydef($1)", Params: params("16390")}, []uint32{26}, nil), true},
		{"binary oid", lookup, wire(&event.Event{Kind: event.Execute, Query: partkey, Params: params("\x00\x00\x40\x06")}, []uint32{26}, []int16{1}), true},
		{"built-in id", "cache lookup failed for relation 1259", &event.Event{Kind: event.Execute, Query: partkey, Params: params("1259")}, false},
		{"another error", `relation "t" does not exist`, &event.Event{Kind: event.Execute, Query: partkey, Params: params("16390")}, false},
		{"not typed as an id", lookup, &event.Event{Kind: event.Execute, Query: "SELECT pg_get_partkeydef($1)", Params: params("16390")}, false},
		{"int parameter typed by the Parse", lookup, wire(&event.Event{Kind: event.Execute, Query: "SELECT f($1)", Params: params("16390")}, []uint32{23}, nil), false},
		{"other parameter cast", lookup, &event.Event{Kind: event.Execute, Query: "SELECT $1::int, $2::oid", Params: params("16390", "1259")}, false},
		{"NULL", lookup, &event.Event{Kind: event.Execute, Query: partkey, Params: []event.Param{{Null: true}}}, false},
		{"missing parameter", lookup, &event.Event{Kind: event.Execute, Query: partkey}, false},
		{"no event", lookup, nil, false},
	} {
		if got := bakedOIDParam(c.message, c.ev); got != c.want {
			t.Errorf("%s: bakedOIDParam = %v, want %v", c.name, got, c.want)
		}
	}
}

// FuzzBakedOIDParam: any text, parameter and message: no panic, and no
// error but an OID lookup's is ever explained.
func FuzzBakedOIDParam(f *testing.F) {
	f.Add("SELECT pg_catalog.pg_get_partkeydef($1::pg_catalog.oid)", "16390", "cache lookup failed for relation 16390")
	f.Add("SELECT '16390'::regclass", "", "could not open relation with OID 16390")
	f.Add("SELECT $9::oid, $0::oid, 1::oid", "99999999999", `relation "t" does not exist`)
	f.Fuzz(func(t *testing.T, query, param, message string) {
		ev := &event.Event{Kind: event.Execute, Query: query, Params: []event.Param{{Value: param}}}
		got := bakedOIDParam(message, ev)
		if got && !oidLookupError(message) {
			t.Errorf("%q explained though not an OID lookup error", message)
		}
		ev.SetWire(&event.Wire{ParamOIDs: []uint32{26}, ParamFormats: []int16{1}})
		bakedOIDParam(message, ev)
	})
}
