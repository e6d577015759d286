package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// The hot path of an execution drives the protocol at the message level,
// on pgconn's own connection: the messages are written with the
// connection's Frontend and the answers read with PgConn.ReceiveMessage,
// so pgconn still sees every backend message (transaction status,
// ParameterStatus, notices, FATAL errors that close the connection) and
// the connection stays in a state pgconn can go on with (Prepare,
// Deallocate, Close). What this saves over ExecPrepared/ExecParams/Exec is
// per-statement work the replay has no use for: a context watch per call
// (a context.AfterFunc registered on the shared hard context, under its
// lock), the slow-write timer armed and stopped around every flush, the
// ResultReader and command tag bookkeeping, copying rows.
//
// The server sees exactly what the pgconn calls sent:
//   - named prepared statement: Bind, Describe (portal), Execute, Sync, as
//     ExecPrepared (the Parse is PgConn.Prepare's, once per session);
//   - unnamed statement: Parse, Bind, Describe (portal), Execute, Sync, as
//     ExecParams with nil types and formats (text; types inferred);
//   - simple protocol: one Query with the whole string, as Exec.
//
// and, for the forms a capture records besides (see fetch.go):
//   - an Execute with a row limit: Close of the portal the original
//     named, Bind to it, Describe, Execute with the limit, Sync; each
//     later fetch of the portal: Execute with the limit, Sync;
//   - a fast-path call: FunctionCall, answered up to ReadyForQuery.
//
// One exchange is written whole before anything is read. That cannot
// deadlock on full socket buffers as a pipeline could (the reason pgconn
// arms its slow-write timer): the server produces rows only for Execute
// or Query, which it reads after every byte before it; what it writes
// before (ParseComplete, BindComplete, RowDescription, an error) is a few
// bytes. A server that wants COPY data (COPY FROM STDIN the classifier
// did not see) is sent a CopyFail, so the statement fails instead of
// hanging; COPY TO STDOUT is read and dropped.
//
// Cancellation: no context is watched per statement. When the hard
// context ends, a function registered once per connection (watchHard,
// stop.go) sends the server a CancelRequest for the statement in flight,
// whose exchange then ends with the server's error; a target that does
// not answer has a past deadline set on the socket instead, which makes
// the exchange fail at once. Either way the statement is counted as
// interrupted. No deadline is set per statement either: the I/O watch
// (watch.go) looks for statements that get no answer.

var (
	describePortal = &pgproto3.Describe{ObjectType: 'P'}
	executeAll     = &pgproto3.Execute{}
	syncMsg        = &pgproto3.Sync{}
	copyFail       = &pgproto3.CopyFail{Message: "pgrehearse: the COPY data is not in the log"}
	copyFailed     = &pgproto3.CopyFail{Message: "pgrehearse: the original client failed this COPY"}
	copyDone       = &pgproto3.CopyDone{}
	flushMsg       = &pgproto3.Flush{}
)

// errCopyBoth: the server started a replication stream, which a replay
// cannot follow.
var errCopyBoth = errors.New("server started COPY BOTH mode, which replay does not support")

// wire is a session's reusable protocol messages, and the row counts of
// the last exchange's statements.
type wire struct {
	bind  pgproto3.Bind
	parse pgproto3.Parse
	query pgproto3.Query
	// copyIns is the COPY data of the execution in flight, when its
	// input has it (a capture): each COPY's sent when the server asks
	// for it, in turn.
	copyIns []event.CopyIn
	// maxRows is the row limit of the Execute in flight: a
	// PortalSuspended answer returned that many rows.
	maxRows uint32
	// noSync: the execution in flight was sent with Flush instead of
	// Sync, as the original sent it (event.Wire.NoSync): its answer
	// ends at PortalSuspended, CommandComplete or an error, not at a
	// ReadyForQuery.
	noSync bool
	// unsynced: a batch sent without Sync was answered, and its
	// implicit transaction (holding its portal) is still open.
	unsynced bool
	// piped: that batch is a pipeline's (event.Wire.NoSync without a
	// row limit), which the session's next execution goes on with
	// rather than ending it with a Sync first.
	piped bool
	// portal is the portal an execution with a row limit binds, named
	// as the original named it, so that its fetches find it.
	portal string
	// Messages of an execution with a row limit, on a named portal.
	describe pgproto3.Describe
	execute  pgproto3.Execute
	close    pgproto3.Close
	call     pgproto3.FunctionCall
	// rows holds, per statement that completed in the last exchange, in
	// order, the rows its command tag gives (INSERT 0 5, UPDATE 2,
	// SELECT 3, ...; 0 for a tag without a count, such as BEGIN).
	rows []int64
	// digests are the digests of their rows, when the execution's
	// recorded answer has some to compare with (digest.go).
	digests rowDigests
}

// tagRows is the row count at the end of a command tag ("INSERT 0 5" is
// 5), 0 when the tag has none. It reads the bytes in place: a tag is a
// few bytes of the connection's read buffer.
func tagRows(tag []byte) int64 {
	i := len(tag)
	for i > 0 && tag[i-1] >= '0' && tag[i-1] <= '9' {
		i--
	}
	if i == len(tag) || (i > 0 && tag[i-1] != ' ') || len(tag)-i > 18 {
		return 0
	}
	var n int64
	for _, c := range tag[i:] {
		n = n*10 + int64(c-'0')
	}
	return n
}

// execPrepared executes the named prepared statement with the parameters
// in the formats the original sent them (w; nil: text, as a log has them).
func (s *session) execPrepared(name string, params [][]byte, w *event.Wire) error {
	if len(params) > math.MaxUint16 {
		return fmt.Errorf("extended protocol limited to %v parameters", math.MaxUint16)
	}
	s.w.bind = pgproto3.Bind{PreparedStatement: name, Parameters: params}
	if w != nil {
		s.w.bind.ParameterFormatCodes, s.w.bind.ResultFormatCodes = w.ParamFormats, w.ResultFormats
	}
	s.sendBindExecute(w)
	return s.exchange(true)
}

// execParams parses query as the unnamed statement and executes it. With
// w (a capture), the Parse names the parameter types the original named
// and the Bind sends the formats it sent; without (a log), the types are
// left to the server and the parameters are text.
func (s *session) execParams(query string, params [][]byte, w *event.Wire) error {
	if len(params) > math.MaxUint16 {
		return fmt.Errorf("extended protocol limited to %v parameters", math.MaxUint16)
	}
	f := s.conn.Frontend()
	s.w.parse.Query = query
	if w != nil {
		s.w.parse.ParameterOIDs = w.ParamOIDs
	}
	f.SendParse(&s.w.parse)
	s.w.parse.Query, s.w.parse.ParameterOIDs = "", nil
	s.w.bind = pgproto3.Bind{Parameters: params}
	if w != nil {
		s.w.bind.ParameterFormatCodes, s.w.bind.ResultFormatCodes = w.ParamFormats, w.ResultFormats
	}
	s.sendBindExecute(w)
	return s.exchange(true)
}

// sendBindExecute writes the Bind in s.w.bind, then Describe, Execute
// and Sync: on the unnamed portal for all rows, as pgconn does; with the
// original's row limit (w.MaxRows), on the portal the original named,
// closed first in case an earlier run left it open (a Close of no portal
// is no error), so that its Fetches continue it.
func (s *session) sendBindExecute(w *event.Wire) {
	f := s.conn.Frontend()
	s.w.maxRows = 0
	if w == nil || w.MaxRows == 0 {
		f.SendBind(&s.w.bind)
		s.w.bind.Parameters, s.w.bind.ParameterFormatCodes, s.w.bind.ResultFormatCodes = nil, nil, nil
		f.SendDescribe(describePortal)
		f.SendExecute(executeAll)
		if w != nil && w.NoSync {
			// A pipeline's: the next execution goes on with its
			// implicit transaction.
			s.w.piped = true
			s.endBatch(true)
			return
		}
		f.SendSync(syncMsg)
		return
	}
	s.w.maxRows = w.MaxRows
	if s.w.portal != "" {
		s.w.close = pgproto3.Close{ObjectType: 'P', Name: s.w.portal}
		f.SendClose(&s.w.close)
	}
	s.w.bind.DestinationPortal = s.w.portal
	f.SendBind(&s.w.bind)
	s.w.bind = pgproto3.Bind{}
	s.w.describe = pgproto3.Describe{ObjectType: 'P', Name: s.w.portal}
	f.SendDescribe(&s.w.describe)
	s.w.execute = pgproto3.Execute{Portal: s.w.portal, MaxRows: w.MaxRows}
	f.SendExecute(&s.w.execute)
	s.endBatch(w.NoSync)
}

// endBatch ends an execution with a row limit as the original did: with
// Sync, or with Flush when the original waited for its answer before any
// Sync (the portal then lives on outside a transaction block).
func (s *session) endBatch(noSync bool) {
	s.w.noSync = noSync
	if noSync {
		s.conn.Frontend().Send(flushMsg)
		return
	}
	s.conn.Frontend().SendSync(syncMsg)
}

// syncBatch sends the Sync that ends a batch sent without one, once the
// session goes on to something other than fetching: the original sent it
// then too (with the portal's Close), and its implicit transaction
// commits, ending the portal's execution, as pg_stat_statements records
// it, rather than aborting with a later statement's error.
func (s *session) syncBatch() error {
	if !s.w.unsynced || s.conn == nil || s.conn.IsClosed() {
		return nil
	}
	s.conn.Frontend().SendSync(syncMsg)
	return s.exchange(true)
}

// parseInBatch prepares name with Parse and Flush, without the Sync that
// would end the batch still open, and waits for its ParseComplete. After
// an error the server skips to the next Sync: sent then, the session is
// usable again, as the batch's Sync made it for the original.
func (s *session) parseInBatch(name, query string, oids []uint32) error {
	f := s.conn.Frontend()
	f.SendParse(&pgproto3.Parse{Name: name, Query: query, ParameterOIDs: oids})
	f.Send(flushMsg)
	if err := f.Flush(); err != nil {
		return s.broken(err)
	}
	var first error
	for {
		msg, err := s.conn.ReceiveMessage(context.Background())
		if err != nil {
			return s.broken(err)
		}
		switch m := msg.(type) {
		case *pgproto3.ParseComplete:
			if first == nil {
				return nil
			}
		case *pgproto3.ErrorResponse:
			if first == nil {
				first = pgconn.ErrorResponseToPgError(m)
				f.SendSync(syncMsg)
				if err := f.Flush(); err != nil {
					return s.broken(err)
				}
			}
		case *pgproto3.ReadyForQuery:
			s.w.unsynced, s.w.piped = false, false
			return first
		}
	}
}

// execFetch continues the portal an earlier execution left suspended at
// its row limit, as the original did: Execute with the same limit and no
// new Bind, then Sync.
func (s *session) execFetch(portal string, w *event.Wire) error {
	s.w.maxRows = w.MaxRows
	s.w.execute = pgproto3.Execute{Portal: portal, MaxRows: w.MaxRows}
	s.conn.Frontend().SendExecute(&s.w.execute)
	s.endBatch(w.NoSync)
	return s.exchange(true)
}

// execFunctionCall makes a fast-path function call as the original did:
// the function's OID, the arguments in their formats and the result's
// format. It is answered as a simple query is, up to ReadyForQuery.
func (s *session) execFunctionCall(w *event.Wire, args [][]byte) error {
	if len(args) > math.MaxUint16 {
		return fmt.Errorf("function call limited to %v arguments", math.MaxUint16)
	}
	c := &s.w.call
	*c = pgproto3.FunctionCall{Function: w.FunctionOID, Arguments: args, ArgFormatCodes: c.ArgFormatCodes[:0]}
	for _, f := range w.ParamFormats {
		c.ArgFormatCodes = append(c.ArgFormatCodes, uint16(f))
	}
	if len(w.ResultFormats) > 0 {
		c.ResultFormatCode = uint16(w.ResultFormats[0])
	}
	s.conn.Frontend().Send(c)
	c.Arguments = nil
	return s.exchange(false)
}

// execSimple sends sql as one simple query.
func (s *session) execSimple(sql string) error {
	s.w.query.String = sql
	s.conn.Frontend().SendQuery(&s.w.query)
	s.w.query.String = ""
	return s.exchange(false)
}

// exchange flushes the messages written and reads the answers up to
// ReadyForQuery, dropping rows without looking at them. It returns the
// first error the server reported, or why the connection failed; after a
// failure of the connection itself the connection is closed. extended
// says whether the messages were of the extended protocol.
func (s *session) exchange(extended bool) error {
	if ec := s.ec; ec != nil {
		// On the engine, its reads and writes park the session.
		ec.mine.Store(true)
		defer ec.mine.Store(false)
	}
	conn := s.conn
	f := conn.Frontend()
	if err := f.Flush(); err != nil {
		return s.broken(err)
	}
	var first error
	s.w.rows = s.w.rows[:0]
	s.w.digests.reset()
	defer func() { s.w.noSync = false }()
	for {
		msg, err := conn.ReceiveMessage(context.Background())
		if err != nil {
			// A FATAL error arrives here too, pgconn having closed the
			// connection.
			return s.broken(err)
		}
		switch m := msg.(type) {
		case *pgproto3.ReadyForQuery:
			s.w.unsynced, s.w.piped = false, false
			return first
		case *pgproto3.EmptyQueryResponse:
			// An empty query's whole answer, but for the ReadyForQuery
			// of a Sync.
			if s.w.noSync {
				s.w.unsynced = true
				return first
			}
		case *pgproto3.DataRow:
			s.w.digests.row(m)
		case *pgproto3.CommandComplete:
			s.w.rows = append(s.w.rows, tagRows(m.CommandTag))
			s.w.digests.completed()
			if s.w.noSync {
				s.w.unsynced = true
				return first
			}
		case *pgproto3.PortalSuspended:
			// The row limit reached: exactly that many rows.
			s.w.rows = append(s.w.rows, int64(s.w.maxRows))
			if s.w.noSync {
				s.w.unsynced = true
				return first
			}
		case *pgproto3.ErrorResponse:
			s.w.digests.failed()
			// Only the first: an error after CommandComplete (a deferred
			// constraint) is the first of its statement too.
			if first == nil {
				first = pgconn.ErrorResponseToPgError(m)
			}
			if s.w.noSync {
				// The server skips to the next Sync, which the original
				// sent later: sent now, the session is usable again.
				s.w.noSync = false
				f.SendSync(syncMsg)
				if err := f.Flush(); err != nil {
					return s.broken(err)
				}
			}
		case *pgproto3.CopyInResponse:
			if len(s.w.copyIns) > 0 {
				// The data the original sent for this COPY (a
				// capture), then its end as the original ended it.
				c := s.w.copyIns[0]
				s.w.copyIns = s.w.copyIns[1:]
				for _, d := range c.Data {
					f.Send(&pgproto3.CopyData{Data: d})
				}
				if c.Failed {
					f.Send(copyFailed)
				} else {
					f.Send(copyDone)
				}
				if extended {
					// The server ignored the Sync sent after Execute
					// while in copy-in mode: ReadyForQuery needs
					// another.
					f.SendSync(syncMsg)
				}
				if err := f.Flush(); err != nil {
					return s.broken(err)
				}
				continue
			}
			f.Send(copyFail)
			if extended {
				// The server ignored the Sync sent after Execute, being
				// in copy-in mode then; after the error it skips to the
				// next Sync.
				f.SendSync(syncMsg)
			}
			if err := f.Flush(); err != nil {
				return s.broken(err)
			}
		case *pgproto3.CopyBothResponse:
			return s.broken(errCopyBoth)
		}
	}
}

// broken closes the connection after a failure in the middle of an
// exchange, whose state is unknown, and returns the error to count: the
// cancellation when the hard context ended.
func (s *session) broken(err error) error {
	conn := s.conn
	if !conn.IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(ctx)
		cancel()
	}
	if herr := s.r.hard.Err(); herr != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return fmt.Errorf("%w: %v", herr, err)
		}
	}
	return err
}
