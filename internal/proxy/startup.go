package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// startupTimeout bounds how long a client may take to send its startup
// packet (and finish TLS), as the server's authentication_timeout does.
const startupTimeout = time.Minute

// maxStartupLen is the server's MAX_STARTUP_PACKET_LENGTH.
const maxStartupLen = 10000

const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
)

// handle serves one accepted connection: startup negotiation, then a
// session or a cancel.
func (p *Proxy) handle(conn net.Conn) {
	l := &link{client: conn}
	if !p.track(l) {
		return
	}
	defer p.untrack(l)
	addr := conn.RemoteAddr().String()
	client := conn
	tlsDone, gssDone := false, false
	client.SetDeadline(time.Now().Add(startupTimeout))
	for {
		raw, msg, err := readStartup(client)
		if err != nil {
			if errors.Is(err, io.EOF) && !tlsDone && !gssDone || p.stopping() {
				// Connected and left without a word: a port probe
				// (a load balancer's health check), not a problem.
				// Or Serve closed the connection.
				return
			}
			p.problem(ErrStartup, fmt.Sprintf("client %s: invalid startup packet (%v); closing the connection.", addr, err))
			refuse(client, "08P01", "invalid startup packet: "+err.Error())
			return
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if tlsDone || p.cfg.TLS == nil {
				if tlsDone {
					p.problem(ErrStartup, fmt.Sprintf("client %s: a second SSLRequest; closing the connection.", addr))
					refuse(client, "08P01", "unexpected second SSLRequest")
					return
				}
				tlsDone = true
				if _, err := client.Write([]byte{wire.EncryptionRefused}); err != nil {
					return
				}
				continue
			}
			if _, err := client.Write([]byte{wire.EncryptionAccepted}); err != nil {
				return
			}
			tc := tls.Server(client, p.cfg.TLS)
			if err := tc.Handshake(); err != nil {
				p.problem(ErrClientTLS, fmt.Sprintf("client %s: TLS handshake failed: %v.", addr, err))
				return
			}
			client, tlsDone = tc, true
			l.setClient(tc)
		case *pgproto3.GSSEncRequest:
			if gssDone || tlsDone {
				p.problem(ErrStartup, fmt.Sprintf("client %s: GSSENCRequest after encryption negotiation; closing the connection.", addr))
				refuse(client, "08P01", "unexpected GSSENCRequest")
				return
			}
			gssDone = true
			if _, err := client.Write([]byte{wire.EncryptionRefused}); err != nil {
				return
			}
		case *pgproto3.CancelRequest:
			p.cancel(raw, m.ProcessID, addr)
			return
		case *pgproto3.StartupMessage:
			client.SetDeadline(time.Time{})
			p.session(l, client, raw, addr, tlsDone && client != conn)
			return
		}
	}
}

// readStartup reads one startup packet exactly (no byte of what follows)
// and returns its bytes and its decoding by pgproto3. A StartupMessage of
// protocol 3.x for a minor version pgproto3 does not know is decoded as
// 3.0: the server answers it with NegotiateProtocolVersion, which the
// proxy passes through.
func readStartup(r io.Reader) ([]byte, pgproto3.FrontendMessage, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(head[:])))
	if n < 8 || n > maxStartupLen {
		return nil, nil, fmt.Errorf("length %d outside 8 to %d", n, maxStartupLen)
	}
	raw := make([]byte, n)
	copy(raw, head[:])
	if _, err := io.ReadFull(r, raw[4:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, fmt.Errorf("client gone after %d bytes of %d: %w", 4, n, err)
	}
	decode := raw
	if v := binary.BigEndian.Uint32(raw[4:]); v>>16 == 3 && v != pgproto3.ProtocolVersion30 && v != pgproto3.ProtocolVersion32 {
		decode = bytes.Clone(raw)
		binary.BigEndian.PutUint32(decode[4:], pgproto3.ProtocolVersion30)
	}
	msg, err := pgproto3.NewBackend(bytes.NewReader(decode), io.Discard).ReceiveStartupMessage()
	if err != nil {
		return nil, nil, err
	}
	return raw, msg, nil
}

// startupParams returns a StartupMessage's parameters in the order the
// client sent them (pgproto3 keeps them in a map).
func startupParams(raw []byte) []capture.Param {
	var params []capture.Param
	rest := raw[8:]
	for {
		name, r, ok := bytes.Cut(rest, []byte{0})
		if !ok || len(name) == 0 {
			return params
		}
		value, r, ok := bytes.Cut(r, []byte{0})
		if !ok {
			return params
		}
		params = append(params, capture.Param{Name: string(name), Value: string(value)})
		rest = r
	}
}

// writeFatal tells the client why the proxy closes its connection, as
// the server would: a FATAL ErrorResponse.
func writeFatal(w io.Writer, code, message string) {
	msg, err := (&pgproto3.ErrorResponse{
		Severity:            "FATAL",
		SeverityUnlocalized: "FATAL",
		Code:                code,
		Message:             "pgrehearse proxy: " + message,
	}).Encode(nil)
	if err == nil {
		w.Write(msg)
	}
}

// lingerTime bounds how long the proxy reads what a refused client still
// sends after the proxy's ErrorResponse.
const lingerTime = time.Second

// refuse sends the client a FATAL ErrorResponse and closes its sending
// side, then reads (and drops) what the client still sends for a moment:
// closing a socket with unread bytes resets it, and a reset can destroy
// the ErrorResponse before the client reads it.
func refuse(conn net.Conn, code, message string) {
	conn.SetWriteDeadline(time.Now().Add(errorGrace))
	writeFatal(conn, code, message)
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(lingerTime))
	io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}

// dialUpstream connects to the upstream server and negotiates TLS as its
// sslmode asks.
func (p *Proxy) dialUpstream(ctx context.Context) (net.Conn, error) {
	up := p.upstream
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	network, address := pgconn.NetworkAddress(up.Host, up.Port)
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if up.TLSConfig == nil || network == "unix" {
		return conn, nil
	}
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	if up.SSLNegotiation != "direct" {
		var req [8]byte
		binary.BigEndian.PutUint32(req[0:], 8)
		binary.BigEndian.PutUint32(req[4:], sslRequestCode)
		var answer [1]byte
		if _, err := conn.Write(req[:]); err != nil {
			conn.Close()
			return nil, err
		}
		if _, err := io.ReadFull(conn, answer[:]); err != nil {
			conn.Close()
			return nil, err
		}
		if answer[0] != wire.EncryptionAccepted {
			if answer[0] == wire.EncryptionRefused && plainAllowed(up) {
				conn.SetDeadline(time.Time{})
				return conn, nil
			}
			conn.Close()
			return nil, fmt.Errorf("server refused TLS (answered %q) and sslmode requires it", answer[0])
		}
	}
	tc := tls.Client(conn, up.TLSConfig)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}

// plainAllowed says whether sslmode lets the connection go on without TLS
// (prefer): pgconn gives it as a fallback without TLSConfig.
func plainAllowed(up *pgconn.Config) bool {
	for _, fb := range up.Fallbacks {
		if fb.TLSConfig == nil && fb.Host == up.Host && fb.Port == up.Port {
			return true
		}
	}
	return false
}

// cancel forwards a CancelRequest's bytes unchanged (PostgreSQL 18's keys
// are longer than 4 bytes) on a connection of its own, and records it in
// the session whose backend it names.
func (p *Proxy) cancel(raw []byte, pid uint32, addr string) {
	p.mu.Lock()
	if s := p.byPID[pid]; s != nil {
		s.add(capture.Record{Kind: capture.KindCancel, Session: s.id, Time: time.Now().UnixMicro()})
	}
	p.mu.Unlock()
	conn, err := p.dialUpstream(context.Background())
	if err != nil {
		p.problem(ErrCancel, fmt.Sprintf("client %s: cannot forward a CancelRequest: %v.", addr, err))
		return
	}
	defer conn.Close()
	if _, err := conn.Write(raw); err != nil {
		p.problem(ErrCancel, fmt.Sprintf("client %s: cannot forward a CancelRequest: %v.", addr, err))
		return
	}
	p.cancels.Add(1)
	// The server closes the connection once it has read the request;
	// waiting for that keeps the cancel's order with what the client
	// does next, as a direct cancel would.
	conn.SetReadDeadline(time.Now().Add(p.timeout))
	io.Copy(io.Discard, conn)
}
