package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// tapConn keeps a copy of every byte read from and written to a connection.
type tapConn struct {
	net.Conn
	in, out bytes.Buffer
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Write(b[:n])
	return n, err
}

func (c *tapConn) Write(b []byte) (int, error) {
	c.out.Write(b)
	return c.Conn.Write(b)
}

// startupPacket encodes a StartupMessage with its parameters in the order
// given (pgproto3's map would not keep one).
func startupPacket(params ...string) []byte {
	b := []byte{0, 0, 0, 0, 0, 3, 0, 0}
	for _, p := range params {
		b = append(append(b, p...), 0)
	}
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

// receiveUntil reads backend messages until one for which stop is true.
func receiveUntil(t *testing.T, fe *pgproto3.Frontend, stop func(pgproto3.BackendMessage) bool) {
	t.Helper()
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if stop(msg) {
			return
		}
	}
}

func isReady(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok }

// scriptedSession runs one deterministic session (simple and extended
// protocol with binary parameters, an error, a notice, COPY FROM STDIN,
// Terminate) on a connection to addr with trust authentication. It
// returns every byte the server sent, BackendKeyData's body zeroed, and
// every byte the client sent after its startup packet.
func scriptedSession(t *testing.T, addr string) (received, sent []byte) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	conn := &tapConn{Conn: nc}
	fe := pgproto3.NewFrontend(conn, conn)
	if _, err := conn.Write(startupPacket("user", "postgres", "database", "postgres")); err != nil {
		t.Fatal(err)
	}
	receiveUntil(t, fe, isReady)
	sentFrom := conn.out.Len()

	fe.Send(&pgproto3.Query{String: "SELECT 1 AS one, 'a'::text AS t; SELECT generate_series(1, 3)"})
	fe.Send(&pgproto3.Parse{Name: "s1", Query: "SELECT $1::int4 + $2::int8, $3::bytea", ParameterOIDs: []uint32{23, 20, 17}})
	fe.Send(&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{1, 0, 1},
		Parameters: [][]byte{{0, 0, 0, 7}, []byte("8"), {0xde, 0xad, 0, 0xbe, 0xef}}, ResultFormatCodes: []int16{1}})
	fe.Send(&pgproto3.Describe{ObjectType: 'P'})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	receiveUntil(t, fe, isReady)
	receiveUntil(t, fe, isReady)
	for _, q := range []string{"SELECT 1/0", "DO $$BEGIN RAISE NOTICE 'hello %', 42; END$$"} {
		fe.Send(&pgproto3.Query{String: q})
		fe.Flush()
		receiveUntil(t, fe, isReady)
	}
	fe.Send(&pgproto3.Query{String: "CREATE TEMP TABLE ct (a int); COPY ct FROM STDIN"})
	fe.Flush()
	receiveUntil(t, fe, func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.CopyInResponse); return ok })
	fe.Send(&pgproto3.CopyData{Data: []byte("1\n2\n")})
	fe.Send(&pgproto3.CopyData{Data: []byte("3\n")})
	fe.Send(&pgproto3.CopyDone{})
	fe.Flush()
	receiveUntil(t, fe, isReady)
	// a + 0: a column of ct would carry the temporary table's oid,
	// which differs between the two sessions.
	fe.Send(&pgproto3.Query{String: "SELECT a + 0 AS a FROM ct ORDER BY a"})
	fe.Flush()
	receiveUntil(t, fe, isReady)
	fe.Send(&pgproto3.Terminate{})
	fe.Flush()
	io.Copy(io.Discard, conn)

	received = bytes.Clone(conn.in.Bytes())
	for rest := received; len(rest) >= 5; {
		size := 1 + int(binary.BigEndian.Uint32(rest[1:]))
		if rest[0] == 'K' {
			clear(rest[5:size])
		}
		rest = rest[size:]
	}
	return received, bytes.Clone(conn.out.Bytes()[sentFrom:])
}

// TestByteIdentity runs the same session directly and through the proxy:
// the client receives the same bytes (BackendKeyData's process id and key
// aside), and the capture holds exactly the bytes the client sent after
// its startup packet, message by message.
func TestByteIdentity(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	direct, _ := scriptedSession(t, "127.0.0.1:"+strconv.Itoa(c.Port()))
	proxied, sent := scriptedSession(t, r.addr)
	if !bytes.Equal(direct, proxied) {
		t.Errorf("the client received %d bytes through the proxy, %d directly, not the same:\ndirect:  %q\nproxied: %q",
			len(proxied), len(direct), direct, proxied)
	}
	m := r.sink.waitEnds(t, 1)
	checkSessions(t, m)
	var recorded []byte
	var kinds []string
	for _, rec := range m[1] {
		if rec.Kind == capture.KindFrontend {
			recorded = append(recorded, rec.Msg...)
		}
		kinds = append(kinds, rec.Kind.String())
	}
	if !bytes.Equal(recorded, sent) {
		t.Errorf("recorded frontend bytes differ from the client's:\nclient:   %q\nrecorded: %q", sent, recorded)
	}
	if m[1][len(m[1])-1].End != capture.EndTerminate {
		t.Errorf("session ended %v, want terminate", m[1][len(m[1])-1].End)
	}
	// The answers, summarized, between the requests they answer.
	// The query and the extended batch go in one write.
	want := "startup ready frontend frontend frontend frontend frontend frontend complete complete ready complete ready " +
		"frontend error ready frontend complete ready frontend complete copy_in frontend frontend frontend complete ready " +
		"frontend complete ready frontend end"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("records\n%s\nwant\n%s", got, want)
	}
}

// rawSession connects to addr, authenticates with trust and returns the
// connection ready for a query, and its frontend.
func rawSession(t *testing.T, addr string) (net.Conn, *pgproto3.Frontend) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(time.Minute))
	fe := pgproto3.NewFrontend(conn, conn)
	if _, err := conn.Write(startupPacket("user", "postgres", "database", "postgres")); err != nil {
		t.Fatal(err)
	}
	receiveUntil(t, fe, isReady)
	return conn, fe
}

// fatalThenClose reads what the proxy answers a broken connection: one
// FATAL ErrorResponse, then the close. It returns the message.
func fatalThenClose(t *testing.T, conn net.Conn) string {
	t.Helper()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	all, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if !errors.As(err, &ne) || ne.Timeout() {
			t.Fatalf("reading the answer: %v", err)
		}
	}
	i := bytes.LastIndexByte(all, 'E')
	for i >= 0 && (len(all)-i < 5 || int(binary.BigEndian.Uint32(all[i+1:]))+1 != len(all)-i) {
		i = bytes.LastIndexByte(all[:i], 'E')
	}
	if i < 0 {
		t.Fatalf("no ErrorResponse before the close: %q (%v)", all, err)
	}
	var e pgproto3.ErrorResponse
	if err := e.Decode(all[i+5:]); err != nil {
		t.Fatal(err)
	}
	if e.Severity != "FATAL" {
		t.Errorf("severity %s, want FATAL", e.Severity)
	}
	return e.Code + " " + e.Message
}

// TestBrokenClients: a malformed startup packet, an unknown startup code,
// a message declaring 1 GiB and a client gone in the middle of a message
// each end their own connection, with a clear error where the client
// still reads; a session opened before them goes on.
func TestBrokenClients(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	ctx := context.Background()
	good, err := pgconn.Connect(ctx, r.dsn("postgres", "postgres", "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close(ctx)
	stillGood := func(after string) {
		t.Helper()
		res, err := good.Exec(ctx, "SELECT 42").ReadAll()
		if err != nil || string(res[0].Rows[0][0]) != "42" {
			t.Fatalf("after %s, the good session: %v", after, err)
		}
	}
	stillGood("connecting")

	for _, tc := range []struct {
		name   string
		packet []byte
		want   string
	}{
		{"short length", []byte{0, 0, 0, 3}, "invalid startup packet: length 3"},
		{"huge length", []byte{0x7f, 0, 0, 0, 0, 3, 0, 0}, "invalid startup packet: length 2130706432"},
		{"unknown code", []byte{0, 0, 0, 8, 0, 9, 9, 9}, "invalid startup packet: unknown startup message code"},
		{"no terminator", []byte{0, 0, 0, 12, 0, 3, 0, 0, 'u', 's', 'e', 'r'}, "invalid startup packet"},
	} {
		conn, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(tc.packet)
		if got := fatalThenClose(t, conn); !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "08P01 ") {
			t.Errorf("%s: the proxy answered %q, want 08P01 and %q", tc.name, got, tc.want)
		}
		conn.Close()
		stillGood(tc.name)
	}

	// A Query declaring 1 GiB, one more than the server would take.
	conn, _ := rawSession(t, r.addr)
	head := []byte{'Q', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(head[1:], 1<<30)
	conn.Write(append(head, "SELECT"...))
	if got := fatalThenClose(t, conn); !strings.Contains(got, "declares length 1073741824") {
		t.Errorf("1 GiB message: the proxy answered %q", got)
	}
	stillGood("a 1 GiB message")

	// Half a Query, then gone.
	conn, _ = rawSession(t, r.addr)
	half := []byte{'Q', 0, 0, 0, 100}
	conn.Write(append(half, "SELECT 1"...))
	conn.Close()
	m := r.sink.waitEnds(t, 2)
	stillGood("a client gone mid-message")

	for _, rec := range m[1] {
		if rec.Kind == capture.KindEnd {
			t.Errorf("the good session ended")
		}
	}
	delete(m, 1)
	ends := checkSessions(t, m)
	if len(ends) != 2 || ends[2] != capture.EndClientGone || ends[3] != capture.EndClientGone {
		t.Errorf("sessions ended %v, want client_gone for sessions 2 and 3", ends)
	}
	st := r.p.Stats()
	if st.Errors[ErrStartup] != 4 || st.Errors[ErrClientProtocol] != 1 || st.SessionsOpen != 1 {
		t.Errorf("stats %+v, want 4 startup errors, 1 client protocol error, 1 session open", st)
	}
	if w := r.warns(); len(w) != 6 {
		t.Errorf("warnings %q, want 6 (one per broken connection and one for the client gone)", w)
	}
}

// TestUpstreamRestart restarts the server under a session through the
// proxy and one direct: the client through the proxy sees what the
// direct one sees (the server's FATAL), and the session ends
// server_gone.
func TestUpstreamRestart(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	ctx := context.Background()
	proxied, err := pgconn.Connect(ctx, r.dsn("postgres", "postgres", "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Close(ctx)
	direct, err := pgconn.Connect(ctx, "host=127.0.0.1 port="+strconv.Itoa(c.Port())+" user=postgres dbname=postgres sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	if err := c.Restart(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	_, errP := proxied.Exec(ctx, "SELECT 1").ReadAll()
	_, errD := direct.Exec(ctx, "SELECT 1").ReadAll()
	var pgP, pgD *pgconn.PgError
	if errP == nil || errD == nil {
		t.Fatalf("after the restart, proxied: %v, direct: %v; want both to fail", errP, errD)
	}
	if errors.As(errD, &pgD) && (!errors.As(errP, &pgP) || pgP.Code != pgD.Code || pgP.Message != pgD.Message) {
		t.Errorf("after the restart, proxied: %v, direct: %v", errP, errD)
	}
	m := r.sink.waitEnds(t, 1)
	for id, end := range checkSessions(t, m) {
		if end != capture.EndServerGone {
			t.Errorf("session %d ended %v, want server_gone", id, end)
		}
	}
	// The proxy still serves once the server is back.
	again, err := pgconn.Connect(ctx, r.dsn("postgres", "postgres", "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	again.Close(ctx)
}
