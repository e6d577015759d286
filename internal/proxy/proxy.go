package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
)

// Config configures a Proxy.
type Config struct {
	// Upstream is the server's libpq connection string (keyword/value or
	// URL). Only where and how to connect is used: the first host and
	// port (a unix-socket directory works too), sslmode and the TLS
	// settings that go with it, and connect_timeout. User, password and
	// database come from each client's own startup packet.
	Upstream string
	// TLS is the certificate the proxy shows clients that send
	// SSLRequest. Nil answers SSLRequest with 'N': clients continue
	// without TLS, or give up if their sslmode requires it.
	//
	// SCRAM channel binding (tls-server-end-point) hashes the server's
	// certificate, so it passes through only when this is the upstream
	// server's own certificate (one certificate, no GetCertificate).
	// Otherwise the proxy takes SCRAM-SHA-256-PLUS out of the server's
	// offer, and refuses, with an ErrorResponse saying why, a client on
	// TLS whose SCRAM exchange asks for channel binding or says it
	// supports it: over TLS the server would refuse that exchange anyway,
	// as a downgrade ("SCRAM channel binding negotiation error"). Such
	// clients connect with channel_binding=disable, or without TLS to
	// the proxy.
	TLS *tls.Config
	// Sink receives the records from the start, as Attach does. Nil
	// records nothing until Attach.
	Sink capture.Sink
	// Warn is told, in one sentence, of each problem with one
	// connection. It never sees a password or a parameter value. Nil
	// discards them; Stats counts them either way.
	Warn func(string)
	// Drain is how long Serve, once its context is done, goes on
	// relaying the open connections, having stopped accepting new ones,
	// before it closes them; each ends earlier when its client or server
	// closes it. Zero closes them at once. EndDrain cuts it short.
	Drain time.Duration
	// Draining, when set, is told as the drain begins, with connections
	// open: how many, and until when it waits for them; Drained as it
	// ends: how many ended by themselves and how many it closes. A
	// drain says nothing else while it waits, so that without them it
	// looks like a hang.
	Draining func(DrainStart)
	Drained  func(DrainEnd)
	// DialTimeout bounds connecting to the upstream, TLS included. Zero
	// means the DSN's connect_timeout, or 10 seconds without one.
	DialTimeout time.Duration
	// NoRowDigest spares the relay the digest of the rows each
	// statement returned (a hash of every DataRow relayed, see package
	// rowdigest), for a workload whose rows are many and small: the
	// capture's answers are then compared by row count only.
	NoRowDigest bool
	// ResumeSessions keeps, for each session, what a recording that
	// starts while it is open needs to take it up from the middle: its
	// settings, its prepared statements, whether it is idle (see
	// Attach). Without it such a session is relayed, unrecorded.
	// StateItems and StateBytes bound what one session keeps (0: the
	// defaults, DefaultStateItems and DefaultStateBytes); a session
	// past them cannot be taken up.
	ResumeSessions         bool
	StateItems, StateBytes int
	// NoEventLoop relays every session with two goroutines, one per
	// direction, as before the event loop (loop_linux.go). Without it,
	// on Linux, a session whose two legs are plain TCP or Unix sockets
	// is relayed by one of the proxy's event loops (one per GOMAXPROCS
	// when Serve starts) until it needs to wait; TLS legs are always
	// relayed by goroutines.
	NoEventLoop bool
}

// DrainStart is what Serve's drain waits for: the connections open as
// it began, until Until at most.
type DrainStart struct {
	Open  int
	Until time.Time
}

// DrainEnd is how Serve's drain ended: of the connections open as it
// began, Closed ended by themselves; Cut are those the proxy closes
// now, still open at the end (Config.Drain passed, or EndDrain).
type DrainEnd struct {
	Closed, Cut int
	// Ended says why the drain ended.
	Ended DrainEnded
	// Took is how long it waited.
	Took time.Duration
}

// DrainEnded says why a drain ended.
type DrainEnded uint8

const (
	// DrainAllClosed: every connection ended by itself.
	DrainAllClosed DrainEnded = iota + 1
	// DrainTimedOut: Config.Drain passed.
	DrainTimedOut
	// DrainCutShort: EndDrain was called.
	DrainCutShort
)

// ErrorKind says what went wrong with one connection.
type ErrorKind uint8

const (
	// ErrStartup: the client's startup packet was malformed or of an
	// unknown kind, or the client never sent one.
	ErrStartup ErrorKind = iota + 1
	// ErrClientTLS: the TLS handshake with the client failed.
	ErrClientTLS
	// ErrUpstream: the upstream server could not be reached (dial, TLS).
	ErrUpstream
	// ErrClientProtocol: the client sent a message length out of range.
	ErrClientProtocol
	// ErrServerProtocol: the server sent a message length out of range.
	ErrServerProtocol
	// ErrChannelBinding: the client or the server wanted channel
	// binding, which cannot pass through the proxy unless it shows
	// clients the server's own certificate.
	ErrChannelBinding
	// ErrCancel: a CancelRequest could not be forwarded.
	ErrCancel

	numErrorKinds = iota
)

var errorKindNames = [...]string{"", "startup", "client_tls", "upstream", "client_protocol", "server_protocol", "channel_binding", "cancel"}

func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) && k != 0 {
		return errorKindNames[k]
	}
	return "error_kind(" + strconv.Itoa(int(k)) + ")"
}

// Stats are the proxy's counters since New.
type Stats struct {
	// SessionsOpen and SessionsTotal count sessions: connections that
	// sent a StartupMessage (not SSL negotiation alone, not cancels).
	SessionsOpen, SessionsTotal int64
	// Frontend and Backend count the messages and bytes forwarded from
	// clients and from the server, authentication included.
	FrontendMessages, FrontendBytes int64
	BackendMessages, BackendBytes   int64
	// FrontendRelay and BackendRelay are the time the proxy added to
	// the chunks it relayed from clients and from the server.
	FrontendRelay, BackendRelay RelayTimes
	// Cancels counts CancelRequests forwarded.
	Cancels int64
	// Errors counts connections ended by a problem, by kind; kinds that
	// never happened are absent.
	Errors map[ErrorKind]int64
}

// Proxy relays connections to one upstream server. Serve may be called
// once.
type Proxy struct {
	cfg      Config
	upstream *pgconn.Config
	timeout  time.Duration

	frontend, backend dirCounts
	sessionsOpen      atomic.Int64
	sessionsTotal     atomic.Int64
	cancels           atomic.Int64
	// unrecorded counts the records the sessions would have written
	// while bound to no recording (see Unrecorded).
	unrecorded atomic.Int64
	errors     [numErrorKinds]atomic.Int64

	nextSession atomic.Uint64

	// cur is the attachment sessions starting now bind to (Attach);
	// last is the latest attachment, current or detached, whose
	// resumes Resumes counts.
	cur  atomic.Pointer[binding]
	last atomic.Pointer[binding]
	// endDrain is closed by EndDrain.
	endDrain     chan struct{}
	endDrainOnce sync.Once

	// certDER is the certificate the proxy shows clients, when it is
	// known before the handshake (one certificate, no GetCertificate):
	// channel binding passes through when it is the server's own.
	certDER []byte

	// loops are the event loops Serve runs (loop_linux.go).
	loops []*evLoop

	mu      sync.Mutex
	closing bool
	links   map[*link]struct{}
	// byPID finds a session by its backend's process id, for
	// CancelRequest.
	byPID map[uint32]*session
}

// New checks cfg and returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	up, err := pgconn.ParseConfig(cfg.Upstream)
	if err != nil {
		// pgconn's message quotes the connection string, password
		// included; say only what kind of problem it is.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			return nil, errors.New("proxy: invalid upstream connection string: " + pe.Unwrap().Error())
		}
		return nil, errors.New("proxy: invalid upstream connection string")
	}
	timeout := cfg.DialTimeout
	if timeout == 0 {
		timeout = up.ConnectTimeout
	}
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	var certDER []byte
	if cfg.TLS != nil && cfg.TLS.GetCertificate == nil && len(cfg.TLS.Certificates) == 1 && len(cfg.TLS.Certificates[0].Certificate) > 0 {
		certDER = cfg.TLS.Certificates[0].Certificate[0]
	}
	p := &Proxy{
		certDER:  certDER,
		cfg:      cfg,
		upstream: up,
		timeout:  timeout,
		links:    map[*link]struct{}{},
		byPID:    map[uint32]*session{},
		endDrain: make(chan struct{}),
	}
	if cfg.Sink != nil {
		p.cur.Store(&binding{sink: cfg.Sink})
	}
	return p, nil
}

// Serve accepts connections on ln and relays each to the upstream until
// ctx is done. Then it closes ln, relays the open connections until they
// end or Config.Drain passes (or EndDrain), closes those left, records
// the sessions still open and recorded as ended with capture.EndOpen, and
// returns nil once every connection's goroutines are gone. An Accept
// error other than a temporary one stops it the same way and is
// returned.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	if !p.cfg.NoEventLoop {
		p.loops = newLoops(runtime.GOMAXPROCS(0))
	}
	var wg sync.WaitGroup
	var serveErr error
	delay := time.Duration(0)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: back off as
				// net/http does, rather than spin or give up.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(delay):
				case <-ctx.Done():
				}
				continue
			}
			serveErr = err
			break
		}
		delay = 0
		wg.Go(func() { p.handle(conn) })
	}
	ln.Close()
	p.drain(&wg)
	p.closeAll()
	wg.Wait()
	for _, l := range p.loops {
		l.stop()
	}
	return serveErr
}

// drain waits for the connections to end by themselves, for at most
// Config.Drain, as a service manager expects of a stopping proxy
// (Kubernetes sends SIGTERM, then SIGKILL after its grace period).
// It tells Config.Draining and Config.Drained how many connections it
// waits for and how it ended, when some were open.
func (p *Proxy) drain(wg *sync.WaitGroup) {
	if p.cfg.Drain <= 0 {
		return
	}
	begun := time.Now()
	open := p.openLinks()
	if len(open) > 0 && p.cfg.Draining != nil {
		p.cfg.Draining(DrainStart{Open: len(open), Until: begun.Add(p.cfg.Drain)})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(p.cfg.Drain)
	defer t.Stop()
	ended := DrainAllClosed
	select {
	case <-done:
	case <-t.C:
		ended = DrainTimedOut
	case <-p.endDrain:
		ended = DrainCutShort
	}
	if len(open) == 0 || p.cfg.Drained == nil {
		return
	}
	end := DrainEnd{Ended: ended, Took: time.Since(begun)}
	p.mu.Lock()
	end.Cut = len(p.links)
	for _, l := range open {
		if _, ok := p.links[l]; !ok {
			end.Closed++
		}
	}
	p.mu.Unlock()
	p.cfg.Drained(end)
}

// openLinks returns the connections open now.
func (p *Proxy) openLinks() []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

// EndDrain ends Serve's drain now: the connections still open are
// closed. It may be called at any time, more than once.
func (p *Proxy) EndDrain() {
	p.endDrainOnce.Do(func() { close(p.endDrain) })
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	s := Stats{
		SessionsOpen:     p.sessionsOpen.Load(),
		SessionsTotal:    p.sessionsTotal.Load(),
		FrontendMessages: p.frontend.msgs.Load(),
		FrontendBytes:    p.frontend.bytes.Load(),
		BackendMessages:  p.backend.msgs.Load(),
		BackendBytes:     p.backend.bytes.Load(),
		FrontendRelay:    p.frontend.relay.load(),
		BackendRelay:     p.backend.relay.load(),
		Cancels:          p.cancels.Load(),
		Errors:           map[ErrorKind]int64{},
	}
	for k := range p.errors {
		if n := p.errors[k].Load(); n > 0 {
			s.Errors[ErrorKind(k)] = n
		}
	}
	return s
}

// Unrecorded is how many records the proxy's sessions would have written
// while no recording held them (none attached, or a session that started
// before the recording under way): what a capture finalized at its size
// limit or on its writer's failure lost while the proxy relayed on.
func (p *Proxy) Unrecorded() int64 { return p.unrecorded.Load() }

// problem counts a problem of one connection and says it through Warn.
func (p *Proxy) problem(kind ErrorKind, sentence string) {
	p.errors[kind].Add(1)
	if p.cfg.Warn != nil {
		p.cfg.Warn(sentence)
	}
}

// link is one accepted connection and, once dialed, its upstream: what
// Serve closes when it stops.
type link struct {
	mu     sync.Mutex
	closed bool
	client net.Conn
	server net.Conn
	sess   *session
}

// track registers l; false means Serve is stopping and l was closed.
func (p *Proxy) track(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		l.close()
		return false
	}
	p.links[l] = struct{}{}
	return true
}

// stopping says whether Serve is closing every connection.
func (p *Proxy) stopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

func (p *Proxy) untrack(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.close()
}

// setServer attaches the upstream connection; false means the link was
// closed meanwhile (and so is server now).
func (l *link) setServer(server net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		server.Close()
		return false
	}
	l.server = server
	return true
}

// setClient replaces the client connection by its TLS wrapping.
func (l *link) setClient(client net.Conn) {
	l.mu.Lock()
	l.client = client
	l.mu.Unlock()
}

// replace puts the connections an event loop handed back in place of the
// ones it took (loop_linux.go), and closes them when the link was
// closed meanwhile.
func (l *link) replace(client, server net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.client, l.server = client, server
	if l.closed {
		client.SetDeadline(closedLongAgo)
		server.SetDeadline(closedLongAgo)
		client.Close()
		server.Close()
	}
}

// closedLongAgo is a deadline in the past: setting it wakes every read
// and write waiting on a connection at once.
var closedLongAgo = time.Unix(1, 0)

func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	// Deadlines first: a pump reading raw (rawio_linux.go) holds its
	// source while it writes to the other side, and Close waits for it;
	// the past deadline ends that write, blocked or not, so that neither
	// Close waits on a peer that stopped reading.
	l.client.SetDeadline(closedLongAgo)
	if l.server != nil {
		l.server.SetDeadline(closedLongAgo)
	}
	l.client.Close()
	if l.server != nil {
		l.server.Close()
	}
	if l.sess != nil {
		if ls := l.sess.loop.Load(); ls != nil {
			// The loop sees no event of a closed socket: it is
			// told to hand the session back.
			ls.leave()
		}
	}
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	p.closing = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.mu.Lock()
		s := l.sess
		l.mu.Unlock()
		if s != nil {
			s.setEnd(capture.EndOpen)
		}
		l.close()
	}
}
