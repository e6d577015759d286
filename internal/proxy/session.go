package proxy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/proxy/midstream"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// recorded are the frontend message types recorded verbatim: Query,
// Parse, Bind, Describe, Execute, Sync, Flush, Close, CopyData, CopyDone,
// CopyFail, FunctionCall, Terminate. PasswordMessage (password, SASL,
// GSS) is not among them.
var recorded = func() (t [256]bool) {
	for _, c := range []byte{wire.Query, wire.Parse, wire.Bind, wire.Describe, wire.Execute, wire.Sync, wire.Flush,
		wire.Close, wire.CopyData, wire.CopyDone, wire.CopyFail, wire.FunctionCall, wire.Terminate} {
		t[c] = true
	}
	return t
}()

// errChannelBindingOnly stops the server pump when the server offers no
// SASL mechanism but SCRAM-SHA-256-PLUS.
var errChannelBindingOnly = errors.New("the server offers only SCRAM-SHA-256-PLUS")

// errChannelBindingClient stops the client pump when the client's SCRAM
// exchange asks for channel binding or says it supports it, on TLS to a
// server on TLS: the server would refuse it.
var errChannelBindingClient = errors.New("the client asks for channel binding")

const (
	channelBindingMessage = "channel binding (SCRAM-SHA-256-PLUS) cannot pass through the proxy, and the server offers no other SASL mechanism"
	clientBindingMessage  = "channel binding cannot pass through the proxy (its TLS certificate is not the server's): " +
		"connect with %s, or without TLS to the proxy"
	// jdbcApplication is the application_name pgjdbc sends unless the
	// application sets its own.
	jdbcApplication = "PostgreSQL JDBC Driver"
)

// bindingAdvice is how the client turns channel binding off, in its own
// spelling: pgjdbc's when the startup packet says the client is pgjdbc,
// else libpq's (psql, psycopg, and the drivers built on libpq) with
// pgjdbc's beside it, since an application may name itself.
func bindingAdvice(params []capture.Param) string {
	for _, p := range params {
		if p.Name == "application_name" && p.Value == jdbcApplication {
			return fmt.Sprintf(clientBindingMessage, "channelBinding=disable in the JDBC URL")
		}
	}
	return fmt.Sprintf(clientBindingMessage, "channel_binding=disable (libpq; channelBinding=disable for JDBC)")
}

// errorGrace is how long a client that broke the protocol has to read the
// proxy's ErrorResponse before its connection closes.
const errorGrace = 5 * time.Second

// session is one relayed client connection that sent a StartupMessage.
//
// KindStartup is emitted when the server sends BackendKeyData, so that
// it carries the backend's process id; without BackendKeyData, at the
// first answer recorded or at the end (then with BackendPID 0). Frontend
// messages are recorded only after it, which is after authentication.
type session struct {
	p      *Proxy
	id     uint64
	client net.Conn
	server net.Conn
	addr   string

	params        []capture.Param
	proto         uint32
	tls           bool
	pid           uint32
	authenticated bool // AuthenticationOk seen; read after the server pump ended
	inStartup     bool // before the first ReadyForQuery; server pump only

	// bindingThrough: both legs are TLS and the proxy shows the server's
	// own certificate, so SCRAM channel binding works end to end and
	// the server's SASL offer goes through untouched.
	bindingThrough bool
	// refuseBinding: both legs are TLS with different certificates, so
	// the server would refuse a SCRAM exchange whose client supports
	// channel binding; the proxy refuses it first, saying why.
	refuseBinding bool
	saslOffered   atomic.Bool // AuthenticationSASL went to the client

	// rows is the digest of the DataRows relayed since the last
	// CommandComplete, ErrorResponse or ReadyForQuery, and rowStream
	// hashes one too large for the buffer as it streams; the server
	// pump's only.
	rows      rowdigest.Digest
	rowStream rowdigest.Stream
	// suspended: a portal stopped at its row limit (PortalSuspended)
	// since the last CommandComplete or ErrorResponse; its rows go on
	// into the digest of the Execute that completes it, across the
	// ReadyForQuery of a Sync between them (pgjdbc's fetch size).
	suspended bool
	// digest: rows are digested (Config.NoRowDigest unset).
	digest bool

	// loop is the event loop relaying the session, while one does
	// (loop_linux.go).
	loop atomic.Pointer[loopSess]

	// st is what the proxy keeps of the session so that a recording
	// can take it up from the middle (Config.ResumeSessions), nil
	// without; join is the recording waiting for its next idle point
	// to do so (Attach).
	st   *midstream.State
	join atomic.Pointer[binding]

	started atomic.Bool
	// rec is the attachment the session records into (see Attach), nil
	// when it records nothing; busy counts its adds under way.
	rec        atomic.Pointer[binding]
	busy       atomic.Int32
	bindDone   bool          // bind ran; guarded by p.mu
	terminated atomic.Bool   // the client sent Terminate
	end        atomic.Uint32 // capture.EndReason, the first one set wins
}

func (s *session) setEnd(r capture.EndReason) bool {
	return s.end.CompareAndSwap(0, uint32(r))
}

func (p *Proxy) session(l *link, client net.Conn, raw []byte, addr string, tlsClient bool) {
	s := &session{
		p:         p,
		id:        p.nextSession.Add(1),
		client:    client,
		addr:      addr,
		params:    startupParams(raw),
		proto:     binary.BigEndian.Uint32(raw[4:]),
		tls:       tlsClient,
		inStartup: true,
		digest:    !p.cfg.NoRowDigest,
	}
	if p.cfg.ResumeSessions {
		s.st = midstream.New(cmp.Or(p.cfg.StateItems, DefaultStateItems), cmp.Or(p.cfg.StateBytes, DefaultStateBytes))
	}
	p.sessionsTotal.Add(1)
	p.sessionsOpen.Add(1)
	defer p.sessionsOpen.Add(-1)
	l.mu.Lock()
	l.sess = s
	l.mu.Unlock()
	defer s.finish()

	server, err := p.dialUpstream(context.Background())
	if err != nil {
		p.problem(ErrUpstream, fmt.Sprintf("client %s: cannot reach the upstream server: %v.", addr, err))
		writeFatal(client, "08006", "cannot reach the server: "+err.Error())
		return
	}
	if !l.setServer(server) {
		return
	}
	s.server = server
	if st, ok := server.(interface{ ConnectionState() tls.ConnectionState }); ok && tlsClient {
		peer := st.ConnectionState().PeerCertificates
		s.bindingThrough = len(peer) > 0 && p.certDER != nil && bytes.Equal(peer[0].Raw, p.certDER)
		s.refuseBinding = !s.bindingThrough
	}
	if _, err := server.Write(raw); err != nil {
		p.problem(ErrUpstream, fmt.Sprintf("client %s: cannot send the startup packet upstream: %v.", addr, err))
		writeFatal(client, "08006", "cannot reach the server: "+err.Error())
		return
	}

	cbuf, sbuf := bufPool.Get().(*[]byte), bufPool.Get().(*[]byte)
	defer bufPool.Put(cbuf)
	defer bufPool.Put(sbuf)
	fromClient := &pump{src: client, dst: server, buf: *cbuf, counts: &p.frontend,
		onMsg: s.frontendMsg, keep: s.keepFrontend}
	fromServer := s.serverPump(server, client, *sbuf, &p.backend)

	if p.relayInLoop(l, s, fromClient, fromServer) {
		client = s.client
	}

	serverDone := make(chan struct{})
	go func() {
		defer close(serverDone)
		err := fromServer.run()
		// Whoever sets the end closes the connections; the others
		// stop because of it.
		var fe *frameError
		switch {
		case errors.As(err, &fe):
			if !s.setEnd(capture.EndServerGone) {
				return
			}
			p.problem(ErrServerProtocol, fmt.Sprintf("client %s: the server sent a %v; closing the connection.", addr, fe))
			writeFatal(client, "08P01", "the server sent a "+fe.Error())
		case errors.Is(err, errChannelBindingOnly):
			if !s.setEnd(capture.EndAuthFailed) {
				return
			}
			p.problem(ErrChannelBinding, fmt.Sprintf("client %s: %s.", addr, channelBindingMessage))
			refuse(client, "28000", channelBindingMessage)
		default:
			end := capture.EndServerGone
			if s.terminated.Load() {
				end = capture.EndTerminate
			}
			if !s.setEnd(end) {
				return
			}
		}
		l.close()
	}()

	err = fromClient.run()
	var fe *frameError
	if errors.As(err, &fe) && s.setEnd(capture.EndClientGone) {
		p.problem(ErrClientProtocol, fmt.Sprintf("client %s: sent a %v; closing the connection.", addr, fe))
		s.refuseFromClientPump(serverDone, "08P01", "the client sent a "+fe.Error())
	} else if errors.Is(err, errChannelBindingClient) && s.setEnd(capture.EndAuthFailed) {
		advice := bindingAdvice(s.params)
		p.problem(ErrChannelBinding, fmt.Sprintf("client %s: %s.", addr, advice))
		s.refuseFromClientPump(serverDone, "28000", advice)
	} else if s.terminated.Load() {
		s.setEnd(capture.EndTerminate)
	} else if s.setEnd(capture.EndClientGone) && err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		// A client gone mid-message is not the proxy's problem, but
		// worth a word: the server saw a truncated message.
		if errors.Is(err, io.ErrUnexpectedEOF) && p.cfg.Warn != nil {
			p.cfg.Warn(fmt.Sprintf("client %s: disconnected in the middle of a message.", addr))
		}
	}
	l.close()
	<-serverDone
}

// relayInLoop lets an event loop relay the session when it can
// (enterLoop), until the loop hands it back: then the pumps go on from
// where the loop left them, on new connections of the same sockets,
// which it puts in s, l and the pumps. It says whether it did.
func (p *Proxy) relayInLoop(l *link, s *session, fromClient, fromServer *pump) bool {
	ls := p.enterLoop(l, s, fromClient, fromServer)
	if ls == nil {
		return false
	}
	<-ls.back
	s.loop.Store(nil)
	s.client, s.server = ls.conns(s.client, s.server)
	l.replace(s.client, s.server)
	fromClient.src, fromClient.dst = s.client, s.server
	fromServer.src, fromServer.dst = s.server, s.client
	return true
}

// enterLoop hands the session's relay to an event loop when the proxy
// runs some and both legs are plain sockets; nil leaves it to the
// goroutines.
func (p *Proxy) enterLoop(l *link, s *session, fromClient, fromServer *pump) *loopSess {
	if len(p.loops) == 0 {
		return nil
	}
	ls := p.loops[s.id%uint64(len(p.loops))].enter(s, fromClient, fromServer)
	if ls == nil {
		return nil
	}
	// A close from now on asks the loop to hand the session back
	// (link.close); one before it, the session asks itself.
	s.loop.Store(ls)
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		ls.leave()
	}
	return ls
}

// refuseFromClientPump ends the session with an ErrorResponse to the
// client. The server pump owns writes to the client: it is stopped first,
// with little time if the client does not read.
func (s *session) refuseFromClientPump(serverDone <-chan struct{}, code, message string) {
	s.client.SetWriteDeadline(time.Now().Add(errorGrace))
	s.server.Close()
	<-serverDone
	refuse(s.client, code, message)
}

// finish records the session's end, once both directions stopped.
func (s *session) finish() {
	s.emitStartup()
	s.p.mu.Lock()
	if s.pid != 0 && s.p.byPID[s.pid] == s {
		delete(s.p.byPID, s.pid)
	}
	s.p.mu.Unlock()
	end := capture.EndReason(s.end.Load())
	if !s.authenticated || end == 0 {
		// Never authenticated: whatever cut it, it was no session yet.
		end = capture.EndAuthFailed
	}
	if s.join.Load() != nil {
		s.p.mu.Lock()
		if b := s.join.Swap(nil); b != nil {
			b.gaveUp(NotResumedEnded)
		}
		s.p.mu.Unlock()
	}
	// Unbound first: Detach, racing with this end, records the session
	// as open instead, never twice.
	s.busy.Add(1)
	if b := s.rec.Swap(nil); b != nil {
		b.sink.Add(capture.Record{Kind: capture.KindEnd, Session: s.id, Time: time.Now().UnixMicro(), End: end})
	}
	s.busy.Add(-1)
}

// emitStartup records KindStartup once, into the attachment current
// then, to which it binds the session.
func (s *session) emitStartup() {
	if !s.started.CompareAndSwap(false, true) {
		return
	}
	s.p.mu.Lock()
	s.bind()
	s.p.mu.Unlock()
	s.add(s.startupRecord(nil))
}

// startupRecord is the session's KindStartup, made now: what the client
// asked for in its startup packet, the backend it got, and rs, the
// state of a session recorded from the middle (nil for one recorded
// from its start). It is the one place a startup record is made, for a
// session's start and for a recording that takes it up later.
func (s *session) startupRecord(rs *capture.Resume) capture.Record {
	return capture.Record{
		Kind:          capture.KindStartup,
		Session:       s.id,
		Time:          time.Now().UnixMicro(),
		Params:        s.params,
		ProtocolMajor: uint16(s.proto >> 16),
		ProtocolMinor: uint16(s.proto),
		TLS:           s.tls,
		BackendPID:    s.pid,
		ClientAddr:    s.addr,
		Resume:        rs,
	}
}

func (s *session) keepFrontend(typ byte) bool {
	return recorded[typ] && s.rec.Load() != nil
}

func (s *session) frontendMsg(msg []byte, at time.Time) ([]byte, error) {
	typ := msg[0]
	if typ == wire.Terminate {
		s.terminated.Store(true)
	}
	if typ == wire.PasswordMessage && s.refuseBinding && s.saslOffered.CompareAndSwap(true, false) && wantsBinding(msg) {
		return nil, errChannelBindingClient
	}
	if s.st != nil && recorded[typ] {
		s.trackFrontend(msg)
	}
	if recorded[typ] {
		if s.rec.Load() != nil {
			s.add(capture.Record{Kind: capture.KindFrontend, Session: s.id, Time: at.UnixMicro(), Msg: bytes.Clone(msg)})
		} else {
			s.p.unrecorded.Add(1)
		}
	}
	return nil, nil
}

// serverPump is the pump that relays the server's messages to the client
// through buf, counting them in counts.
func (s *session) serverPump(server io.Reader, client io.Writer, buf []byte, counts *dirCounts) *pump {
	p := &pump{src: server, dst: client, buf: buf, counts: counts,
		onMsg: s.backendMsg, keep: keepBackend, stampFirst: true, passRows: true}
	if s.digest {
		p.rows, p.onPart = &s.rows, s.backendPart
	}
	return p
}

func keepBackend(typ byte) bool {
	switch typ {
	case wire.CommandComplete, wire.ErrorResponse, wire.ReadyForQuery, wire.CopyInResponse,
		wire.Authentication, wire.BackendKeyData, wire.PortalSuspended:
		return true
	}
	return false
}

func (s *session) backendMsg(msg []byte, at time.Time) ([]byte, error) {
	body := msg[5:]
	switch msg[0] {
	case wire.DataRow:
		// A row: hashed in place, on the frame the pump forwards,
		// and never recorded (the server pump does so itself:
		// pump.passRows).
		if s.digest {
			s.rows.Add(body)
		}
		return nil, nil
	case wire.PortalSuspended:
		// PortalSuspended: recorded below as a completion with the
		// suspended tag; the rows' digest goes on until the portal's
		// final CommandComplete.
		s.suspended = true
	}
	if s.inStartup {
		switch msg[0] {
		case wire.Authentication:
			if len(body) < 4 {
				break
			}
			switch binary.BigEndian.Uint32(body) {
			case 0:
				s.authenticated = true
			case 10: // AuthenticationSASL
				s.saslOffered.Store(true)
				if s.bindingThrough {
					return nil, nil
				}
				return withoutPlus(msg)
			}
		case wire.BackendKeyData:
			if len(body) >= 4 && !s.started.Load() {
				s.pid = binary.BigEndian.Uint32(body)
				s.p.mu.Lock()
				s.p.byPID[s.pid] = s
				s.p.mu.Unlock()
				s.emitStartup()
			}
		case wire.ReadyForQuery:
			s.inStartup = false
		}
	}
	r := capture.Record{Session: s.id, Time: at.UnixMicro()}
	switch msg[0] {
	case wire.CommandComplete:
		r.Kind = capture.KindComplete
		r.Tag = cstring(body)
		r.Digest, r.HasDigest, r.DigestVersion = s.rows, s.digest, rowdigest.Current
		s.rows, s.suspended = rowdigest.Digest{}, false
	case wire.PortalSuspended:
		// PortalSuspended: the Execute's row limit was reached. No
		// digest: the portal's rows are digested until its final
		// CommandComplete.
		r.Kind = capture.KindComplete
		r.Tag = capture.SuspendedTag
	case wire.ErrorResponse:
		r.Kind = capture.KindError
		r.SQLState, r.Severity, r.Message = errorFields(body)
		s.rows, s.suspended = rowdigest.Digest{}, false
	case wire.ReadyForQuery:
		r.Kind = capture.KindReady
		if !s.suspended {
			s.rows = rowdigest.Digest{}
		}
		if len(body) > 0 {
			r.TxStatus = body[0]
		}
	case wire.CopyInResponse:
		r.Kind = capture.KindCopyIn
	default:
		switch msg[0] {
		case wire.ParseComplete, wire.CloseComplete, wire.RowDescription, wire.NoData:
			if s.st != nil {
				s.trackBackend(msg[0], body)
			}
		}
		return nil, nil
	}
	s.emitStartup()
	s.add(r)
	if s.st != nil && msg[0] != wire.CopyInResponse && msg[0] != wire.PortalSuspended {
		s.trackBackend(msg[0], body)
	}
	return nil, nil
}

// backendPart hashes a DataRow too large for the pump's buffer as it
// streams through (see pump.onPart).
func (s *session) backendPart(typ byte, body int, part []byte, first, last bool) {
	if typ != wire.DataRow {
		return
	}
	if first {
		s.rowStream.Reset(body)
	}
	s.rowStream.Write(part)
	if last {
		s.rows.AddHash(s.rowStream.Sum())
	}
}

// withoutPlus returns AuthenticationSASL msg without SCRAM-SHA-256-PLUS
// among its mechanisms, or nil when it was not there (or msg does not
// decode: it goes through as it came). It reads and writes the message
// with pgproto3's types: it comes once per login, off the relay's path.
func withoutPlus(msg []byte) ([]byte, error) {
	var sasl pgproto3.AuthenticationSASL
	if sasl.Decode(msg[5:]) != nil {
		return nil, nil
	}
	kept := slices.DeleteFunc(slices.Clone(sasl.AuthMechanisms), func(m string) bool { return m == scramPlus })
	switch {
	case len(kept) == len(sasl.AuthMechanisms):
		return nil, nil
	case len(kept) == 0:
		return nil, errChannelBindingOnly
	}
	return (&pgproto3.AuthenticationSASL{AuthMechanisms: kept}).Encode(make([]byte, 0, len(msg)))
}

// scramPlus is the SASL mechanism of SCRAM with channel binding.
const scramPlus = "SCRAM-SHA-256-PLUS"

// wantsBinding says whether a SASLInitialResponse's GS2 header asks for
// channel binding ('p') or says the client supports it but believes the
// server does not ('y'), which a server on TLS refuses.
func wantsBinding(msg []byte) bool {
	var r pgproto3.SASLInitialResponse
	if r.Decode(msg[5:]) != nil || len(r.Data) == 0 {
		return false
	}
	flag := r.Data[0] // the GS2 header's first byte
	return flag == 'y' || flag == 'p'
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// errorFields returns an ErrorResponse's SQLSTATE, severity (the
// untranslated one when the server sends it) and message; never DETAIL,
// which may quote row values.
func errorFields(body []byte) (code, severity, message string) {
	var localized string
	for len(body) > 1 {
		f := body[0]
		v, rest, ok := bytes.Cut(body[1:], []byte{0})
		if !ok {
			break
		}
		switch f {
		case wire.FieldSQLState:
			code = string(v)
		case wire.FieldSeverityEnglish:
			severity = string(v)
		case wire.FieldSeverity:
			localized = string(v)
		case wire.FieldMessage:
			message = string(v)
		}
		body = rest
	}
	if severity == "" {
		severity = localized
	}
	return code, severity, message
}
