package capture

import (
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// Kind says what a record holds.
type Kind uint8

const (
	// KindStartup opens a session: the client's startup parameters (no
	// password is ever among them), the protocol version it asked for,
	// whether the client leg is TLS, and the backend's process id once
	// the server sent BackendKeyData (0 until then; the secret key is
	// never recorded).
	KindStartup Kind = iota + 1
	// KindFrontend is one message the client sent after authentication,
	// verbatim in PostgreSQL's wire format (type byte, length, body):
	// Query, Parse, Bind, Describe, Execute, Sync, Flush, Close,
	// CopyData, CopyDone, CopyFail, FunctionCall, Terminate. Password,
	// SASL and GSS messages are never recorded.
	KindFrontend
	// KindComplete is the server's CommandComplete: Tag ("UPDATE 3"),
	// and the digest of the rows the statement returned (Digest).
	KindComplete
	// KindError is the server's ErrorResponse: SQLState, Severity and
	// Message (no DETAIL: it may hold row values).
	KindError
	// KindReady is the server's ReadyForQuery: TxStatus ('I', 'T', 'E').
	KindReady
	// KindCopyIn is the server's CopyInResponse: it now takes COPY data.
	KindCopyIn
	// KindCancel is a CancelRequest the proxy relayed for this session.
	KindCancel
	// KindEnd closes a session: End says how.
	KindEnd
	// KindGap says the recorder dropped Dropped records of this session
	// (of every session when Session is 0): the capture is incomplete
	// from here.
	KindGap
)

var kindNames = [...]string{"", "startup", "frontend", "complete", "error", "ready", "copy_in", "cancel", "end", "gap"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// EndReason says how a session ended.
type EndReason uint8

const (
	// EndTerminate: the client sent Terminate.
	EndTerminate EndReason = iota + 1
	// EndClientGone: the client's connection closed without Terminate.
	EndClientGone
	// EndServerGone: the server closed the connection (a restart, a
	// FATAL error, pg_terminate_backend).
	EndServerGone
	// EndOpen: the session was still open when the capture stopped.
	EndOpen
	// EndAuthFailed: the session never got past authentication.
	EndAuthFailed
)

var endNames = [...]string{"", "terminate", "client_gone", "server_gone", "open", "auth_failed"}

func (e EndReason) String() string {
	if int(e) < len(endNames) && e != 0 {
		return endNames[e]
	}
	return "end(" + strconv.Itoa(int(e)) + ")"
}

// Param is one startup parameter (user, database, application_name,
// options, ...), in the order the client sent them.
type Param struct {
	Name, Value string
}

// Record is one thing the proxy saw in one session. Which fields are set
// depends on Kind; the others are zero.
type Record struct {
	Kind Kind
	// Session numbers the proxy's sessions from 1, in the order they
	// connected; 0 only in a KindGap that covers every session.
	Session uint64
	// Time is when the proxy saw the message, in microseconds since the
	// Unix epoch: for a frontend message, when the read that completed
	// it returned, just before it is forwarded to the server; for an
	// answer, when its first byte arrived from the server. A statement's server time as the proxy
	// sees it is the time of its answer minus the time of its request.
	Time int64

	// KindStartup.
	Params        []Param
	ProtocolMajor uint16
	ProtocolMinor uint16
	TLS           bool
	BackendPID    uint32
	ClientAddr    string
	// Resume is set on the startup of a session recorded from the
	// middle: it was open, relayed unrecorded, when the recording
	// started, and this is what the proxy knew of its state then. Nil
	// for a session recorded from its start.
	Resume *Resume

	// KindFrontend: the message verbatim (type byte, four-byte length,
	// body).
	Msg []byte

	// KindComplete. Digest is the digest of the DataRows the statement
	// returned before it (HasDigest: the proxy kept it; a capture of an
	// earlier version has none, and its answers are compared by row
	// count only), made in DigestVersion: written with the digest (zero
	// writes rowdigest.Current), read back as written, and rowdigest.V1
	// for a digest of a format version 1 file, which has none.
	Tag           string
	Digest        rowdigest.Digest
	HasDigest     bool
	DigestVersion rowdigest.Version

	// KindError.
	SQLState, Severity, Message string

	// KindReady.
	TxStatus byte

	// KindEnd.
	End EndReason

	// KindGap.
	Dropped int64
}

// Resume is what a replay needs to continue a session recorded from the
// middle: the state the session built before the recording took it up,
// in the order it was built, and what the session did after the
// recording started but before its first idle point (which is not in
// the capture).
type Resume struct {
	// State recreates the session's state: its session-level settings
	// (SET, SET ROLE, SET SESSION AUTHORIZATION, as SQL to run) and its
	// prepared statements (a Parse message verbatim, or SQL PREPARE).
	State []StateItem
	// Skipped counts the messages the client sent after the recording
	// started and before the session's first idle point, relayed but
	// not recorded; SkipReason says why the session was not idle.
	Skipped    int64
	SkipReason ResumeSkip
}

// StateItem is one piece of a resumed session's state: SQL to run as a
// simple query, or a Parse message to send (type byte, length, body).
// Exactly one is set.
type StateItem struct {
	SQL   string
	Parse []byte
}

// ResumeSkip says why a session resumed into a recording was not idle
// when the recording started.
type ResumeSkip string

const (
	// ResumeInTransaction: the session was inside a transaction block;
	// it is recorded from the ReadyForQuery that ended it.
	ResumeInTransaction ResumeSkip = "in_transaction_at_start"
	// ResumeInFlight: the session had a request in flight (a query, an
	// extended batch before its Sync); it is recorded from its answer's
	// ReadyForQuery.
	ResumeInFlight ResumeSkip = "request_in_flight_at_start"
)
