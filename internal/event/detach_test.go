package event

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestDetach: a detached event equals its original field for field, and
// no string, slice or pointer of it (the rare fields' too, found by
// reflection, so that a field added later is checked as well) points
// where the original's does, but what only a capture has (Wire, Answer,
// CopyIns), which is shared. A second event of the session takes the
// session's strings from names, without a copy.
func TestDetach(t *testing.T) {
	// The texts are slices of one buffer, as a reader's are of its block.
	block := strings.Repeat("x", 8) + "s1 alice shop psql SELECT $1 stmt 42P01 42 7 ERROR boom p1 plan opt val SET x = 1"
	at := func(s string) string {
		i := strings.Index(block, s)
		return block[i : i+len(s)]
	}
	e := &Event{Kind: Execute, ParamState: ParamsComplete, Failed: true, Lane: 2, PID: 7, Time: 100,
		Session: at("s1"), User: at("alice"), Database: at("shop"), Application: at("psql"),
		Duration: 5, Query: at("SELECT $1"), Name: at("stmt"), SQLState: at("42P01"), Line: 3, Pos: 9,
		Params: []Param{{Value: at("42")}, {Null: true}, {Value: at("7"), Binary: true}}}
	e.SetError(at("ERROR"), at("boom"))
	e.SetPortal(at("p1"))
	e.AddPlan(Plan{Text: at("plan"), Format: PlanText, Analyzed: true, Duration: 4})
	e.SetStartup([]Setting{{Name: at("opt"), Value: at("val")}})
	e.SetPreamble([]string{at("SET x = 1")})
	e.SetWire(&Wire{ParamOIDs: []uint32{23}})
	e.SetAnswer(&Answer{Rows: []int64{1}})
	e.SetCopyData([][]byte{[]byte("1\n")})

	var names Names
	d := e.Detach(&names)
	if !reflect.DeepEqual(d, e) {
		t.Fatalf("detached %+v\nwant     %+v", d, e)
	}
	shared := map[string]bool{"wire": true, "answer": true, "copyIns": true}
	checkApart(t, "Event", reflect.ValueOf(d).Elem(), reflect.ValueOf(e).Elem(), shared)
	if names.Session != "s1" || names.User != "alice" || names.Database != "shop" || names.Application != "psql" {
		t.Errorf("names %+v", names)
	}

	// The next event of the session: its strings are the names'.
	e2 := &Event{Kind: Statement, Session: at("s1"), User: at("alice"), Database: at("shop"), Application: at("psql"), Query: at("SELECT $1")}
	d2 := e2.Detach(&names)
	if unsafe.StringData(d2.Session) != unsafe.StringData(d.Session) || unsafe.StringData(d2.User) != unsafe.StringData(d.User) {
		t.Errorf("the session's strings were copied again")
	}
	if d2.rare != nil || d2.Params != nil {
		t.Errorf("rare %v, params %v: want none, as the original", d2.rare, d2.Params)
	}
	// Another application in the same session: copied, and kept.
	e3 := *e2
	e3.Application = at("shop")
	if d3 := e3.Detach(&names); d3.Application != "shop" || names.Application != "shop" || unsafe.StringData(d3.Application) == unsafe.StringData(e3.Application) {
		t.Errorf("application %q (names %q), or not copied", d3.Application, names.Application)
	}
}

// checkApart fails when a string, slice or pointer in d (recursively)
// points where the same one in e does, but for the fields named shared.
func checkApart(t *testing.T, path string, d, e reflect.Value, shared map[string]bool) {
	t.Helper()
	switch d.Kind() {
	case reflect.String:
		if d.Len() > 0 && unsafe.StringData(d.String()) == unsafe.StringData(e.String()) {
			t.Errorf("%s shares its text with the original", path)
		}
	case reflect.Slice:
		if d.Len() > 0 && d.Pointer() == e.Pointer() {
			t.Errorf("%s shares its array with the original", path)
		}
		for i := 0; i < d.Len() && i < e.Len(); i++ {
			checkApart(t, path+"[]", d.Index(i), e.Index(i), shared)
		}
	case reflect.Pointer:
		if d.IsNil() {
			return
		}
		if d.Pointer() == e.Pointer() {
			t.Errorf("%s points where the original's does", path)
		}
		checkApart(t, path, d.Elem(), e.Elem(), shared)
	case reflect.Struct:
		for i := range d.NumField() {
			name := d.Type().Field(i).Name
			if shared[name] {
				continue
			}
			checkApart(t, path+"."+name, d.Field(i), e.Field(i), shared)
		}
	}
}
