package proxy

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestNegotiation: GSSENCRequest is refused with 'N' and the client goes
// on in plain; SSLRequest without Config.TLS gets 'N' (pgx's default
// sslmode=prefer then goes on in plain); a protocol version the server
// does not know passes through untouched, and so does the server's
// NegotiateProtocolVersion; pgx asking for protocol 3.2 logs in. The
// startup records keep the parameters in the client's order and the
// version it asked for.
func TestNegotiation(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	ctx := context.Background()

	conn, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	var gss [8]byte
	binary.BigEndian.PutUint32(gss[0:], 8)
	binary.BigEndian.PutUint32(gss[4:], gssEncRequestCode)
	conn.Write(gss[:])
	var answer [1]byte
	if _, err := io.ReadFull(conn, answer[:]); err != nil || answer[0] != 'N' {
		t.Fatalf("GSSENCRequest answered %q (%v), want N", answer[0], err)
	}
	// Protocol 3.99: the server answers NegotiateProtocolVersion (3.0)
	// and goes on.
	packet := startupPacket("database", "postgres", "user", "postgres", "application_name", "negotiation")
	packet[7] = 99
	conn.Write(packet)
	fe := pgproto3.NewFrontend(conn, conn)
	negotiated := false
	receiveUntil(t, fe, func(m pgproto3.BackendMessage) bool {
		if n, ok := m.(*pgproto3.NegotiateProtocolVersion); ok {
			// pgproto3 gives the whole version, 3.0.
			negotiated = n.NewestMinorProtocol == pgproto3.ProtocolVersion30
		}
		return isReady(m)
	})
	if !negotiated {
		t.Error("no NegotiateProtocolVersion for 3.0 reached the client")
	}
	fe.Send(&pgproto3.Terminate{})
	fe.Flush()

	for _, extra := range []string{"", "max_protocol_version=3.2"} {
		pc, err := pgconn.Connect(ctx, r.dsn("postgres", "postgres", extra))
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		if isTLS(pc) {
			t.Errorf("%q: TLS to a proxy without Config.TLS", extra)
		}
		if _, err := pc.Exec(ctx, "SELECT 1").ReadAll(); err != nil {
			t.Errorf("%q: %v", extra, err)
		}
		pc.Close(ctx)
	}

	m := r.sink.waitEnds(t, 3)
	checkSessions(t, m)
	first := m[1][0]
	wantParams := []capture.Param{{Name: "database", Value: "postgres"}, {Name: "user", Value: "postgres"},
		{Name: "application_name", Value: "negotiation"}}
	if first.ProtocolMajor != 3 || first.ProtocolMinor != 99 || len(first.Params) != 3 || first.Params[0] != wantParams[0] ||
		first.Params[1] != wantParams[1] || first.Params[2] != wantParams[2] || first.TLS || first.BackendPID == 0 {
		t.Errorf("startup record %+v, want protocol 3.99, params %v in that order, no TLS, a backend pid", first, wantParams)
	}
	if v := m[3][0]; v.ProtocolMajor != 3 || v.ProtocolMinor != 2 {
		t.Errorf("pgx with max_protocol_version=3.2 recorded as protocol %d.%d", v.ProtocolMajor, v.ProtocolMinor)
	}
}
