package wire

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// msg is one frontend message of a session, as both users of Names
// note it: a Parse (keep: whether the caller follows the statement), a
// Bind (of the statement it names, kept when Names holds it), a Close.
type msg struct {
	typ        byte
	name, stmt string
	keep       bool
	kind       byte
}

// play notes msgs as the proxy does: a Parse's value is its query, a
// Bind's the value of the statement it binds.
func play(n *Names[string, string], msgs []msg) {
	for _, m := range msgs {
		switch m.typ {
		case Parse:
			n.Parse(m.name, "q:"+m.name, m.keep)
		case Bind:
			s, ok := n.Statement(m.stmt)
			n.Bind(m.name, s, ok)
		case Close:
			n.Close(m.kind, m.name)
		}
	}
}

// held lists what n holds of names: "s:name=value" for statements,
// "p:name=value" for portals.
func held(n *Names[string, string], names []string) []string {
	var out []string
	for _, name := range names {
		if s, ok := n.Statement(name); ok {
			out = append(out, fmt.Sprintf("s:%s=%s", name, s))
		}
	}
	for _, name := range names {
		if p, ok := n.Portal(name); ok {
			out = append(out, fmt.Sprintf("p:%s=%s", name, p))
		}
	}
	return out
}

// TestNames: the statements and portals a session's messages make and
// close, as the server holds them.
func TestNames(t *testing.T) {
	all := []string{"", "s1", "s2", "p1"}
	for _, c := range []struct {
		name string
		msgs []msg
		want []string
	}{
		{"nothing", nil, nil},
		{"a named statement and a portal of it",
			[]msg{{typ: Parse, name: "s1", keep: true}, {typ: Bind, name: "p1", stmt: "s1"}},
			[]string{"s:s1=q:s1", "p:p1=q:s1"}},
		{"the unnamed statement and portal are named \"\"",
			[]msg{{typ: Parse, name: "", keep: true}, {typ: Bind, name: "", stmt: ""}},
			[]string{"s:=q:", "p:=q:"}},
		{"a Parse the caller does not follow forgets the name",
			[]msg{{typ: Parse, name: "", keep: true}, {typ: Parse, name: "", keep: false}},
			nil},
		{"a Bind of a statement not held forgets the portal",
			[]msg{{typ: Parse, name: "s1", keep: true}, {typ: Bind, name: "p1", stmt: "s1"}, {typ: Bind, name: "p1", stmt: "s2"}},
			[]string{"s:s1=q:s1"}},
		{"a portal outlives its statement's Close",
			[]msg{{typ: Parse, name: "s1", keep: true}, {typ: Bind, name: "p1", stmt: "s1"}, {typ: Close, kind: CloseStatement, name: "s1"}},
			[]string{"p:p1=q:s1"}},
		{"closing a portal leaves its statement",
			[]msg{{typ: Parse, name: "s1", keep: true}, {typ: Bind, name: "p1", stmt: "s1"}, {typ: Close, kind: ClosePortal, name: "p1"}},
			[]string{"s:s1=q:s1"}},
		{"closing the unnamed statement",
			[]msg{{typ: Parse, name: "", keep: true}, {typ: Parse, name: "s2", keep: true}, {typ: Close, kind: CloseStatement, name: ""}},
			[]string{"s:s2=q:s2"}},
		{"closing what does not exist changes nothing",
			[]msg{{typ: Parse, name: "s1", keep: true}, {typ: Close, kind: CloseStatement, name: "s2"}, {typ: Close, kind: ClosePortal, name: "s1"}},
			[]string{"s:s1=q:s1"}},
		{"a statement and a portal may share a name",
			[]msg{{typ: Parse, name: "s1", keep: true}, {typ: Bind, name: "s1", stmt: "s1"}, {typ: Close, kind: CloseStatement, name: "s1"}},
			[]string{"p:s1=q:s1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n Names[string, string]
			play(&n, c.msgs)
			if got := held(&n, all); !slices.Equal(got, c.want) {
				t.Errorf("holds %q, want %q", got, c.want)
			}
			n.Reset()
			if s, p := n.Len(); s != 0 || p != 0 {
				t.Errorf("after Reset: %d statements, %d portals", s, p)
			}
		})
	}
}

// TestNamesCopyViews: a name read in place from a relay's buffer
// (View) is copied when kept, so that the buffer's next message does
// not rename what Names holds.
func TestNamesCopyViews(t *testing.T) {
	buf := []byte("s1\x00SELECT 1\x00")
	var n Names[string, string]
	name, query := ParseHead(buf)
	n.Parse(name, strings.Clone(query), true)
	portal, stmt := BindHead([]byte("p1\x00s1\x00"))
	s, ok := n.Statement(stmt)
	n.Bind(portal, s, ok)
	copy(buf, "xx\x00UPDATE t\x00")
	if s, ok := n.Statement("s1"); !ok || s != "SELECT 1" {
		t.Fatalf("statement s1: %q, %v", s, ok)
	}
	if _, ok := n.Statement("xx"); ok {
		t.Error("the buffer's new bytes renamed the statement kept")
	}
	if p, ok := n.Portal("p1"); !ok || p != "SELECT 1" {
		t.Errorf("portal p1: %q, %v", p, ok)
	}
}

// TestNamesNoAllocation: the proxy notes every Parse, Bind and Execute
// of a session that changes no state (the unnamed statement of a query
// it does not follow, as nearly every one is) without allocating on the
// relay's path.
func TestNamesNoAllocation(t *testing.T) {
	parse := encode(t, &pgproto3.Parse{Query: "SELECT 1"})[5:]
	bind := encode(t, &pgproto3.Bind{})[5:]
	exec := encode(t, &pgproto3.Execute{})[5:]
	var n Names[int, int]
	n.Parse("kept", 1, true)
	if a := testing.AllocsPerRun(100, func() {
		name, _ := ParseHead(parse)
		n.Parse(name, 0, false)
		portal, stmt := BindHead(bind)
		s, ok := n.Statement(stmt)
		n.Bind(portal, s, ok)
		n.Portal(ExecuteHead(exec))
	}); a != 0 {
		t.Errorf("%.1f allocations per execution", a)
	}
}

func encode(t testing.TB, m interface{ Encode([]byte) ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHeads: the names the proxy reads in place are those pgproto3
// decodes, and a body cut short gives what it holds.
func TestHeads(t *testing.T) {
	body := func(m interface{ Encode([]byte) ([]byte, error) }) []byte { return encode(t, m)[5:] }
	if name, query := ParseHead(body(&pgproto3.Parse{Name: "s1", Query: "SELECT $1", ParameterOIDs: []uint32{23}})); name != "s1" || query != "SELECT $1" {
		t.Errorf("Parse: %q %q", name, query)
	}
	if portal, stmt := BindHead(body(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s1", Parameters: [][]byte{[]byte("x")}})); portal != "p" || stmt != "s1" {
		t.Errorf("Bind: %q %q", portal, stmt)
	}
	if portal := ExecuteHead(body(&pgproto3.Execute{Portal: "p", MaxRows: 10})); portal != "p" {
		t.Errorf("Execute: %q", portal)
	}
	if kind, name, ok := CloseHead(body(&pgproto3.Close{ObjectType: ClosePortal, Name: "p"})); kind != ClosePortal || name != "p" || !ok {
		t.Errorf("Close: %q %q %v", kind, name, ok)
	}
	for _, c := range []struct {
		body        string
		name, query string
	}{{"", "", ""}, {"s1", "s1", ""}, {"s1\x00SEL", "s1", "SEL"}} {
		if name, query := ParseHead([]byte(c.body)); name != c.name || query != c.query {
			t.Errorf("ParseHead(%q) = %q, %q; want %q, %q", c.body, name, query, c.name, c.query)
		}
	}
	if _, _, ok := CloseHead([]byte("S")); ok {
		t.Error("CloseHead of one byte names something")
	}
}

// FuzzHeads: whatever bytes a client sends as the body of a Parse,
// Bind, Execute or Close, reading its names in place neither panics nor
// reads past the body, and wherever pgproto3 decodes the message, the
// names read in place are the ones it decodes: the proxy and the capture
// decoder follow the same statements and portals.
func FuzzHeads(f *testing.F) {
	for _, m := range []interface{ Encode([]byte) ([]byte, error) }{
		&pgproto3.Parse{Name: "s1", Query: "SELECT $1", ParameterOIDs: []uint32{23}},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s1", Parameters: [][]byte{[]byte("x"), nil}},
		&pgproto3.Execute{Portal: "p", MaxRows: 10},
		&pgproto3.Close{ObjectType: CloseStatement, Name: "s1"},
	} {
		b, err := m.Encode(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[5:])
	}
	f.Add([]byte{})
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		within := func(s string) {
			if len(s) > len(body) || strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("read %q from %q", s, body)
			}
		}
		name, query := ParseHead(body)
		within(name)
		within(query)
		var p pgproto3.Parse
		if p.Decode(body) == nil && (p.Name != name || p.Query != query) {
			t.Fatalf("Parse %q: read %q %q, pgproto3 %q %q", body, name, query, p.Name, p.Query)
		}
		portal, stmt := BindHead(body)
		within(portal)
		within(stmt)
		var b pgproto3.Bind
		if b.Decode(body) == nil && (b.DestinationPortal != portal || b.PreparedStatement != stmt) {
			t.Fatalf("Bind %q: read %q %q, pgproto3 %q %q", body, portal, stmt, b.DestinationPortal, b.PreparedStatement)
		}
		portal = ExecuteHead(body)
		within(portal)
		var e pgproto3.Execute
		if e.Decode(body) == nil && e.Portal != portal {
			t.Fatalf("Execute %q: read %q, pgproto3 %q", body, portal, e.Portal)
		}
		kind, name, ok := CloseHead(body)
		within(name)
		var c pgproto3.Close
		if c.Decode(body) == nil && (!ok || c.ObjectType != kind || c.Name != name) {
			t.Fatalf("Close %q: read %q %q %v, pgproto3 %q %q", body, kind, name, ok, c.ObjectType, c.Name)
		}
	})
}

// cycle reads data over and over.
type cycle struct {
	data []byte
	off  int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := copy(p, c.data[c.off:])
	c.off = (c.off + n) % len(c.data)
	return n, nil
}

// BenchmarkHeads is what following a session's statements and portals
// costs per frontend message, as the proxy does it (the message's type
// byte switched on through this table, its names read in place) and as
// it would with pgproto3's types instead (pgproto3.Backend framing and
// decoding each message into its struct, a type switch): the messages
// of a pgx query through its statement cache (Bind, Describe portal,
// Execute, Sync) and of its first preparation (Parse, Describe
// statement, Sync), 9 messages an iteration, with two text parameters.
// The proxy forwards the bytes it read either way; decoding is all
// pgproto3 would add.
func BenchmarkHeads(b *testing.B) {
	const query = "SELECT id, name, email FROM app.users WHERE id = $1 AND tenant = $2"
	var stream []byte
	for _, m := range []interface{ Encode([]byte) ([]byte, error) }{
		&pgproto3.Parse{Name: "stmtcache_0123456789abcdef", Query: query, ParameterOIDs: []uint32{20, 25}},
		&pgproto3.Describe{ObjectType: CloseStatement, Name: "stmtcache_0123456789abcdef"},
		&pgproto3.Sync{},
		&pgproto3.Bind{PreparedStatement: "stmtcache_0123456789abcdef", ParameterFormatCodes: []int16{1, 0},
			Parameters: [][]byte{{0, 0, 0, 0, 0, 0, 0, 42}, []byte("acme")}, ResultFormatCodes: []int16{1, 0, 0}},
		&pgproto3.Describe{ObjectType: ClosePortal},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
		&pgproto3.Close{ObjectType: CloseStatement, Name: "stmtcache_0123456789abcdef"},
		&pgproto3.Sync{},
	} {
		stream = append(stream, encode(b, m)...)
	}
	const msgs = 9
	b.Run("in-place", func(b *testing.B) {
		var n Names[string, string]
		b.ReportAllocs()
		for b.Loop() {
			for buf := stream; len(buf) > 0; {
				size := int(buf[1])<<24 | int(buf[2])<<16 | int(buf[3])<<8 | int(buf[4])
				msg := buf[:size+1]
				buf = buf[size+1:]
				body := msg[5:]
				switch msg[0] {
				case Parse:
					name, query := ParseHead(body)
					n.Parse(name, query, false)
				case Bind:
					portal, stmt := BindHead(body)
					s, ok := n.Statement(stmt)
					n.Bind(portal, s, ok)
				case Execute:
					n.Portal(ExecuteHead(body))
				case Close:
					if kind, name, ok := CloseHead(body); ok {
						n.Close(kind, name)
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
	})
	b.Run("pgproto3", func(b *testing.B) {
		var n Names[string, string]
		be := pgproto3.NewBackend(&cycle{data: stream}, io.Discard)
		b.ReportAllocs()
		for b.Loop() {
			for range msgs {
				m, err := be.Receive()
				if err != nil {
					b.Fatal(err)
				}
				switch m := m.(type) {
				case *pgproto3.Parse:
					n.Parse(m.Name, m.Query, false)
				case *pgproto3.Bind:
					s, ok := n.Statement(m.PreparedStatement)
					n.Bind(m.DestinationPortal, s, ok)
				case *pgproto3.Execute:
					n.Portal(m.Portal)
				case *pgproto3.Close:
					n.Close(m.ObjectType, m.Name)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
	})
}
