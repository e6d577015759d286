package replay

import (
	"context"
	"errors"
	"strings"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/redact"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// statement replays one execution event: a query string (simple protocol)
// or an execution of the extended protocol.
func (s *session) statement(it item, t *time.Timer) {
	r := s.r
	ev := it.ev
	if ev.IsFetch() {
		s.fetch(it, t)
		return
	}
	items := it.items
	if items == nil {
		items = r.cache.Get(ev.Query)
	}
	k := int64(len(items))
	if k == 0 {
		r.c.empty.Add(1)
		return
	}
	r.c.total.Add(k)
	s.trackTx(items, ev.Query, ev.Failed)
	if s.skipTx != "" {
		// The connection broke inside this transaction block, or a
		// commit it depended on was lost: its rest cannot run (on a
		// new connection, or without what it depended on), and the
		// session resumes after it.
		s.skip(items, s.skipTx)
		if !s.logTx {
			s.skipTx = ""
		}
		return
	}
	reason := s.skipReason(ev, items)
	if r.opts.ReadOnly && ev.Kind == event.Statement {
		s.trackPrepared(items, ev.Query, reason == "")
	}
	if reason != "" {
		s.skip(items, reason)
		return
	}
	if !s.waitDue(it, t) {
		s.skip(items, r.stopReason())
		return
	}
	due := s.clk.start.Add(it.due)
	if s.conn == nil && !(r.opts.DryRun && s.connected) {
		ok := false
		s.block(func() { ok = s.connect() })
		if !ok {
			s.skip(items, s.failReason)
			return
		}
	}
	issued := time.Now()
	var lag time.Duration
	if s.clk.paced() {
		lag = max(issued.Sub(due), 0)
	}
	var sy synced
	if !it.sync.Wait.None() || len(it.deps) > 0 {
		ok := true
		// Taken before the Board is looked at: a commit lost from
		// then on is one the statement waited for (lostDuring).
		mark := s.syncBoard().LostMark()
		switch {
		case s.task == nil:
			sy, ok = s.syncWaitFrom(time.Time{}, mark, it.sync.Wait, it.deps, t, false)
		case s.syncPending(it.sync.Wait, it.deps):
			sy, ok = s.syncWaitParked(mark, it.sync.Wait, it.deps, t)
		}
		if !ok {
			s.skip(items, r.stopReason())
			return
		}
		if sy.lostDep {
			s.dependencyLost(items)
			return
		}
		if sy.wait > 0 {
			issued = time.Now()
		}
	}
	// Schedule lag leaves out what sync waits delayed (see syncLag).
	lag = s.syncLag(lag, sy.wait)
	if lag > 0 {
		s.lagSource(lag, due)
	}
	for {
		// The latest log time issued, for the progress line.
		old := r.c.lastIssued.Load()
		if ev.Time <= old || r.c.lastIssued.CompareAndSwap(old, ev.Time) {
			break
		}
	}

	// Its rows, to read the one a differing answer differs in.
	s.w.digests.keep = r.taint != nil && it.sync.Reach.Ranges()
	latency, te, failed, delayed, ok := s.issue(ev, items, issued)
	if !ok {
		return
	}
	if !failed {
		s.noteLeftovers(items, ev.Query)
	}
	s.ran(it.sync, failed && !ev.Failed)
	if delayed {
		// Its time includes a wait the replayer made: counted, with no
		// latency, so that no comparison takes it for the target's.
		r.c.replayerDelayed.Add(k)
		latency = -1
	}
	sy.race, sy.tables, sy.unknown, sy.reach = it.sync.Race, it.sync.Tables, it.sync.Unknown, it.sync.Reach
	s.record(ev, items, issued, latency, lag, sy, failed, te)
	s.w.digests.keep = false
}

// issue executes ev (items) on the target, issued at issued, unless the
// replay is a dry run, and classifies its outcome: the latency (-1 when
// none), whether it failed and how, and whether its time includes a wait
// the replayer made (delayed). A failure leaves the session's block as
// the log's. ok is false when the execution is not to be recorded, and
// was counted already: the stop cut it, or the connection was lost where
// the original's was not.
func (s *session) issue(ev *event.Event, items []fingerprint.Item, issued time.Time) (latency time.Duration, te targetError, failed, delayed, ok bool) {
	r := s.r
	latency = -1
	if r.opts.DryRun {
		return latency, te, false, false, true
	}
	piped := s.w.piped
	latency, seq, err := s.exec(ev, issued)
	if err != nil && !ev.Failed && !piped {
		latency, seq, err = s.awaitCreatedElsewhere(ev, latency, seq, err)
	}
	delayed = s.delayedSeq.Load() == seq
	s.forgetDeallocated(items, ev.Query, err != nil)
	if err != nil && r.hardDone.Load() {
		// Cancelled by the stop (or cut, the target silent): the
		// statement did not run to its end, which says nothing of
		// the target.
		if s.conn.IsClosed() {
			s.dropConn()
		}
		s.skip(items, r.stopReason())
		return latency, te, failed, delayed, false
	}
	if err != nil {
		failed = true
		te = classifyError(err, s.conn)
		if te.lost {
			s.dropConn()
			// The original's session ended here too (it was
			// terminated): an outcome like any other.
			if !(ev.Failed && ev.ErrorSeverity() == "FATAL") {
				s.lose(items)
				return latency, te, failed, delayed, false
			}
			s.lost, s.lostAt = true, time.Now()
		}
	}
	if failed && ev.Failed && !te.lost {
		// It failed in the original too, most likely where it
		// failed here: the target's block is the best evidence
		// of the original's (a failed COMMIT of a deferred
		// constraint ended it, a failed statement before the
		// string's ROLLBACK left it open and aborted).
		s.logTx = s.conn.TxStatus() != 'I'
	}
	if failed && !te.lost && !s.logTx && s.conn.TxStatus() != 'I' {
		// The log's block ended with this string (BEGIN; ...;
		// COMMIT sent as one query), but on the target a statement
		// failed before its COMMIT, leaving the block open and
		// aborted: every later statement of the session would fail
		// with 25P02. Rolled back, the session goes on as logged.
		s.rollback()
		r.c.realigned.Add(1)
	}
	s.blame(&te, failed, ev)
	return latency, te, failed, delayed, true
}

// awaitCreatedElsewhere runs ev again while it fails only because a
// relation it names does not exist yet on the target, when the log
// creates that relation in a session this replay does not run (another
// shard's, Options.CreatedElsewhere), which a shard without a
// coordination database does not wait for (issue 77: one shard of the
// mixed workload exited 3 on 42P01, a table another shard creates). Only
// a statement that ran outside a transaction block is run again (the
// failure rolled back all it did); each attempt polls the target, with a
// backoff, within ConnectTimeout. It returns the last attempt's outcome.
func (s *session) awaitCreatedElsewhere(ev *event.Event, latency time.Duration, seq int64, err error) (time.Duration, int64, error) {
	r := s.r
	ce := r.opts.CreatedElsewhere
	if ce == nil {
		return latency, seq, err
	}
	if w := ev.Wire(); w != nil && (w.Fetch || w.FunctionOID != 0) {
		return latency, seq, err
	}
	since := time.Now()
	backoff := 20 * time.Millisecond
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42P01" || s.conn.IsClosed() || s.conn.TxStatus() != 'I' {
			return latency, seq, err
		}
		name, ok := missingRelation(pgErr.Message)
		left := r.opts.ConnectTimeout - time.Since(since)
		if !ok || !ce("rel:"+name) || left <= 0 || r.stopped() {
			return latency, seq, err
		}
		if t == nil {
			t = time.NewTimer(min(backoff, left))
		} else {
			t.Reset(min(backoff, left))
		}
		s.block(func() {
			select {
			case <-t.C:
			case <-r.stopCh:
			}
		})
		backoff = min(2*backoff, time.Second)
		r.c.createdRetries.Add(1)
		latency, seq, err = s.exec(ev, time.Now())
	}
}

// missingRelation returns the name, without its schema, of the relation
// a 42P01's message says does not exist (`relation "app.t" does not
// exist`).
func missingRelation(msg string) (string, bool) {
	const head, tail = `relation "`, `" does not exist`
	if !strings.HasPrefix(msg, head) || !strings.HasSuffix(msg, tail) {
		return "", false
	}
	name := msg[len(head) : len(msg)-len(tail)]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return name, name != ""
}

// ran lets the sessions waiting for an event whose Step is step go on,
// once it ran on the target (failedHere: it failed there and not in the
// original), after noting its block (noteBlock).
func (s *session) ran(step syncdep.Step, failedHere bool) {
	s.noteBlock(step.Reach, failedHere)
	if c := step.Commit; c != nil {
		// The commit the event carries ran on the target (whatever its
		// outcome there): the sessions waiting for it go on now, not
		// after the accounting that follows, which they do not depend
		// on. On a chain of dependent sessions this is on every link.
		c.Done()
	}
	if m := step.Mark; m != nil {
		// The commits of other sessions that waited for it to run
		// (Answers mode) go on.
		m.Done()
	}
}

// noteBlock keeps, in Answers mode, the reach of a statement that ran
// in a block open on the target; failedHere: it failed there and not in
// the original, so the block rolls back the writes of the statements
// kept, which the original committed: they are tainted (syncdep.Taint),
// before the block's commit lets other sessions read them: a move (an
// item's decrement and a stock row's increment in one block) whose
// stock half fails only on the target loses the decrement, and later
// reads of that item would differ with nothing to explain them.
func (s *session) noteBlock(reach *syncdep.Reach, failedHere bool) {
	t := s.r.taint
	if t == nil {
		return
	}
	if failedHere {
		for _, x := range s.blockReach {
			t.Add(x)
		}
		s.blockReach = s.blockReach[:0]
	}
	if s.conn == nil || s.conn.IsClosed() || s.conn.TxStatus() != 'T' {
		// No block open, or one aborted: nothing more it commits.
		clear(s.blockReach)
		s.blockReach = s.blockReach[:0]
		return
	}
	if reach.Writes() {
		s.blockReach = append(s.blockReach, reach)
	}
}

// blame sets what caused a target error of ev (te.cause, te.baked), and keeps
// the cause of the error that aborted the session's block on the target
// for the 25P02s that follow it: those are not errors of the replay's
// order when that error was not. A foreign key violated by a row that
// refers to one the original's sequence numbered, by the original's
// number (carriedSeqID), which the target gave another, is a baked id
// too.
func (s *session) blame(te *targetError, failed bool, ev *event.Event) {
	if failed && !te.lost {
		te.cause, te.baked = te.code, bakedID(te.message) || bakedOIDParam(te.message, ev)
		if !te.baked && te.code == foreignKeySQLState {
			te.baked = s.carriedSeqID(ev) != ""
		}
		if te.code == abortedSQLState && s.blockCause != "" {
			te.cause, te.baked = s.blockCause, s.blockBaked
		}
	}
	switch {
	case s.conn == nil || s.conn.IsClosed() || s.conn.TxStatus() != 'E':
		s.blockCause, s.blockBaked = "", false
	case failed && s.blockCause == "":
		s.blockCause, s.blockBaked = te.cause, te.baked
	}
}

// abortedSQLState is in_failed_sql_transaction: a statement in a block
// that an earlier error aborted.
const abortedSQLState = "25P02"

// lagSource splits a statement's lag (issued late against due) between
// the target (the session's previous statement was still running on it
// at due) and the replayer (the session was free and still late).
func (s *session) lagSource(lag time.Duration, due time.Time) {
	target := min(lag, max(s.lastEnd.Sub(due), 0))
	s.r.c.lagTargetUS.Add(target.Microseconds())
	s.r.c.lagReplayerUS.Add((lag - target).Microseconds())
}

// dependencyLost skips a statement that waited for a commit a fault lost
// on the target (its session crashed or lost its connection before it),
// with the rest of its transaction block: run without what it depended
// on, it would fail or touch other rows, which is not the target's doing.
// What the block ran before is rolled back on the target.
func (s *session) dependencyLost(items []fingerprint.Item) {
	s.skip(items, SkipDependencyLost)
	if s.logTx {
		s.skipTx = SkipDependencyLost
	}
	if s.conn != nil && !s.conn.IsClosed() && s.conn.TxStatus() != 'I' {
		s.rollback()
	}
}

// lose counts a statement that met a broken connection (a restart, a
// crash, a terminated backend, a network cut) as lost, not as an error of
// the target, and sets the session to reconnect at its next transaction
// boundary: the rest of a transaction block it was in is skipped.
func (s *session) lose(items []fingerprint.Item) {
	s.lost = true
	if s.lostAt.IsZero() {
		s.lostAt = time.Now()
	}
	s.skip(items, SkipConnectionLost)
	if s.logTx {
		s.skipTx = SkipBrokenTransaction
	}
}

// trackTx follows the log's transaction block through a statement's
// items, whether they run or not. Of a string that failed in the
// original, only the items up to the failure ran there (see
// fingerprint.RanBeforeFailure): BEGIN; ...; ROLLBACK that failed left
// its session in the aborted block, whose ROLLBACK never ran.
//
// A statement's kind (its effect on the transaction block, read-only,
// destructive, COPY FROM STDIN, SQL-level PREPARE/EXECUTE/DEALLOCATE) is
// package fingerprint's Class, made once per statement text and kept with
// the statement's Item in the replay's Cache; the synchronization reads
// its relations from the same Class, so nothing is parsed twice.
func (s *session) trackTx(items []fingerprint.Item, text string, failed bool) {
	s.logTx = blockAfter(s.logTx, items, text, failed)
}

// FastPathPrefix begins the text of an execution read from a fast-path
// function call's log line (logread.FastPathPrefix, the same string):
// such an execution, its parameters missing, is skipped as
// SkipFastPath.
const FastPathPrefix = "/* fastpath function call */ "

// skipReason says why an execution cannot be replayed, or "".
func (s *session) skipReason(ev *event.Event, items []fingerprint.Item) results.SkipReason {
	if s.failReason != "" {
		return s.failReason
	}
	if w := ev.Wire(); w != nil && w.FunctionOID != 0 {
		switch {
		case w.FunctionOID >= event.FirstUserOID:
			// A function made after initdb: its OID on the target is
			// another, and the capture does not say its name.
			return SkipFastPath
		case s.r.opts.ReadOnly:
			// lowrite, lo_unlink, lo_creat write.
			return SkipNotReadOnly
		}
		return ""
	}
	if ev.Kind == event.Execute {
		switch ev.ParamState {
		case event.ParamsMissing:
			if strings.HasPrefix(ev.Query, FastPathPrefix) {
				return SkipFastPath
			}
			return SkipParamsMissing
		case event.ParamsTruncated:
			return SkipParamsTruncated
		}
	}
	var reason results.SkipReason
	var pending map[string]bool // PREPAREs earlier in this string: name -> read-only
	for _, it := range items {
		cl := it.Class(ev.Query)
		if cl.Destructive != "" {
			s.r.destructive.note(cl.Destructive)
		}
		if cl.CopyIn && ev.CopyIns() == nil {
			// A log has no COPY data; a capture has it.
			return SkipCopyData
		}
		if !s.r.opts.ReadOnly || reason != "" {
			continue
		}
		switch {
		case cl.Prepared == fingerprint.PreparedPrepare && cl.ReadOnly:
			if pending == nil {
				pending = map[string]bool{}
			}
			pending[cl.PreparedName] = true
		case cl.Prepared == fingerprint.PreparedExecute:
			// Read-only when the statement it runs is: the session
			// saw its PREPARE, or it is conservatively skipped.
			name := cl.PreparedName
			p, ok := s.sqlPrepared[name]
			if pending[name] {
				// Prepared earlier in the same string, which runs
				// whole or not at all.
				p, ok = sqlPrep{readOnly: true, ran: true}, true
			}
			switch {
			case !ok:
				reason = SkipExecuteUnknown
			case !p.readOnly:
				reason = SkipNotReadOnly
			case !p.ran:
				reason = SkipPrepareSkipped
			}
		case !cl.ReadOnly:
			reason = SkipNotReadOnly
		}
	}
	return reason
}

// sqlPrep is what a session knows of an SQL-level prepared statement
// (PREPARE name AS ...), to decide its EXECUTEs under --read-only.
type sqlPrep struct {
	readOnly bool // the prepared query cannot write
	ran      bool // the PREPARE was replayed, so the target has it
}

// trackPrepared follows the SQL-level PREPARE and DEALLOCATE statements
// of an execution, replayed (ran) or not, in order.
func (s *session) trackPrepared(items []fingerprint.Item, text string, ran bool) {
	for _, it := range items {
		cl := it.Class(text)
		switch {
		case cl.Prepared == fingerprint.PreparedPrepare:
			if s.sqlPrepared == nil {
				s.sqlPrepared = map[string]sqlPrep{}
			}
			s.sqlPrepared[cl.PreparedName] = sqlPrep{readOnly: cl.ReadOnly, ran: ran}
		case cl.Prepared != fingerprint.PreparedDeallocate:
		case !ran:
			// A DEALLOCATE that did not run leaves the target as it was.
		case cl.DeallocateAll:
			clear(s.sqlPrepared)
		default:
			delete(s.sqlPrepared, cl.PreparedName)
		}
	}
}

// forgetDeallocated follows what an execution dropped of the statements
// the replay prepared through the protocol (prepare): DEALLOCATE name or
// ALL, and DISCARD ALL (a pooler's, between its clients) drop those too,
// on the target as on the source. A name forgotten is prepared again at
// its next execution, where the target would otherwise be asked to run a
// statement it no longer has. After an error (DISCARD ALL refused inside
// a transaction block, a string stopped before or after its DEALLOCATE)
// the target may have them or not: they are marked unknown, which
// prepare closes first (closing a statement the target lacks is no
// error).
func (s *session) forgetDeallocated(items []fingerprint.Item, text string, failed bool) {
	if len(s.prepared) == 0 {
		return
	}
	for _, it := range items {
		cl := it.Class(text)
		if cl.Prepared != fingerprint.PreparedDeallocate {
			continue
		}
		for name := range s.prepared {
			switch {
			case !cl.DeallocateAll && name != cl.PreparedName:
			case failed:
				s.prepared[name] = unknownPrepared
			default:
				delete(s.prepared, name)
			}
		}
	}
}

// unknownPrepared is the query of a prepared statement the target may or
// may not have (see forgetDeallocated): no query is prepared as it.
const unknownPrepared = "\x00unknown"

// exec runs an execution issued at start and returns how long the
// target took, and the execution's number (see session.execSeq); it sets
// lastEnd. The messages are those of the pgconn calls the replay used
// before, sent and read at the message level (wire.go). While it runs,
// the session is in flight: the I/O watch looks for an answer by
// busyUntil, and the hard stop cancels it.
func (s *session) exec(ev *event.Event, start time.Time) (time.Duration, int64, error) {
	s.w.rows = s.w.rows[:0]
	s.w.digests.start(ev)
	seq := s.execSeq.Add(1)
	allow := s.r.opts.IOTimeout
	if ev.Duration > 0 {
		allow += 2 * time.Duration(ev.Duration) * time.Microsecond
	}
	s.busyUntil.Store(start.Add(allow).UnixNano())
	s.execAt.Store(max(ev.Time+max(ev.Duration, 0), 1))
	defer func() { s.busyUntil.Store(0); s.execAt.Store(0) }()
	// After busyUntil is set: a hard stop either sees the session in
	// flight and cancels it, or is seen here (see interruptInFlight).
	if s.r.hardDone.Load() {
		s.lastEnd = start
		return 0, seq, errStopping
	}
	w := ev.Wire()
	if (w == nil || !w.Fetch) && !s.w.piped {
		if err := s.syncBatch(); err != nil {
			return s.ended(start), seq, err
		}
	}
	// The original sent this execution in the pipeline's batch, before
	// its Sync: it goes on in the same implicit transaction.
	s.w.piped = false
	// A capture's COPY data, sent when the server asks for it; without
	// (a log), the COPY is failed.
	s.w.copyIns = ev.CopyIns()
	if w != nil && w.Cancel {
		// The original client cancelled it: so does the replay, as
		// late after its start.
		defer s.armCancel(start, w.CancelAfter)()
	}
	if ev.Kind == event.Statement {
		// The whole string as one simple query, as the original sent
		// it: several statements run in one implicit transaction. COPY
		// TO STDOUT output is read and dropped.
		err := s.execSimple(ev.Query)
		return s.ended(start), seq, err
	}

	params := s.bindParams(ev.Params)
	switch {
	case w == nil:
	case w.FunctionOID != 0:
		err := s.execFunctionCall(w, params)
		return s.ended(start), seq, err
	case w.Fetch:
		err := s.execFetch(ev.Portal(), w)
		return s.ended(start), seq, err
	}
	s.w.portal = ev.Portal()
	if ev.Name == "" {
		// Parameter types as the original's Parse named them (a
		// capture), or 0: the server infers them, as it did for the
		// original, whose types a log does not show.
		err := s.execParams(ev.Query, params, w)
		return s.ended(start), seq, err
	}
	if q, ok := s.prepared[ev.Name]; !ok || q != ev.Query {
		var oids []uint32
		if w != nil {
			oids = w.ParamOIDs
		}
		if err := s.prepare(s.r.hard, ev.Name, ev.Query, oids); err != nil {
			s.ended(start)
			return 0, seq, err
		}
		// The execution's time leaves the Parse out.
		start = time.Now()
	}
	err := s.execPrepared(ev.Name, params, w)
	return s.ended(start), seq, err
}

// ended notes that the session's statement ended now, and returns how
// long it took since start. The clock is read once per execution here
// and once where it is issued: a few reads less per statement count at
// speed 0.
func (s *session) ended(start time.Time) time.Duration {
	now := time.Now()
	s.lastEnd = now
	return now.Sub(start)
}

// bindParams returns the parameters as byte slices that view the event's
// strings, without copying them: the message-level path only encodes them
// into the connection's write buffer, and nothing writes to them. NULL is
// nil; ” is an empty slice that is not nil, so it is not sent as NULL.
// The slice of parameters is the session's, reused.
func (s *session) bindParams(ps []event.Param) [][]byte {
	params := s.params[:0]
	for _, p := range ps {
		switch {
		case p.Null:
			params = append(params, nil)
		case p.Value == "":
			params = append(params, emptyParam)
		default:
			params = append(params, unsafe.Slice(unsafe.StringData(p.Value), len(p.Value)))
		}
	}
	s.params = params
	if cap(params) > 1<<12 {
		s.params = nil // an odd execution with thousands of parameters is not kept
	}
	return params
}

// emptyParam is ”, not NULL.
var emptyParam = []byte{}

// prepare makes sure the named statement is prepared with query on this
// connection: once per session, and again when the log reuses the name for
// another query.
func (s *session) prepare(ctx context.Context, name, query string, oids []uint32) error {
	if q, ok := s.prepared[name]; ok {
		if q == query {
			return nil
		}
		var err error
		s.block(func() { err = resynced(ctx, s.conn, s.ec, s.conn.Deallocate(ctx, name)) })
		if err != nil {
			return err
		}
		delete(s.prepared, name)
	}
	var err error
	if s.w.unsynced {
		// In a batch the original had not ended (a pipeline's): the
		// Sync of pgconn's Prepare would end its implicit transaction.
		s.block(func() { err = s.parseInBatch(name, query, oids) })
	} else {
		s.block(func() {
			_, err = s.conn.Prepare(ctx, name, query, oids)
			err = resynced(ctx, s.conn, s.ec, err)
		})
	}
	if err != nil {
		return err
	}
	if s.prepared == nil {
		s.prepared = map[string]string{}
	}
	s.prepared[name] = query
	return nil
}

// record adds an execution to the counters and to the session's shard.
// The items share the latency as analyze shares a logged duration; the
// failure, if any, goes on the last one.
func (s *session) record(ev *event.Event, items []fingerprint.Item, issued time.Time, latency, lag time.Duration, sy synced, failed bool, te targetError) {
	r := s.r
	k := int64(len(items))
	latUS := querystats.NoDuration
	if latency >= 0 {
		latUS = latency.Microseconds()
	}
	at := issued.UnixMicro()
	seqs := s.returnedSequences(ev, items)
	if rec := s.rec; rec != nil && !r.opts.DryRun {
		rec.sent++
		for _, it := range items {
			rec.order = chain(rec.order, it.Fingerprint)
		}
	}
	sh := s.shard
	sh.mu.Lock()
	// The statements that completed gave their rows, in order; with the
	// replay not sending (a dry run) or a statement failing, the rest
	// did not.
	rows := s.w.rows
	if r.opts.DryRun {
		rows = nil
	}
	ans := ev.Answer()
	if r.opts.DryRun {
		ans = nil
	}
	var tally answerTally
	late := r.win.after(at)
	if late {
		r.win.afterStatements.Add(1)
	}
	for i, it := range items {
		st := sh.set.Slot(it.Fingerprint, it.Query)
		st.Record(it.Query, at, querystats.SplitDuration(latUS, int(k), i), failed && int64(i) == k-1)
		if late {
			sh.recordAfter(it.Fingerprint, it.Query, at, querystats.SplitDuration(latUS, int(k), i), failed && int64(i) == k-1)
		}
		if i < len(rows) {
			st.RecordRows(rows[i])
		}
		if ans != nil && ans.Suspended && !failed && k == 1 {
			// Compared once its last batch ran (fetch.go).
			s.startFetch(ev, it, ans, rows)
			continue
		}
		if ans != nil {
			d := answerDiffers(ev, ans, i, int(k), rows, failed, te.code)
			if d == querystats.AnswerSame && valuesDiffer(ans, s.w.digests.done, i, it, ev.Query) {
				d = querystats.AnswerValues
			}
			st.RecordAnswer(d)
			if d != querystats.AnswerSame {
				s.tallyAnswer(&tally, st, d, ev, ans, i, it, seqs, sy, te)
			}
		}
	}
	if taints(sy, tally.diverged) {
		r.taint.Add(sy.reach)
	}
	if len(tally.undecided) > 0 {
		p := pendingRace{race: sy.race, stats: tally.undecided, cause: tally.ifRaced, tables: sy.tables, reach: sy.reach, wide: tally.rows, row: tally.row,
			note: s.answerNote(ev, items, tally)}
		if tally.notData || !r.blamesData() {
			p.tables = nil // unexplained, unless it raced
		} else if len(p.tables) > 0 {
			p.key = readKey(ev, sy)
		}
		sh.addPendingRace(r, p)
	}
	if s.clk.paced() {
		sh.recordLag(lag.Microseconds())
	}
	if r.opts.Samples != nil && k == 1 && !failed && latency >= 0 && !r.opts.DryRun {
		r.opts.Samples.AddEvent(items[0].Fingerprint, ev.Database, ev.Query, ev.TextParams(), float64(latency.Microseconds())/1000)
	}
	if failed {
		sh.errors[te.code]++
		last := items[k-1]
		slot := sh.set.Slot(last.Fingerprint, last.Query)
		slot.RecordError(te.code)
		if !ev.Failed {
			slot.RecordOnlyOnTarget(te.cause)
			sh.onlyTarget[te.cause]++
			if te.baked {
				sh.bakedIDs++
			} else if s.fastPathSkipped {
				sh.afterFastPath++
			} else if s.resumed && sessionStateError(te.cause) {
				r.c.onlyTargetSessionState.Add(1)
			}
		}
		key := sampleKey{te.code, last.Fingerprint}
		if e := sh.samples[key]; e != nil {
			e.Count++
		} else {
			sh.samples[key] = &results.ErrorSample{SQLState: te.code, Fingerprint: last.Fingerprint, Query: last.Query, Message: redact.Message(te.message), Count: 1}
		}
	}
	sh.mu.Unlock()

	r.c.ran.Add(1)
	if ans != nil && !(ans.Suspended && !failed && k == 1) {
		r.c.answered.Add(1)
		if tally.differs > 0 {
			r.c.answerDiffers.Add(1)
			if len(tally.undecided) == 0 {
				r.countAnswer(s.answerNote(ev, items, tally), tally.explained, sy.tables, tally.dataKey(ev, sy))
			}
		}
	}
	r.countOutcome(ev, k, failed, te.code)
	if r.opts.ErrorWindow > 0 && !r.opts.DryRun {
		r.window.record(r, failed && !ev.Failed, te.code)
	}
	r.opts.Sink.Statement(Sample{Fingerprint: items[0].Fingerprint, SQLState: te.code, Latency: max(latency, 0), Lag: lag, SyncWait: sy.wait, SyncGiveUp: sy.giveUp})
}

// tallyAnswer adds to tally the differing answer d of item i (it, whose
// query is st) of execution ev: what explains it (differsBecause), which
// st is given but for the target's data.
func (s *session) tallyAnswer(tally *answerTally, st *querystats.Stats, d querystats.AnswerDiff, ev *event.Event, ans *event.Answer, i int, it fingerprint.Item, seqs seqColumns, sy synced, te targetError) {
	cause, what := s.differsBecause(d, ev, ans, i, it, seqs, sy, te)
	if cause != "" && cause != querystats.CauseTargetData {
		// The target's data differing is a finding, not an
		// explanation: the query stays to look at.
		st.ExplainAnswer(cause, what)
	}
	if tally.differs == 0 {
		tally.first = d
	}
	tally.add(st, cause, sy.race)
	tally.notData = tally.notData || cause == "" && !dataDiffers(d, sy, te)
	// Undecided: settleRaces taints it once decided.
	tally.diverged = tally.diverged || cause != querystats.CauseTargetData && (cause != "" || sy.race.Settled())
	tally.rows = tally.rows || d != querystats.AnswerValues
	if cause == "" {
		tally.row = s.differingRow(d, ans, i, sy)
	}
}

// answerNote is the execution ev (of items) whose answers tally counts,
// as the result keeps it (Options.KeepAnswers); nil when not asked.
func (s *session) answerNote(ev *event.Event, items []fingerprint.Item, tally answerTally) *results.DifferingAnswer {
	if !s.r.opts.KeepAnswers {
		return nil
	}
	return &results.DifferingAnswer{Session: ev.Session, TimeUS: ev.Time, DurationUS: ev.Duration, Fingerprint: items[0].Fingerprint, Diff: tally.first}
}

// differsBecause is what explains the differing answer d of item i (it)
// of execution ev, whose original answer is ans, and what names it; ""
// when nothing does yet. sy is the execution's sync (its Race and the
// tables it reads); te its error on the target: baked when it came from
// a server-assigned id of the original written into the statement (a
// large object's OID, a transaction id in the target's future, another
// session's temporary schema), which is then the error's cause, proven
// by its message, before any race. A race is taken once settled (a
// race relation-wide may still be found by row); otherwise ""
// (answerTally.add keeps it pending). With neither a race nor session
// state to explain it, a statement that reads tables says the target's
// data differs from the start (CauseTargetData).
func (s *session) differsBecause(d querystats.AnswerDiff, ev *event.Event, ans *event.Answer, i int, it fingerprint.Item, seqs seqColumns, sy synced, te targetError) (querystats.AnswerCause, string) {
	race, baked := sy.race, te.baked
	cause, what := answerCause(d, it, ev.Query, seqs)
	switch {
	case cause == querystats.CauseSequence:
		s.keepSeqID(ans, i, what)
	case cause == "" && (d == querystats.AnswerRows || d == querystats.AnswerValues):
		if col := s.carriedSeqID(ev); col != "" {
			cause, what = querystats.CauseSequence, col+" an earlier INSERT returned"
		}
	case cause == "" && baked && (d == querystats.AnswerErrorOnlyOnTarget || d == querystats.AnswerOtherSQLState):
		// A foreign key to a row the original's sequence numbered is
		// that sequence's (blame).
		if col := s.carriedSeqID(ev); col != "" {
			cause, what = querystats.CauseSequence, col+" an earlier INSERT returned"
		} else {
			cause, what = querystats.CauseServerState, "an id the original's server assigned, in the statement"
		}
	}
	if cause == "" && race.Settled() {
		cause, what = raceCause(race.Kind())
	}
	if cause == "" && (d == querystats.AnswerRows || d == querystats.AnswerValues) && it.Class(ev.Query).SkipsLocked {
		// Which rows it returns depends on the transactions open in
		// other sessions when it ran, not only on those that ended,
		// whose order alone the replay keeps: another worker's rows
		// locked then, or not yet (issue 77's queue workload).
		cause, what = querystats.CauseRacedRelation, "rows other sessions' open transactions held locked (SKIP LOCKED)"
	}
	if cause == "" && s.resumed && sessionStateDependent(it.Class(ev.Query), it.Query, sy.tables, sy.unknown, te.cause) {
		cause, what = querystats.CauseSessionState, "session state from before the recording"
	}
	if cause == "" && race.Settled() {
		// A row an earlier divergence of the replay wrote is the
		// replay's doing, never the target's data.
		cause, what = afterDivergence(s.r.taint.Affects(sy.reach, d != querystats.AnswerValues), taintedRead)
	}
	if cause == "" && race.Settled() {
		// Of a range whose values alone differ: the one row that
		// does, when it is tainted.
		cause, what = afterDivergence(s.r.taint.AffectsRow(sy.reach, s.differingRow(d, ans, i, sy)), taintedRow)
	}
	if cause == "" && race.Settled() && len(sy.tables) > 0 && s.r.blamesData() && dataDiffers(d, sy, te) {
		cause, what = querystats.CauseTargetData, strings.Join(sy.tables, ", ")
	}
	return cause, what
}

// afterDivergence is the answer's cause meeting the replay's taint as k
// gives (syncdep.Taint.Affects, or AffectsRow of the one row a read of
// ranges answered otherwise), and what names it, on row or on table as
// the taint was met (taintedRead, taintedRow); "" for none.
func afterDivergence(k syncdep.RaceKind, on [2]string) (querystats.AnswerCause, string) {
	switch k {
	case syncdep.RaceRow:
		return querystats.CauseAfterDivergence, "an earlier divergence of the replay on " + on[0]
	case syncdep.RaceRelation:
		return querystats.CauseAfterDivergenceRelation, "an earlier divergence of the replay on " + on[1] + " (relation-wide)"
	}
	return "", ""
}

// What a taint is met on, by row and by table: what a statement reads
// (syncdep.Taint.Affects), or the one row of a range whose values alone
// differ (AffectsRow).
var (
	taintedRead = [2]string{"a row it reads", "a table it reads"}
	taintedRow  = [2]string{"the one row whose values differ", "the table of the one row whose values differ"}
)

// differingRow is the integers of the one row in which statement i's
// rows differ from the original's (ans) when only their values differ
// (d), one row alone does, it is of a single-statement execution that
// reads ranges of keys (sy.reach), and the target's rows were kept
// (rowDigests.differingRow); nil otherwise. Asked of the taint, it
// tells a difference the replay's own divergence made from the target's
// data (syncdep.Taint.AffectsRow).
func (s *session) differingRow(d querystats.AnswerDiff, ans *event.Answer, i int, sy synced) []int64 {
	if d != querystats.AnswerValues || i != 0 || len(ans.Digests) != 1 || !sy.reach.Ranges() || s.r.taint == nil {
		return nil
	}
	return s.w.digests.differingRow(ans.Digests[0], sy.reach.InRanges)
}

// taints reports whether what an execution wrote is to be tainted
// (syncdep.Taint): it ran out of the original's order, because it raced
// in the original, its sync wait gave up or a commit it depended on was
// lost, or diverged: one of its answers differed for another reason
// than the target's data.
func taints(sy synced, diverged bool) bool {
	return diverged || sy.giveUp != "" || sy.lostDep || sy.race.Raced()
}

// blamesData reports whether the replay may say a differing answer comes
// from the target's data (querystats.CauseTargetData): only when it kept
// the original's order of every statement among the commits (the Answers
// mode) and follows every session's writes (not a shard without a
// coordination database, OthersUnseen). In the other modes a read runs
// before or after commits it did not see in the original (the Object and
// Load modes order it one way at most, Off not at all), so its answer
// differing says nothing of the data: it stays unexplained. Measured on
// an OLTP capture replayed onto an identical copy, Object mode would have
// blamed the data for 427-521 answers a replay (docs/sync.md).
func (r *Replayer) blamesData() bool {
	return r.opts.Sync == syncdep.Answers && !r.opts.OthersUnseen
}

// dataDiffers reports whether a differing answer d, which neither the
// statement's text, a race nor session state explains, of an execution
// that reads tables, says the target's data differs from the start: a
// row count or values, or an error only on the target of class 42 (a
// table or a column missing); not an error another order could cause (a
// duplicate key, a foreign key, a transaction aborted by an earlier
// error), nor anything after the replay lost the original's order for it
// (a sync wait given up, a commit it waited for lost).
func dataDiffers(d querystats.AnswerDiff, sy synced, te targetError) bool {
	if sy.giveUp != "" || sy.lostDep {
		return false
	}
	switch d {
	case querystats.AnswerRows, querystats.AnswerValues:
		return true
	case querystats.AnswerErrorOnlyOnTarget:
		return strings.HasPrefix(te.code, "42")
	}
	return false
}

// raceCause is the answer's cause a race of kind k gives, and what
// names it; "" for none.
func raceCause(k syncdep.RaceKind) (querystats.AnswerCause, string) {
	switch k {
	case syncdep.RaceRow:
		return querystats.CauseRaced, "a concurrent transaction that wrote a row it reads"
	case syncdep.RaceRelation:
		return querystats.CauseRacedRelation, "a concurrent transaction that wrote a table it reads (relation-wide)"
	}
	return "", ""
}

// answerTally sums the causes of an execution's differing answers:
// explained is their cause when each has one (the first), "" when one
// has none; ifRaced the same were the statement found to race later
// (undecided: the queries whose differing answers only that would
// explain, see pendingRace); notData: one unexplained is not the
// target's data (dataDiffers).
type answerTally struct {
	differs            int64
	explained, ifRaced querystats.AnswerCause
	undecided          []*querystats.Stats
	// notData: a differing answer nothing explains is not one the
	// target's data explains (dataDiffers).
	notData bool
	// diverged: a differing answer was decided, and not by the
	// target's data (taints); rows: one differs in more than values
	// (a read of many rows meets the taint then: syncdep.Taint.Affects).
	diverged, rows bool
	// first is how the first differing answer differed; row the
	// integers of the one row it differs in (session.differingRow).
	first querystats.AnswerDiff
	row   []int64
}

// dataKey names the rows execution ev (sy its sync) reads when the
// target's data explains its differing answers (readKey); "" otherwise.
func (a *answerTally) dataKey(ev *event.Event, sy synced) string {
	if a.explained != querystats.CauseTargetData {
		return ""
	}
	return readKey(ev, sy)
}

// add counts a differing answer of st, explained by cause ("": nothing
// yet); race is the execution's.
func (a *answerTally) add(st *querystats.Stats, cause querystats.AnswerCause, race *syncdep.Race) {
	if a.differs == 0 || a.explained != "" {
		a.explained = cause
	}
	later := cause
	if cause == "" && !race.Settled() {
		// A transaction the tracker reads after the statement may
		// still find it raced: decided once settled.
		a.undecided = append(a.undecided, st)
		later = querystats.CauseRaced
	}
	if a.differs == 0 || a.ifRaced != "" {
		a.ifRaced = later
	}
	a.differs++
}

// countOutcome counts an execution of k statements that failed on the
// target (with SQLSTATE code) or not, against whether the original
// failed: the statements executed, the errors, and which side failed.
func (r *Replayer) countOutcome(ev *event.Event, k int64, failed bool, code string) {
	if failed {
		r.c.failed.Add(1)
		r.c.executed.Add(k - 1)
		r.c.errors.Add(1)
	} else {
		r.c.executed.Add(k)
	}
	switch {
	case ev.Failed && failed:
		r.c.origFailed.Add(1)
		r.c.bothFailed.Add(1)
	case ev.Failed:
		r.c.origFailed.Add(1)
		r.c.onlyOrig.Add(1)
		if dateTimeState(ev.SQLState) {
			r.startup.dateTime.Add(1)
		}
	case failed:
		r.c.onlyTarget.Add(1)
		if dateTimeState(code) {
			r.startup.dateTime.Add(1)
		}
	}
}

// answerDiffers compares item i (of k) of an execution with what the
// original server answered (a capture): the same outcome, and, when both
// succeeded, the same row count. rows are the target's counts of the
// statements that completed, failed and code its outcome.
func answerDiffers(ev *event.Event, ans *event.Answer, i, k int, rows []int64, failed bool, code string) querystats.AnswerDiff {
	last := i == k-1
	switch {
	case last && failed && !ev.Failed:
		return querystats.AnswerErrorOnlyOnTarget
	case last && ev.Failed && !failed:
		return querystats.AnswerErrorOnlyInOriginal
	case last && failed && ev.SQLState != "" && code != ev.SQLState:
		return querystats.AnswerOtherSQLState
	}
	if i < len(rows) && i < len(ans.Rows) && rows[i] != ans.Rows[i] {
		return querystats.AnswerRows
	}
	return querystats.AnswerSame
}

// skip counts an execution that is not run.
func (s *session) skip(items []fingerprint.Item, reason results.SkipReason) {
	i := skipIndex(reason)
	s.faultSkip = s.faultSkip || faultSkip[i]
	s.fastPathSkipped = s.fastPathSkipped || reason == SkipFastPath
	s.r.c.skipped[i].Add(int64(len(items)))
	s.r.opts.Sink.Statement(Sample{Fingerprint: items[0].Fingerprint, Skipped: reason})
}

// skipEvent counts an execution that is not run, before it was looked at.
func (s *session) skipEvent(ev *event.Event, reason results.SkipReason) {
	items := s.r.cache.Get(ev.Query)
	if len(items) == 0 {
		s.r.c.empty.Add(1)
		return
	}
	s.r.c.total.Add(int64(len(items)))
	s.skip(items, reason)
}
