package event

import (
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// Kind says what happened in a session.
type Kind uint8

const (
	// Connect is a session start ("connection authorized").
	Connect Kind = iota + 1
	// Disconnect is a session end ("disconnection: session time: ...").
	Disconnect
	// Statement is a query string sent with the simple query protocol. The
	// string may hold several SQL statements separated by semicolons.
	Statement
	// Prepare is a Parse message of the extended protocol, logged as
	// "parse <name>: ..." when durations are logged. It is not an execution.
	Prepare
	// Execute is one execution of a prepared statement with the extended
	// protocol, with its parameters when the log has them.
	Execute
	// Error is an ERROR, FATAL or PANIC message. The failing statement, if
	// the log names one, is also reported by its own Statement or Execute
	// event with Failed set, so an Error never counts as an execution.
	Error
)

var kindNames = [...]string{"", "connect", "disconnect", "statement", "prepare", "execute", "error"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParamState says how complete the parameters of an Execute are.
type ParamState uint8

const (
	// ParamsComplete: Params holds every parameter the statement was
	// executed with (possibly none).
	ParamsComplete ParamState = iota
	// ParamsMissing: the statement has parameters but the log did not
	// show them (no DETAIL line, or log_parameter_max_length = 0).
	ParamsMissing
	// ParamsTruncated: at least one value was cut by
	// log_parameter_max_length and ends in "...".
	ParamsTruncated
)

// Param is one bind parameter in text form. A NULL is distinct from the
// four-character string "NULL".
type Param struct {
	Value string
	Null  bool
	// Binary marks, in TextParams' answer only, a parameter Value holds
	// as the bytes the original client sent in binary format, of a type
	// its Parse left to the server (as pgx and asyncpg do: the server
	// says the type, the client sends that type's binary form): a reader
	// that knows the type from where the parameter goes (a key column's,
	// package syncdep) reads them by it.
	Binary bool
}

// NoDuration is the Duration of an event whose log has no duration.
const NoDuration int64 = -1

// Event is one thing a session did, as the server logged it.
//
// Strings may share memory with the reader's buffers; they are immutable,
// so an Event may be kept for as long as needed.
//
// A log holds millions of events: the fields are ordered to leave no
// padding, and those few events have (an error's severity and message, a
// portal name) are behind one pointer, read with methods.
type Event struct {
	Kind       Kind
	ParamState ParamState

	// Failed marks a Statement or Execute that ended in an error.
	// SQLState, ErrorSeverity() and ErrorMessage() describe that error,
	// or the Error event.
	Failed bool
	// Lane is the part of a workload made of several (a folded log's
	// slices, package source's Fold) that the event's session belongs
	// to: a synchronized replay orders commits within a lane, never
	// across lanes. Zero for a workload of one part, as every log is.
	Lane uint8

	PID int32

	// Time is when the event started, in microseconds since the Unix
	// epoch. For a statement logged with its duration on the same line
	// (log_min_duration_statement) it is the log time minus the duration;
	// otherwise it is the time of the line that announced the statement.
	Time int64

	// Session identifies the session: the %c session id when the log has
	// it, otherwise one made from the process id and its connection count.
	Session     string
	User        string
	Database    string
	Application string

	// Duration is the server-side duration in microseconds, or NoDuration.
	Duration int64

	// Query is the SQL text: the statement for Statement, Prepare and
	// Execute; the failing statement, if logged, for Error.
	Query string

	// Name is the prepared statement name of a Prepare or Execute, empty
	// for the unnamed statement. Portal() is the portal name, usually
	// empty.
	Name string

	Params []Param

	SQLState string

	// Line is the line number, in its file, of the first log line of
	// the entry that produced this event.
	Line int64

	// Pos is the event's ordinal in its whole input (from 1), set by a
	// shard selector (package source) on the events it keeps: the same
	// in every shard of a split input, whichever sessions each keeps, so
	// that shards can name a commit of the log to each other. Zero when
	// no shard selector read the event.
	Pos int64

	rare *rare
}

// rare holds the fields few events have.
type rare struct {
	severity string
	message  string
	portal   string
	plans    []Plan
	wire     *Wire
	copyIns  []CopyIn
	answer   *Answer
	startup  []Setting
	preamble []string
	// outside marks an Error no Statement or Execute event reports: see
	// OutsideStatement.
	outside bool
}

// Wire is how the original client sent an execution with the extended
// protocol, when the input knows it (a capture; a log never does): the
// parameter types its Parse named (0: left to the server) and the format
// codes of its Bind's parameters and results (0 text, 1 binary), as the
// protocol carries them: none means all text, one applies to all. A
// parameter in binary format is Param.Value's bytes as sent.
type Wire struct {
	ParamOIDs     []uint32
	ParamFormats  []int16
	ResultFormats []int16
	// MaxRows is the row limit of the Execute (JDBC's fetch size, a
	// cursor's prefetch), 0 for none: the server stops after that many
	// rows and answers PortalSuspended.
	MaxRows uint32
	// Fetch marks an Execute that continues the portal an earlier
	// Execute left suspended at its row limit, without a new Bind: one
	// statement for pg_stat_statements, whose rows add to its first
	// Execute's.
	Fetch bool
	// NoSync marks an Execute with a row limit that the original sent
	// without a Sync before its answer (Flush instead, as node-postgres'
	// cursors do): its portal lives on outside a transaction block
	// until the client's Sync, so a replay must not send one either.
	// It marks too an Execute without a row limit that the original
	// followed with another Execute before the batch's Sync (a
	// pipeline): the next execution goes on in the same implicit
	// transaction.
	NoSync bool
	// FunctionOID is the function a fast-path FunctionCall called (its
	// arguments are Params, their formats ParamFormats, the result's
	// format ResultFormats), 0 for an execution of SQL.
	FunctionOID uint32
	// Cancel says that the client sent a CancelRequest for this
	// execution, CancelAfter microseconds after the execution's request.
	Cancel      bool
	CancelAfter int64
}

// Binary reports whether parameter i was sent in binary format.
func (w *Wire) Binary(i int) bool {
	if w == nil {
		return false
	}
	switch len(w.ParamFormats) {
	case 0:
		return false
	case 1:
		return w.ParamFormats[0] == 1
	}
	return i < len(w.ParamFormats) && w.ParamFormats[i] == 1
}

// Answer is what the original server answered an execution, when the
// input recorded it (a capture; a log does not): the row count of each
// statement that completed, in order (0 for a command tag without one),
// and the SQLSTATE of its error, if any (Event.SQLState).
type Answer struct {
	Rows []int64
	// Digests are the digests of the rows each statement that completed
	// returned, in the order of Rows, when the input kept them (a
	// capture of a proxy that does); nil otherwise.
	Digests []rowdigest.Digest
	// DigestVersion is the version Digests were made in, which a
	// replay digests the target's rows in.
	DigestVersion rowdigest.Version
	// Suspended: the execution stopped at its row limit (Wire.MaxRows;
	// the server answered PortalSuspended), so Rows' one count is that
	// limit and the portal goes on with a Fetch.
	Suspended bool
}

// PlanFormat is the format a plan was logged in (auto_explain.log_format).
type PlanFormat uint8

const (
	PlanText PlanFormat = iota + 1
	PlanJSON
	PlanYAML
	PlanXML
)

var planFormatNames = [...]string{"", "text", "json", "yaml", "xml"}

func (f PlanFormat) String() string {
	if int(f) < len(planFormatNames) && f != 0 {
		return planFormatNames[f]
	}
	return "format(" + strconv.Itoa(int(f)) + ")"
}

// Plan is a plan the server logged for an execution (auto_explain), as it
// wrote it: the plan production really ran.
type Plan struct {
	// Text is EXPLAIN's output as auto_explain logged it, in Format: from
	// its "Query Text" on, the query text as the server had it (constants
	// and all) and then the plan.
	Text   string
	Format PlanFormat
	// Analyzed is set for a plan with each node's actual rows and loops
	// (auto_explain.log_analyze).
	Analyzed bool
	// Duration is the executor's time auto_explain measured, in
	// microseconds.
	Duration int64
}

// Wire is how the original client sent the execution, nil when the input
// does not know (a log).
func (e *Event) Wire() *Wire {
	if e.rare == nil {
		return nil
	}
	return e.rare.wire
}

// SetWire sets how the original client sent the execution. Like
// SetPortal, it leaves other copies of the event as they were.
func (e *Event) SetWire(w *Wire) {
	if e.rare == nil && w == nil {
		return
	}
	e.clone().wire = w
}

// CopyIn is the data the original client sent for one COPY FROM STDIN,
// in its CopyData messages.
type CopyIn struct {
	Data [][]byte
	// Failed: the client ended the COPY with CopyFail.
	Failed bool
}

// CopyData is the data the original client sent for the first COPY FROM
// STDIN of the execution, in its CopyData messages; nil when the input
// does not have it (a log) or the execution had no COPY.
func (e *Event) CopyData() [][]byte {
	if c := e.CopyIns(); len(c) > 0 {
		return c[0].Data
	}
	return nil
}

// SetCopyData sets the data of the execution's one COPY. Like SetPortal,
// it leaves other copies of the event as they were.
func (e *Event) SetCopyData(data [][]byte) {
	if data == nil {
		e.SetCopyIns(nil)
		return
	}
	e.SetCopyIns([]CopyIn{{Data: data}})
}

// CopyIns is the data of each COPY FROM STDIN the execution ran, in order
// (a query string may hold several): nil when the input does not have
// COPY data (a log), empty when it knows the execution sent none (a
// capture; a COPY the server refused before asking for data).
func (e *Event) CopyIns() []CopyIn {
	if e.rare == nil {
		return nil
	}
	return e.rare.copyIns
}

// SetCopyIns sets the COPY data of each COPY. Like SetPortal, it leaves
// other copies of the event as they were.
func (e *Event) SetCopyIns(c []CopyIn) {
	if e.rare == nil && c == nil {
		return
	}
	e.clone().copyIns = c
}

// FirstUserOID is where the OIDs of objects made after initdb begin
// (PostgreSQL's FirstNormalObjectId): a function below it is built in,
// with the same OID on every server; one above it may have another OID
// on a replay's target.
const FirstUserOID = 16384

// Setting is a parameter a client set in its startup packet.
type Setting struct {
	Name, Value string
}

// Startup is what else a Connect's original client set when it
// connected (a capture's startup packet: options, DateStyle, TimeZone,
// search_path, ...), besides its user, database and application name;
// nil when the input does not know it (a log).
func (e *Event) Startup() []Setting {
	if e.rare == nil {
		return nil
	}
	return e.rare.startup
}

// SetStartup sets Startup. Like SetPortal, it leaves other copies of
// the event alone.
func (e *Event) SetStartup(params []Setting) {
	if e.rare == nil && params == nil {
		return
	}
	e.clone().startup = params
}

// Preamble is the SQL that recreates the state a session recorded from
// the middle had built before the recording took it up (its settings,
// its SQL-level prepared statements), in order: a replay runs it on the
// session's connection before its first statement, untimed and not
// compared. Nil for a session recorded from its start (and for a log);
// not nil, possibly empty, for one recorded from the middle, whose
// answers may then depend on state the capture does not hold (Resumed).
func (e *Event) Preamble() []string {
	if e.rare == nil {
		return nil
	}
	return e.rare.preamble
}

// Resumed reports whether a Connect is that of a session recorded from
// the middle.
func (e *Event) Resumed() bool { return e.Preamble() != nil }

// SetPreamble sets Preamble. Like SetPortal, it leaves other copies of
// the event alone.
func (e *Event) SetPreamble(sql []string) {
	if e.rare == nil && sql == nil {
		return
	}
	e.clone().preamble = sql
}

// Answer is what the original server answered, nil when the input did not
// record it (a log).
func (e *Event) Answer() *Answer {
	if e.rare == nil {
		return nil
	}
	return e.rare.answer
}

// SetAnswer sets what the original server answered. Like SetPortal, it
// leaves other copies of the event as they were.
func (e *Event) SetAnswer(a *Answer) {
	if e.rare == nil && a == nil {
		return
	}
	e.clone().answer = a
}

// ErrorSeverity is the error's severity (ERROR, FATAL, PANIC) of an Error
// event or a failed Statement or Execute, empty otherwise.
func (e *Event) ErrorSeverity() string {
	if e.rare == nil {
		return ""
	}
	return e.rare.severity
}

// ErrorMessage is the error's message of an Error event or a failed
// Statement or Execute, empty otherwise.
func (e *Event) ErrorMessage() string {
	if e.rare == nil {
		return ""
	}
	return e.rare.message
}

// Portal is the portal name of an Execute, usually empty.
func (e *Event) Portal() string {
	if e.rare == nil {
		return ""
	}
	return e.rare.portal
}

// Plans are the plans the server logged for an execution (auto_explain):
// none, or one for each statement it planned (a string of several
// statements may have several).
func (e *Event) Plans() []Plan {
	if e.rare == nil {
		return nil
	}
	return e.rare.plans
}

// AddPlan adds a plan the server logged for the execution. Like SetPortal,
// it leaves other copies of the event as they were.
func (e *Event) AddPlan(p Plan) {
	r := e.clone()
	r.plans = append(r.plans[:len(r.plans):len(r.plans)], p)
}

// SetError sets the error's severity and message. Like SetPortal, it
// leaves other copies of the event as they were.
func (e *Event) SetError(severity, message string) {
	if e.rare == nil && severity == "" && message == "" {
		return
	}
	r := e.clone()
	r.severity, r.message = severity, message
}

// OutsideStatement says that an Error event belongs to no statement: no
// Statement or Execute event reports its failure (the error of a Parse or
// Bind never executed, a FATAL outside any statement, an error at Sync
// after the execution was counted). Its producer knows it, and the counts
// need it: errors by SQLSTATE add up to the failed statements plus these.
func (e *Event) OutsideStatement() bool {
	return e.rare != nil && e.rare.outside
}

// SetOutsideStatement marks an Error event as belonging to no statement;
// see OutsideStatement.
func (e *Event) SetOutsideStatement() {
	e.clone().outside = true
}

// SetPortal sets the portal name.
func (e *Event) SetPortal(portal string) {
	if e.rare == nil && portal == "" {
		return
	}
	e.clone().portal = portal
}

// clone gives e a rare of its own: a copy of an Event shares the pointer.
func (e *Event) clone() *rare {
	r := new(rare)
	if e.rare != nil {
		*r = *e.rare
	}
	e.rare = r
	return r
}

// IsFetch reports whether e is an Execute that continues a portal an
// earlier Execute left suspended at its row limit (Wire.Fetch): part of
// that statement, not a statement of its own.
func (e *Event) IsFetch() bool {
	w := e.Wire()
	return w != nil && w.Fetch
}

// IsExecution reports whether e is a statement the server ran: a Statement
// or an Execute. Prepare and Error events are not executions, nor is a
// Fetch (IsFetch), which goes on with its statement's portal: counted
// with that statement, as pg_stat_statements counts it.
func (e *Event) IsExecution() bool {
	return (e.Kind == Statement || e.Kind == Execute) && (e.rare == nil || !e.IsFetch())
}

// OwnApplicationPrefix begins the application_name of every connection
// pgrehearse opens for itself rather than for the workload: the replay's
// pre-flight logins, its catalog reads and end marker, the observer and
// the findings' probes. A log captured while pgrehearse ran holds their
// statements too; analyses and replays leave those sessions out, and
// count them apart, so that "only in the candidate" lists what the
// workload did and not the tool's own probes. Only a log that names the
// application (%a in log_line_prefix, csvlog, jsonlog, or log_connections
// lines) shows them; in any other they are counted as the workload.
const OwnApplicationPrefix = "pgrehearse-"

// IsOwn reports whether e belongs to one of pgrehearse's own connections
// (see OwnApplicationPrefix).
func (e *Event) IsOwn() bool {
	return len(e.Application) > len(OwnApplicationPrefix) && e.Application[:len(OwnApplicationPrefix)] == OwnApplicationPrefix
}
