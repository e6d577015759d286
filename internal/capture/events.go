package capture

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// RecordSource yields a capture's records in the order they were written,
// then io.EOF. A Reader is one.
type RecordSource interface {
	Next() (*Record, error)
}

// MessageSkip says why a record of a capture made no event. Every record
// read is either used (it made, or completed, an event) or skipped for
// one of these reasons, so that a capture's records add up as a log's
// lines do.
//
// It is results' type: the counts are carried as they are counted.
type MessageSkip = results.MessageSkip

const (
	// SkipFunctionCall: a fast-path FunctionCall that does not decode.
	// (A decodable one is an execution, which a replay sends.)
	SkipFunctionCall MessageSkip = "function_call"
	// SkipDiscarded: an Execute the original server never ran, because an
	// earlier message of the same batch (up to its Sync) failed.
	SkipDiscarded MessageSkip = "discarded_by_server"
	// SkipUnknownStatement: a Bind or Execute that names a statement or
	// portal the capture does not hold (its Parse was in a gap).
	SkipUnknownStatement MessageSkip = "unknown_statement"
	// SkipUnknownSession: a record of a session whose start the capture
	// does not hold (it was in a gap).
	SkipUnknownSession MessageSkip = "unknown_session"
	// SkipCancel: a CancelRequest the proxy relayed while its session
	// had no statement in flight (it came after the answer), which a
	// replay has nothing to send for. A CancelRequest for a statement
	// in flight is part of that statement's event (event.Wire.Cancel).
	SkipCancel MessageSkip = "cancel_request"
	// SkipGap: the marker of records the recorder dropped.
	SkipGap MessageSkip = "gap"
	// SkipMalformed: a frontend message that does not decode.
	SkipMalformed MessageSkip = "malformed"
	// SkipUnmatched: an answer of the server with no request in flight
	// (its request made no event: it was in a gap, or named a statement
	// the capture does not hold), or COPY data with no COPY in progress.
	SkipUnmatched MessageSkip = "unmatched_answer"
	// SkipAuthFailed: the startup and end of a session that never got
	// past authentication, which a replay does not attempt (a log has
	// no session for it either).
	SkipAuthFailed MessageSkip = "auth_failed"
)

// MessageCounts account for every record of a capture read: Total ==
// Used + the sum of Skipped (results.MessageCounts, the one type the
// counts are carried in from the decoder to a result). Dropped is what
// the recorder lost, as its gap records say: those messages are not in
// the capture, so not in Total. ResumedSessions are the sessions
// recorded from the middle (Record.Resume), and BeforeRecording is
// counted by ResumeSkip.
type MessageCounts = results.MessageCounts

// Decoder turns a capture's records into the events a log would give,
// session by session: a Query is a Statement, an Execute (with the Parse
// and Bind it uses) an Execute event with its parameters as sent, their
// type OIDs and formats (event.Wire), its COPY data, and what the server
// answered (event.Answer, Failed and SQLState). An event is yielded once
// its answer is complete, as a log line is written once its statement has
// ended; its Time is when its request reached the proxy.
//
// A replay sends each execution with its own Sync: several Executes the
// original pipelined before one Sync (an implicit transaction) are
// replayed one transaction each.
type Decoder struct {
	src      RecordSource
	sessions map[uint64]*capSession
	ready    []*event.Event
	counts   MessageCounts
	n        int64
	warnings []string
	eof      bool
}

// NewDecoder decodes src's records.
func NewDecoder(src RecordSource) *Decoder {
	return &Decoder{src: src, sessions: map[uint64]*capSession{}, counts: MessageCounts{Skipped: map[MessageSkip]int64{}}}
}

type prepared struct {
	query string
	oids  []uint32
}

type portal struct {
	stmt    string
	query   string
	oids    []uint32
	params  [][]byte
	formats []int16
	results []int16
	// ran: an Execute ran the portal already; another Execute on it
	// fetches on from where the row limit suspended it.
	ran bool
}

// inFlight is an execution waiting for its answer.
type inFlight struct {
	ev   *event.Event
	rows []int64
	// copies are the data of each COPY FROM STDIN it ran, in order;
	// copyOpen says the last one is still taking data.
	copies    []event.CopyIn
	copyOpen  bool
	suspended bool
	// synced: the client sent Sync after it (before its answer came);
	// followed: it sent another Execute first, in the same batch.
	synced, followed bool
	// digests are the rows' digests of the completes, in the order of
	// rows; undigested: one complete had none (an earlier capture, or a
	// batch stopped at its row limit, whose portal's rows are digested
	// on its final CommandComplete).
	digests    []rowdigest.Digest
	undigested bool
	// digestVersion is the digests' version; digests of two versions
	// in one answer (never written so) leave it undigested.
	digestVersion rowdigest.Version
	// batch numbers an Execute's extended batch: the Syncs the client
	// sent before it.
	batch uint64
}

// completed adds a statement's CommandComplete to the execution's answer.
func (f *inFlight) completed(r *Record) {
	f.rows = append(f.rows, tagRows(r.Tag))
	v := r.DigestVersion
	if v == 0 {
		v = rowdigest.Current // a record not read from a file (as written)
	}
	switch {
	case !r.HasDigest || len(f.digests) > 0 && v != f.digestVersion:
		f.undigested = true
	default:
		f.digests, f.digestVersion = append(f.digests, r.Digest), v
	}
}

type capSession struct {
	id       string
	user, db string
	app      string
	pid      int32
	// names are its prepared statements and portals.
	names wire.Names[prepared, *portal]
	// simple are the Queries in flight, in order: a client may send the
	// next before the first's ReadyForQuery, and the server answers
	// them in turn. pending are the Executes of the current extended
	// batch without their answer yet, in order.
	simple  []*inFlight
	pending []*inFlight
	// expect are the ReadyForQuery the server owes, in the order the
	// client asked for them: true for a Query's, false for a Sync's. A
	// client may pipeline Queries and extended batches, and the server
	// answers them in turn; without it, a Query sent behind a batch
	// would take the batch's answers. synced counts the Syncs sent,
	// answered the Syncs' ReadyForQuery seen: the batch answered now is
	// number answered.
	expect           []bool
	synced, answered uint64
	// failed: an error ended the current extended batch; the server
	// discards what follows up to the Sync.
	failed bool
	// copying is the execution that takes COPY data now.
	copying *inFlight
	ended   bool
	// connect is the session's Connect while it is unknown whether it
	// logged in (see startup).
	connect *event.Event
	// held is a fast-path lo_creat held until the session's next
	// record, which may name the OID it made (see holdCreate).
	held *event.Event
}

// Next returns the next event, io.EOF after the last.
func (d *Decoder) Next() (*event.Event, error) {
	for len(d.ready) == 0 {
		if d.eof {
			return nil, io.EOF
		}
		r, err := d.src.Next()
		if errors.Is(err, io.EOF) {
			d.eof = true
			d.finish()
			continue
		}
		if err != nil {
			return nil, err
		}
		d.n++
		d.counts.Total++
		d.record(r)
	}
	ev := d.ready[0]
	d.ready[0] = nil
	d.ready = d.ready[1:]
	return ev, nil
}

// Counts accounts for the records read so far.
func (d *Decoder) Counts() MessageCounts { return d.counts }

// Warnings are what the decoder set aside, one sentence each.
func (d *Decoder) Warnings() []string { return d.warnings }

func (d *Decoder) skip(why MessageSkip) { d.counts.Skipped[why]++ }

func (d *Decoder) use() { d.counts.Used++ }

func (d *Decoder) record(r *Record) {
	switch r.Kind {
	case KindStartup:
		d.startup(r)
		return
	case KindGap:
		if r.Dropped < 0 {
			// A damaged count must not lower the drops.
			d.skip(SkipMalformed)
			return
		}
		d.skip(SkipGap)
		d.counts.Dropped += r.Dropped
		// What was in flight cannot be matched with its answers any
		// more: it is yielded without them, and matching starts over.
		for _, id := range slices.Sorted(maps.Keys(d.sessions)) {
			if s := d.sessions[id]; (r.Session == 0 || id == r.Session) && !s.ended {
				d.flush(s)
			}
		}
		return
	case KindCancel:
		d.cancel(r)
		return
	}
	s := d.sessions[r.Session]
	if s == nil || s.ended {
		d.skip(SkipUnknownSession)
		return
	}
	if c := s.connect; c != nil {
		// A startup without a backend: logged in, or refused?
		s.connect = nil
		if r.Kind == KindEnd && r.End == EndAuthFailed {
			d.skip(SkipAuthFailed) // its startup
			d.skip(SkipAuthFailed)
			s.ended = true
			return
		}
		d.use()
		d.ready = append(d.ready, c)
	}
	if s.held != nil {
		d.release(s, r)
	}
	switch r.Kind {
	case KindFrontend:
		d.frontend(s, r)
	case KindComplete:
		d.complete(s, r)
	case KindError:
		d.error(s, r)
	case KindReady:
		d.readyForQuery(s, r)
	case KindCopyIn:
		d.copyIn(s)
	case KindEnd:
		d.end(s, r)
	default:
		d.skip(SkipMalformed)
	}
}

func (d *Decoder) startup(r *Record) {
	s := &capSession{id: "c" + strconv.FormatUint(r.Session, 10), pid: int32(r.BackendPID)}
	var settings []event.Setting
	for _, p := range r.Params {
		switch p.Name {
		case "user":
			s.user = p.Value
		case "database":
			s.db = p.Value
		case "application_name":
			s.app = p.Value
		case "replication":
			// A replication connection is not replayed as one.
		default:
			settings = append(settings, event.Setting{Name: p.Name, Value: p.Value})
		}
	}
	if s.db == "" {
		// PostgreSQL's default: the database named as the user.
		s.db = s.user
	}
	d.sessions[r.Session] = s
	ev := d.event(s, event.Connect, r.Time)
	ev.SetStartup(settings)
	if rs := r.Resume; rs != nil {
		d.resume(s, ev, rs)
	}
	if r.BackendPID == 0 {
		// The proxy records a session's startup when the server sends
		// its BackendKeyData, after authentication; without one, at the
		// session's end, which says whether it ever logged in.
		s.connect = ev
		return
	}
	d.use()
	d.ready = append(d.ready, ev)
}

// resume sets up a session recorded from the middle: its prepared
// statements are the session's from the start, so that its Executes
// carry their queries, and the SQL that recreates the rest of its state
// (settings, SQL-level PREPAREs) is the Connect's preamble, which a
// replay runs before the session's first statement.
func (d *Decoder) resume(s *capSession, ev *event.Event, rs *Resume) {
	d.counts.ResumedSessions++
	d.counts.Preamble += int64(len(rs.State))
	if rs.Skipped > 0 {
		if d.counts.BeforeRecording == nil {
			d.counts.BeforeRecording = map[string]int64{}
		}
		d.counts.BeforeRecording[string(rs.SkipReason)] += rs.Skipped
	}
	sqls := []string{}
	for _, it := range rs.State {
		if it.Parse == nil {
			sqls = append(sqls, it.SQL)
			continue
		}
		var p pgproto3.Parse
		if len(it.Parse) < 5 || p.Decode(it.Parse[5:]) != nil {
			d.warnings = append(d.warnings, fmt.Sprintf("session %s: a prepared statement of its state from before the recording does not decode; its executions are skipped", s.id))
			continue
		}
		s.names.Parse(p.Name, prepared{query: p.Query, oids: p.ParameterOIDs}, true)
	}
	ev.SetPreamble(sqls)
}

func (d *Decoder) event(s *capSession, k event.Kind, t int64) *event.Event {
	return &event.Event{
		Kind: k, Time: t, Session: s.id, PID: s.pid,
		User: s.user, Database: s.db, Application: s.app,
		Duration: event.NoDuration, Line: d.n,
	}
}

func (d *Decoder) frontend(s *capSession, r *Record) {
	if len(r.Msg) < 5 {
		d.skip(SkipMalformed)
		return
	}
	body := r.Msg[5:]
	switch r.Msg[0] {
	case wire.Query:
		var m pgproto3.Query
		if m.Decode(body) != nil {
			d.skip(SkipMalformed)
			return
		}
		ev := d.event(s, event.Statement, r.Time)
		ev.Query = m.String
		f := &inFlight{ev: ev}
		if len(s.simple) == 0 {
			// Behind another Query, its COPY data waits for its
			// CopyInResponse (copyIn).
			s.copying = f
		}
		s.simple = append(s.simple, f)
		s.expect = append(s.expect, true)
		d.use()
	case wire.Parse:
		var m pgproto3.Parse
		if m.Decode(body) != nil {
			d.skip(SkipMalformed)
			return
		}
		s.names.Parse(m.Name, prepared{query: m.Query, oids: m.ParameterOIDs}, true)
		d.use()
	case wire.Bind:
		var m pgproto3.Bind
		if m.Decode(body) != nil {
			d.skip(SkipMalformed)
			return
		}
		st, ok := s.names.Statement(m.PreparedStatement)
		if !ok {
			d.skip(SkipUnknownStatement)
			return
		}
		s.names.Bind(m.DestinationPortal, &portal{stmt: m.PreparedStatement, query: st.query, oids: st.oids, params: m.Parameters, formats: m.ParameterFormatCodes, results: m.ResultFormatCodes}, true)
		d.use()
	case wire.Execute:
		d.execute(s, r, body)
	case wire.CopyData:
		if s.copying == nil {
			d.skip(SkipUnmatched)
			return
		}
		f := s.copying.openCopy()
		f.Data = append(f.Data, body)
		d.use()
	case wire.CopyDone:
		// CopyDone: a COPY of no rows has data too, none.
		if s.copying != nil {
			s.copying.openCopy()
			s.copying.copyOpen = false
		}
		d.use()
	case wire.CopyFail:
		// CopyFail: the replay fails that COPY as the client did.
		if s.copying != nil {
			s.copying.openCopy().Failed = true
			s.copying.copyOpen = false
		}
		s.copying = nil
		d.use()
	case wire.FunctionCall:
		var m pgproto3.FunctionCall
		if m.Decode(body) != nil {
			d.skip(SkipFunctionCall)
			return
		}
		// Answered as a Query is: FunctionCallResponse (not recorded) or
		// an error, then ReadyForQuery.
		s.simple = append(s.simple, &inFlight{ev: d.functionCall(s, &m, r.Time)})
		s.expect = append(s.expect, true)
		d.use()
	case wire.Close:
		var m pgproto3.Close
		if m.Decode(body) == nil {
			s.names.Close(m.ObjectType, m.Name)
		}
		d.use()
	case wire.Sync:
		for _, f := range s.pending {
			f.synced = true
		}
		s.expect = append(s.expect, false)
		s.synced++
		d.use()
	case wire.Flush, wire.Describe, wire.Terminate:
		// Sync, Flush, Describe, Terminate: their effect is in
		// the answers, or in the session's end.
		d.use()
	default:
		d.skip(SkipMalformed)
	}
}

// execute reads an Execute (body) of session s: the event of its
// portal's statement with the Bind's values and wire, which waits for
// its answers.
func (d *Decoder) execute(s *capSession, r *Record, body []byte) {
	var m pgproto3.Execute
	if m.Decode(body) != nil {
		d.skip(SkipMalformed)
		return
	}
	p, ok := s.names.Portal(m.Portal)
	if !ok {
		d.skip(SkipUnknownStatement)
		return
	}
	if s.failed && s.synced == s.answered {
		// After an error in its batch, before the Sync.
		d.skip(SkipDiscarded)
		return
	}
	ev := d.event(s, event.Execute, r.Time)
	ev.Query, ev.Name = p.query, p.stmt
	if m.Portal != "" {
		ev.SetPortal(m.Portal)
	}
	if len(p.params) > 0 {
		ev.Params = make([]event.Param, len(p.params))
		for i, v := range p.params {
			ev.Params[i] = event.Param{Value: string(v), Null: v == nil}
		}
	}
	w := wireOf(p)
	if m.MaxRows > 0 || p.ran {
		if w == nil {
			w = &event.Wire{}
		}
		w.MaxRows, w.Fetch = m.MaxRows, p.ran
	}
	ev.SetWire(w)
	p.ran = true
	for _, f := range s.pending {
		if !f.synced {
			f.followed = true
		}
	}
	f := &inFlight{ev: ev, batch: s.synced}
	s.pending = append(s.pending, f)
	s.copying = f
	d.use()
}

// openCopy is the COPY taking data now, begun if none is (CopyData
// whose CopyInResponse the capture does not hold).
func (f *inFlight) openCopy() *event.CopyIn {
	if !f.copyOpen {
		f.copies = append(f.copies, event.CopyIn{})
		f.copyOpen = true
	}
	return &f.copies[len(f.copies)-1]
}

// wireOf is how the original sent an execution, nil when that is all the
// replay would do without it (types left to the server, all text).
func wireOf(p *portal) *event.Wire {
	plain := true
	for _, o := range p.oids {
		plain = plain && o == 0
	}
	for _, f := range p.formats {
		plain = plain && f == 0
	}
	for _, f := range p.results {
		plain = plain && f == 0
	}
	if plain {
		return nil
	}
	return &event.Wire{ParamOIDs: p.oids, ParamFormats: p.formats, ResultFormats: p.results}
}

// simpleNext says whether the server answers a Query now: the first
// ReadyForQuery it owes is a Query's (or, owing none the decoder knows
// of, a Query is in flight).
func (s *capSession) simpleNext() bool {
	if len(s.simple) == 0 {
		return false
	}
	return len(s.expect) == 0 || s.expect[0]
}

// batchLen is how many of the Executes without their answer are in the
// batch the server answers now.
func (s *capSession) batchLen() int {
	n := 0
	for n < len(s.pending) && s.pending[n].batch <= s.answered {
		n++
	}
	return n
}

// head is the execution an answer belongs to: the Query the server
// answers now, else the first Execute without its answer.
func (s *capSession) head() *inFlight {
	if s.simpleNext() {
		return s.simple[0]
	}
	if len(s.pending) > 0 {
		return s.pending[0]
	}
	return nil
}

func (d *Decoder) complete(s *capSession, r *Record) {
	d.use()
	if s.simpleNext() {
		s.simple[0].completed(r)
		return
	}
	if len(s.pending) == 0 {
		// The completion of an Execute that made no event.
		d.counts.Used--
		d.skip(SkipUnmatched)
		return
	}
	f := s.pending[0]
	s.pending = s.pending[1:]
	if r.Tag == SuspendedTag {
		f.suspend()
	} else {
		f.completed(r)
	}
	d.emit(f, r.Time)
}

func (d *Decoder) error(s *capSession, r *Record) {
	d.use()
	f := s.head()
	if f == nil {
		// An error of a Parse or Bind with no Execute after it, or a
		// FATAL outside any statement: an Error event, as a log has.
		ev := d.event(s, event.Error, r.Time)
		ev.SQLState = r.SQLState
		ev.SetError(r.Severity, r.Message)
		ev.SetOutsideStatement()
		s.failed = true
		d.ready = append(d.ready, ev)
		return
	}
	f.ev.Failed = true
	f.ev.SQLState = r.SQLState
	f.ev.SetError(r.Severity, r.Message)
	if s.simpleNext() {
		// The rest of the string is not run; ReadyForQuery ends it.
		return
	}
	// The server discards the rest of the batch up to the Sync (a
	// batch sent after that Sync runs).
	s.pending = s.pending[1:]
	d.emit(f, r.Time)
	n := s.batchLen()
	d.counts.Skipped[SkipDiscarded] += int64(n)
	d.counts.Used -= int64(n)
	s.pending = s.pending[n:]
	if len(s.pending) == 0 {
		s.pending = nil
	}
	s.failed = true
}

// suspend sets an execution's answer to PortalSuspended: it returned
// exactly its row limit.
func (f *inFlight) suspend() {
	if w := f.ev.Wire(); w != nil {
		f.rows = append(f.rows[:0], int64(w.MaxRows))
	}
	f.suspended = true
}

func (d *Decoder) copyIn(s *capSession) {
	d.use()
	if f := s.head(); f != nil {
		s.copying = f
		// A new COPY of the string (a Query may run several).
		f.copyOpen = false
		f.openCopy()
	}
}

// cancel puts a CancelRequest on the execution its session had in
// flight, with its offset from the execution's request, so that a replay
// cancels it as late; with none in flight it is skipped.
func (d *Decoder) cancel(r *Record) {
	s := d.sessions[r.Session]
	if s == nil || s.ended {
		d.skip(SkipCancel)
		return
	}
	f := s.head()
	if f == nil {
		d.skip(SkipCancel)
		return
	}
	var w event.Wire
	if old := f.ev.Wire(); old != nil {
		if old.Cancel {
			// A second cancel of the same execution: the first one is
			// the one that can take effect.
			d.skip(SkipCancel)
			return
		}
		w = *old
	}
	w.Cancel, w.CancelAfter = true, max(r.Time-f.ev.Time, 0)
	f.ev.SetWire(&w)
	d.use()
}

func (d *Decoder) readyForQuery(s *capSession, r *Record) {
	d.use()
	if len(s.expect) > 0 {
		query := s.expect[0]
		s.expect = s.expect[1:]
		if len(s.expect) == 0 {
			s.expect = nil
		}
		if query {
			// The ReadyForQuery of the first Query in flight; a batch
			// sent behind it waits for its own.
			if len(s.simple) > 0 {
				f := s.simple[0]
				d.emit(f, r.Time)
				if createsLargeObject(f.ev) && !f.ev.Failed {
					d.ready = d.ready[:len(d.ready)-1]
					s.held = f.ev
				}
				s.simple[0] = nil
				s.simple = s.simple[1:]
				if len(s.simple) == 0 {
					s.simple = nil
				}
				if s.copying == f {
					s.copying = nil
				}
			}
			return
		}
		// A Sync's: Executes of its batch still without an answer (an
		// empty query, a portal suspended at its row limit) end with it.
		n := s.batchLen()
		for _, f := range s.pending[:n] {
			// A portal suspended at its row limit in a capture that
			// does not record PortalSuspended.
			if w := f.ev.Wire(); w != nil && w.MaxRows > 0 && len(f.rows) == 0 && !f.ev.Failed {
				f.suspend()
			}
			d.emit(f, r.Time)
		}
		s.pending = s.pending[n:]
		if len(s.pending) == 0 {
			s.pending = nil
		}
		s.answered++
		s.failed = false
		s.copying = nil
		return
	}
	// A ReadyForQuery the decoder knows no request of ends whatever is
	// in flight.
	if len(s.simple) > 0 {
		// The ReadyForQuery of the first Query in flight.
		d.emit(s.simple[0], r.Time)
		if f := s.simple[0]; createsLargeObject(f.ev) && !f.ev.Failed {
			d.ready = d.ready[:len(d.ready)-1]
			s.held = f.ev
		}
		s.simple[0] = nil
		s.simple = s.simple[1:]
		if len(s.simple) == 0 {
			s.simple = nil
		}
	}
	// Executes still without an answer (an empty query, a portal
	// suspended at its row limit in a capture that does not record
	// PortalSuspended) end with the batch.
	for _, f := range s.pending {
		if w := f.ev.Wire(); w != nil && w.MaxRows > 0 && len(f.rows) == 0 && !f.ev.Failed {
			f.suspend()
		}
		d.emit(f, r.Time)
	}
	s.pending = nil
	s.failed = false
	s.copying = nil
}

// emit yields an execution with its answer, ended at t.
func (d *Decoder) emit(f *inFlight, t int64) {
	ev := f.ev
	if w := ev.Wire(); w != nil && w.MaxRows > 0 && (!f.synced || f.followed) && ev.Kind == event.Execute {
		// Answered before any Sync (the client flushed), or followed
		// by another Execute before it (a fetch of the same portal
		// pipelined): a replay waits for the answer without ending
		// the implicit transaction that holds the portal.
		w.NoSync = true
	} else if f.followed && ev.Kind == event.Execute && (w == nil || w.MaxRows == 0) {
		// Followed by another Execute before the batch's Sync (a
		// pipeline: psycopg's, libpq's, a JDBC batch): outside a
		// transaction block the statements up to the Sync are one
		// implicit transaction, which an error in a later one rolls
		// back whole, so a replay sends it without a Sync either.
		if w == nil {
			w = &event.Wire{}
			ev.SetWire(w)
		}
		w.NoSync = true
	}
	if t >= ev.Time {
		ev.Duration = t - ev.Time
	}
	if f.copies == nil && ev.Failed {
		// The server refused it before asking for any data (a COPY
		// FROM STDIN of a missing table): there was none, which a
		// replay can send, rather than data missing from the capture.
		f.copies = noCopies
	}
	a := &event.Answer{Rows: f.rows, Suspended: f.suspended}
	if !f.undigested && !f.suspended {
		a.Digests, a.DigestVersion = f.digests, f.digestVersion
	}
	ev.SetAnswer(a)
	d.yield(f)
}

// noCopies says that an execution sent no COPY data.
var noCopies = []event.CopyIn{}

// yield yields an execution whose answer never came: neither its
// duration nor its outcome is known, and nothing is compared with it.
func (d *Decoder) yield(f *inFlight) {
	if f.copies != nil {
		f.ev.SetCopyIns(f.copies)
	}
	d.ready = append(d.ready, f.ev)
}

func (d *Decoder) end(s *capSession, r *Record) {
	d.use()
	d.flush(s)
	s.ended = true
	if r.End == EndOpen {
		// Still open when the capture stopped: replayed up to there,
		// without an end, as a log's session open at its end is.
		d.counts.OpenSessions++
		return
	}
	d.ready = append(d.ready, d.event(s, event.Disconnect, r.Time))
}

// flush yields what a session had in flight when its record stream
// stopped: executions whose answer never came.
func (d *Decoder) flush(s *capSession) {
	if s.held != nil {
		d.release(s, nil)
	}
	for _, f := range s.simple {
		d.yield(f)
	}
	s.simple = nil
	for _, f := range s.pending {
		d.yield(f)
	}
	s.pending = nil
	s.expect = nil
	s.synced, s.answered = 0, 0
	s.failed = false
	s.copying = nil
}

// finish ends the sessions whose end the capture does not hold: they
// were open when it stopped.
func (d *Decoder) finish() {
	ids := slices.Sorted(maps.Keys(d.sessions))
	for _, id := range ids {
		if s := d.sessions[id]; !s.ended {
			if c := s.connect; c != nil {
				// A startup without a backend whose end the capture
				// does not hold: open, as any session cut there.
				s.connect = nil
				d.use()
				d.ready = append(d.ready, c)
			}
			d.counts.OpenSessions++
			d.flush(s)
		}
	}
	if d.counts.OpenSessions > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("%d sessions were still open when the capture stopped: replayed up to there, without their end", d.counts.OpenSessions))
	}
	if d.counts.Dropped > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("the recorder dropped %d messages: the capture is incomplete", d.counts.Dropped))
	}
}

// tagRows is the row count at the end of a command tag ("INSERT 0 5" is
// 5), 0 when the tag has none, as the replay reads its own.
func tagRows(tag string) int64 {
	i := len(tag)
	for i > 0 && tag[i-1] >= '0' && tag[i-1] <= '9' {
		i--
	}
	if i == len(tag) || (i > 0 && tag[i-1] != ' ') || len(tag)-i > 18 {
		return 0
	}
	n, _ := strconv.ParseInt(tag[i:], 10, 64)
	return n
}
