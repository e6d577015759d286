package capture

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// SuspendedTag is the tag of a `complete` record that stands for the
// server's PortalSuspended: an Execute stopped at its row limit. No
// CommandComplete has an empty tag, and a reader that does not know it
// reads a completion of no rows, which still ends the right Execute.
const SuspendedTag = ""

// builtinFunctions names the functions clients call through the fast
// path (libpq's fe-lobj.c, pgjdbc's LargeObjectManager) by their OIDs,
// which are the same on every server (pg_proc.dat): a call reads as the
// SQL that would make it, as a log's fast-path line does.
var builtinFunctions = map[uint32]string{
	715: "lo_create", 952: "lo_open", 953: "lo_close", 954: "loread",
	955: "lowrite", 956: "lo_lseek", 957: "lo_creat", 958: "lo_tell",
	964: "lo_unlink", 1004: "lo_truncate", 3170: "lo_lseek64",
	3171: "lo_tell64", 3172: "lo_truncate64",
}

// fastPathPrefix begins the text of an execution made of a fast-path
// call: the same string as logread.FastPathPrefix, so that a call reads
// as a log's fast-path line does (package replay knows it as
// FastPathPrefix).
const fastPathPrefix = "/* fastpath function call */ "

// functionCall is the execution of a fast-path FunctionCall: its text is
// the SQL that would make the call, as logread.FastPathQuery writes it for
// the large object functions (SELECT pg_catalog.lo_open($1, $2)), its
// parameters the call's arguments as sent, and its Wire the function's
// OID and the formats.
func (d *Decoder) functionCall(s *capSession, m *pgproto3.FunctionCall, at int64) *event.Event {
	ev := d.event(s, event.Execute, at)
	if name, ok := builtinFunctions[m.Function]; ok {
		ev.Query = fastPathPrefix + "SELECT pg_catalog." + name + "(" + placeholders(len(m.Arguments)) + ")"
	} else {
		ev.Query = fastPathPrefix + "SELECT \"function " + strconv.FormatUint(uint64(m.Function), 10) + "\"(" + placeholders(len(m.Arguments)) + ")"
	}
	if len(m.Arguments) > 0 {
		ev.Params = make([]event.Param, len(m.Arguments))
		for i, v := range m.Arguments {
			ev.Params[i] = event.Param{Value: string(v), Null: v == nil}
		}
	}
	w := &event.Wire{FunctionOID: m.Function, ResultFormats: []int16{int16(m.ResultFormatCode)}}
	if len(m.ArgFormatCodes) > 0 {
		w.ParamFormats = make([]int16, len(m.ArgFormatCodes))
		for i, f := range m.ArgFormatCodes {
			w.ParamFormats[i] = int16(f)
		}
	}
	ev.SetWire(w)
	return ev
}

// The OIDs of the functions that make a large object.
const (
	oidLoCreate = 715
	oidLoOpen   = 952
	oidLoCreat  = 957
)

// createsLargeObject says whether ev is a fast-path call that makes a
// large object under an OID the server picks: lo_creat(mode), or
// lo_create(0).
func createsLargeObject(ev *event.Event) bool {
	w := ev.Wire()
	if w == nil {
		return false
	}
	switch w.FunctionOID {
	case oidLoCreat:
		return true
	case oidLoCreate:
		return len(ev.Params) == 1 && (ev.Params[0].Value == "0" || ev.Params[0].Value == "\x00\x00\x00\x00")
	}
	return false
}

// release yields the large object's creation a session held, once its
// next record r (nil: the session's end) is read. The server picked the
// object's OID, which the capture does not hold (it records no
// FunctionCallResponse), and a target would pick another, so that every
// later use of the OID would fail there. When r opens the object
// (lo_open(oid, mode), as libpq's lo_import and pgjdbc's
// LargeObjectManager do right after), that OID is the one the original
// made: the creation is sent as lo_create(oid), which makes the object
// under the same OID on the target. Its text stays the call the
// application made.
func (d *Decoder) release(s *capSession, r *Record) {
	ev := s.held
	s.held = nil
	d.ready = append(d.ready, ev)
	if r == nil || r.Kind != KindFrontend || len(r.Msg) < 5 || r.Msg[0] != wire.FunctionCall {
		return
	}
	var m pgproto3.FunctionCall
	if m.Decode(r.Msg[5:]) != nil || m.Function != oidLoOpen || len(m.Arguments) == 0 || m.Arguments[0] == nil {
		return
	}
	var format uint16 // the first argument's: one code applies to all
	if len(m.ArgFormatCodes) > 0 {
		format = m.ArgFormatCodes[0]
	}
	if format == 1 && len(m.Arguments[0]) != 4 || format > 1 {
		return
	}
	w := *ev.Wire()
	w.FunctionOID, w.ParamFormats = oidLoCreate, []int16{int16(format)}
	ev.SetWire(&w)
	ev.Params = []event.Param{{Value: string(m.Arguments[0])}}
}

func placeholders(n int) string {
	var b []byte
	for i := 1; i <= n; i++ {
		if i > 1 {
			b = append(b, ", "...)
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return string(b)
}
