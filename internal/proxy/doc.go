// Package proxy is the capture proxy: a TCP relay between applications and
// PostgreSQL that forwards every byte as it came, in both directions, and
// hands a copy of what it sees to a capture.Sink.
//
// The proxy speaks just enough of the protocol to frame it. It reads the
// client's startup packet (answering SSLRequest with its own certificate
// and refusing GSSENCRequest), connects to the upstream server with the
// upstream DSN's TLS settings, and forwards the startup packet unchanged.
// Authentication is relayed: the client answers the server's challenges
// itself, so the proxy never knows a password. It changes one thing only:
// SCRAM-SHA-256-PLUS is taken out of the mechanisms the server offers,
// because channel binding ties the SCRAM exchange to one TLS connection
// and a relay has two.
//
// Each direction is split into messages (a type byte and a four-byte
// length) and forwarded in batches, one write per read. On Linux a
// session whose two legs are plain sockets is relayed by an event loop
// of the proxy's own (one goroutine per GOMAXPROCS over a level-triggered
// epoll instance, as PgBouncer's one thread), until it has to wait: then
// by two goroutines, as a session with a TLS leg is (loop_linux.go,
// Config.NoEventLoop).
// Frontend messages (Query, the extended protocol, COPY data, function
// calls, Terminate) are recorded verbatim; of the server's answers only
// CommandComplete, PortalSuspended, ErrorResponse (without DETAIL),
// ReadyForQuery and CopyInResponse are summarized. Rows, passwords, SASL and GSS messages and
// cancel keys are never recorded.
//
// A record reaches the sink before the message it describes is forwarded,
// so that a session's records are in the order the two sides saw them
// (the answer to a query cannot be recorded before the query). The sink
// never blocks (capture.Sink), so recording never holds up forwarding.
//
// Recording can start and stop while the proxy relays (Attach, Detach): a
// session records into the sink attached when it started, until it ends
// or that sink is detached. A session that started before an Attach is
// relayed, unrecorded, unless Config.ResumeSessions: then the proxy keeps
// each session's settings, prepared statements and transaction state
// (bounded per session; package midstream), and the recording takes the
// session up from the middle at its first idle point, its startup record
// carrying that state (capture.Resume). Each message reads one atomic pointer to know where
// its record goes, so attaching and detaching take no lock on the relay's
// path and never touch a connection; keeping the state takes one
// uncontended lock per request and answer.
//
// A problem with one connection (a malformed startup packet, a length out
// of range, a client gone mid-message, a server restart) ends that
// connection only, with an ErrorResponse to the client where the client
// can still read one, and one sentence through Config.Warn. The package
// knows no command line: the capture command maps its flags to Config.
package proxy
