package midstream

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// Default bounds of the state kept per session so that a recording can
// take it up from the middle (the proxy's Config.ResumeSessions).
const (
	DefaultItems = 1024
	DefaultBytes = 256 << 10
)

// stateItemOverhead is what one kept item costs besides its bytes: the
// item itself in its slice, its key's header, and its map entry.
const stateItemOverhead = 96

// stateItem is one piece of a session's state: a setting (SQL), a
// SQL-level prepared statement (SQL), or a protocol-level one (its
// Parse message, verbatim).
type stateItem struct {
	key   string
	sql   string
	parse []byte
}

func (it *stateItem) size() int {
	return stateItemOverhead + len(it.key) + len(it.sql) + len(it.parse)
}

// ackKind is the server's acknowledgement a request of the extended
// protocol waits for.
type ackKind uint8

const (
	ackParse ackKind = iota + 1 // ParseComplete
	ackClose                    // CloseComplete
)

// pendingAck is a Parse or Close waiting for the server's answer: the
// statement exists (or is gone) only once it came.
type pendingAck struct {
	kind ackKind
	// key is the statement's key, "" for the unnamed statement or a
	// portal, which the proxy does not keep.
	key   string
	parse []byte
	// batch is the request it belongs to: how many Query, Sync and
	// FunctionCall the client sent before it.
	batch uint64
}

// pendingCmd is a session-state statement waiting for its
// CommandComplete, in its request (see pendingAck.batch).
type pendingCmd struct {
	stateCmd
	batch uint64
}

// State is what the proxy keeps of one session so that a recording
// started while the session is open can take it up from the middle:
// its settings, its prepared statements, whether it is idle. Both of
// the proxy's pumps update it (Frontend, Backend) holding its lock; an
// Attach reads it.
//
// What it cannot know (temporary tables, cursors WITH HOLD, advisory
// locks, settings made by functions) a replay names as "session state
// from before the recording" where it explains a failure.
type State struct {
	sync.Mutex

	// items is the committed state, in the order it was made; index
	// finds an item by key.
	items []stateItem
	index map[string]int
	bytes int
	// txn are the transactional changes (SET, RESET) made since the
	// last ReadyForQuery outside a transaction block, applied when it
	// commits.
	txn []stateCmd
	// unrecordable says why the session cannot be taken up from the
	// middle (its state outgrew the bounds, or is unknown); once set
	// the state is dropped and no longer kept.
	unrecordable string
	maxItems     int
	maxBytes     int

	// acks are the Parses and Closes waiting for the server's answer;
	// cmds the statements waiting for their CommandComplete, by class.
	acks []pendingAck
	cmds [numTagClasses][]pendingCmd
	// names are the prepared statements and portals of the extended
	// protocol whose query changes the state, with its command.
	names wire.Names[stateCmd, stateCmd]

	// status is the last ReadyForQuery's; sent counts the requests
	// that end with a ReadyForQuery (Query, Sync, FunctionCall) the
	// client sent, done those the server answered: the request
	// answered now is number done, and a client may pipeline more.
	// unsynced says the client sent extended-protocol messages since
	// its last Sync (or Query), the run; kept says one of them made or
	// used what a later one may use and a recording's Resume does not
	// carry: a portal (Bind, Execute), the unnamed statement; owed are
	// the run's Parses, Describes and Closes the server has not
	// answered yet (its answers are counted once every request before
	// the run is answered). errored and rolledBack: an ErrorResponse, a
	// ROLLBACK tag since the last ReadyForQuery.
	status              byte
	sent, done          uint64
	unsynced, kept      bool
	owed                uint32
	errored, rolledBack bool

	// skipped are the messages the session sent since a recording
	// began waiting for its next idle point to take it up (Await), and
	// joinWhy why it was not idle then.
	skipped int64
	joinWhy capture.ResumeSkip
}

// New is the state of a session that starts now, bounded to maxItems
// settings and prepared statements, and maxBytes bytes of them.
func New(maxItems, maxBytes int) *State {
	return &State{maxItems: maxItems, maxBytes: maxBytes}
}

// Idle says whether the session is between requests, outside a
// transaction block: what a recording takes up is then whole. So it is
// too after extended-protocol messages not yet followed by a Sync when
// the server answered them all, without an error, and they made
// nothing but prepared statements, which the state keeps: asyncpg
// prepares a statement with Parse, Describe and Flush, and sends its
// Sync only after the Bind and Execute of its first use (issue 77 item
// 3). The lock is held.
func (st *State) Idle() bool {
	return st.status == wire.TxIdle && st.sent == st.done &&
		(!st.unsynced || st.owed == 0 && !st.kept && !st.errored)
}

// synced starts a new run of extended-protocol messages: a Sync or a
// Query ends the server's implicit transaction, its portals and, for a
// Query, its unnamed statement.
func (st *State) synced() {
	st.sent++
	st.unsynced, st.kept, st.owed = false, false, 0
}

// extended notes an extended-protocol message of the run: one that
// makes or uses what a later message of the run may use (keeps), or one
// whose answer the state counts.
func (st *State) extended(keeps bool) {
	st.unsynced = true
	if keeps {
		st.kept = true
	} else {
		st.owed++
	}
}

// Unrecordable says why a recording cannot take the session up from
// the middle ("" when it can): its state outgrew the bounds, or is
// unknown. The lock is held.
func (st *State) Unrecordable() string { return st.unrecordable }

// Await starts the count of what a recording that takes the session up
// at its next idle point misses: the messages it sends until then
// (Skip), and why it was not idle now (capture.ResumeSkip), which its
// Resume carries. The lock is held.
func (st *State) Await() {
	st.skipped, st.joinWhy = 0, ""
	switch {
	case st.Idle():
	case st.status == wire.TxInTx || st.status == wire.TxFailed:
		st.joinWhy = capture.ResumeInTransaction
	default:
		st.joinWhy = capture.ResumeInFlight
	}
}

// Skip counts a message the session sent, relayed unrecorded, while a
// recording waits for its idle point. The lock is held.
func (st *State) Skip() { st.skipped++ }

// Frontend notes a message the client sends, before it is forwarded.
// The lock is held.
func (st *State) Frontend(msg []byte) {
	typ, body := msg[0], msg[5:]
	switch typ {
	case wire.Query:
		if st.unrecordable == "" {
			for _, c := range stateCmds(nil, wire.View(body)) {
				st.cmds[c.class] = append(st.cmds[c.class], pendingCmd{c, st.sent})
			}
		}
		st.synced()
	case wire.Sync:
		st.synced()
	case wire.FunctionCall:
		st.sent++
	case wire.Parse:
		name, query := wire.ParseHead(body)
		// The unnamed statement is not kept (see stmtKey).
		st.extended(len(name) == 0)
		a := pendingAck{kind: ackParse, batch: st.sent}
		if len(name) > 0 && st.unrecordable == "" {
			a.key, a.parse = stmtKey(name), bytes.Clone(msg)
		}
		st.acks = append(st.acks, a)
		c, ok := classify(query)
		st.names.Parse(name, c, ok && st.unrecordable == "")
	case wire.Bind:
		st.extended(true)
		portal, stmt := wire.BindHead(body)
		c, ok := st.names.Statement(stmt)
		st.names.Bind(portal, c, ok)
	case wire.Execute:
		st.extended(true)
		if c, ok := st.names.Portal(wire.ExecuteHead(body)); ok {
			st.cmds[c.class] = append(st.cmds[c.class], pendingCmd{c, st.sent})
		}
	case wire.Close:
		st.extended(false)
		a := pendingAck{kind: ackClose, batch: st.sent}
		if kind, name, ok := wire.CloseHead(body); ok {
			if kind == wire.CloseStatement && name != "" {
				a.key = stmtKey(name)
			}
			st.names.Close(kind, name)
		}
		st.acks = append(st.acks, a)
	case wire.Describe:
		st.extended(false)
	}
	// A Flush ('H') asks the server for what it owes and leaves nothing
	// to answer: after a Sync (libpq's pipeline mode sends one so), the
	// session is idle still, and a recording starting then takes it up
	// at once (issue 59 item 5).
}

// Backend notes an answer of the server, before it is forwarded. The
// lock is held.
func (st *State) Backend(typ byte, body []byte) {
	if st.owed > 0 && st.sent == st.done {
		// Every request before the run is answered: this answers one
		// of its Parses, Closes, Describes (a RowDescription or NoData
		// is a Describe's last answer), or another of its messages.
		// The proxy's pump hands a RowDescription too large for its
		// buffer to no one: the run is then owed it until its Sync,
		// and the session is not idle before.
		switch typ {
		case wire.ParseComplete, wire.CloseComplete, wire.RowDescription, wire.NoData:
			st.owed--
		}
	}
	switch typ {
	case wire.ParseComplete, wire.CloseComplete:
		st.settle(st.done)
		if len(st.acks) == 0 {
			return
		}
		a := st.acks[0]
		st.acks = st.acks[1:]
		switch {
		case a.key == "" || st.unrecordable != "":
		case a.kind == ackParse:
			st.put(stateItem{key: a.key, parse: a.parse})
		default:
			st.remove(a.key)
		}
	case wire.CommandComplete:
		tag := wire.View(body)
		if tag == "ROLLBACK" {
			st.rolledBack = true
		}
		class := classOfTag(tag)
		if class == tagNone {
			return
		}
		st.settle(st.done)
		if len(st.cmds[class]) == 0 {
			return
		}
		c := st.cmds[class][0]
		st.cmds[class] = st.cmds[class][1:]
		st.apply(c.stateCmd)
	case wire.ErrorResponse:
		st.errored = true
		// What the server skips up to the end of the request never
		// completes.
		st.settle(st.done + 1)
	case wire.ReadyForQuery:
		if len(body) > 0 {
			st.readyForQuery(body[0])
		}
	}
}

// readyForQuery ends a request: the changes of a transaction that
// committed are kept, those of one that failed or rolled back dropped.
func (st *State) readyForQuery(status byte) {
	st.status = status
	if st.done < st.sent {
		// Not the ReadyForQuery that ends the login.
		st.settle(st.done + 1)
		st.done++
	}
	switch status {
	case wire.TxIdle:
		if !st.errored && !st.rolledBack {
			for _, c := range st.txn {
				st.commit(c)
			}
		}
		st.txn = st.txn[:0]
	default:
		if st.rolledBack && len(st.txn) > 0 {
			// A ROLLBACK TO SAVEPOINT inside the block may have undone
			// some of the changes: which, the proxy cannot tell.
			st.drop("its settings changed in a transaction rolled back to a savepoint")
		}
	}
	st.errored, st.rolledBack = false, false
}

// settle forgets the Parses, Closes and statements of the requests
// before batch, which will never be answered: the server skipped them
// after an error, or answered them already.
func (st *State) settle(batch uint64) {
	i := 0
	for i < len(st.acks) && st.acks[i].batch < batch {
		i++
	}
	st.acks = st.acks[i:]
	for c := range st.cmds {
		q := st.cmds[c]
		i := 0
		for i < len(q) && q[i].batch < batch {
			i++
		}
		st.cmds[c] = q[i:]
	}
}

// apply makes a completed statement's change: at once, or at the
// commit of its transaction for a setting.
func (st *State) apply(c stateCmd) {
	if st.unrecordable != "" {
		return
	}
	switch c.op {
	case opSet, opReset, opResetAll:
		st.txn = append(st.txn, c)
	default:
		st.commit(c)
	}
}

func (st *State) commit(c stateCmd) {
	switch c.op {
	case opSet, opPrepare:
		st.put(stateItem{key: c.key, sql: c.sql})
	case opReset, opDeallocate:
		st.remove(c.key)
	case opResetAll:
		st.removeIf(func(key string) bool { return strings.HasPrefix(key, "guc:") })
	case opDeallocateAll:
		st.removeIf(func(key string) bool { return strings.HasPrefix(key, "stmt:") })
	case opDiscardAll:
		st.removeIf(func(string) bool { return true })
	}
}

// put keeps it, in place of an item of the same key, at the end: the
// order the state was made in is the order a replay makes it.
func (st *State) put(it stateItem) {
	if st.unrecordable != "" {
		return
	}
	st.remove(it.key)
	if st.index == nil {
		st.index = map[string]int{}
	}
	st.index[it.key] = len(st.items)
	st.items = append(st.items, it)
	st.bytes += it.size()
	switch {
	case len(st.items) > st.maxItems:
		st.drop(fmt.Sprintf("it holds more than %d prepared statements and settings", st.maxItems))
	case st.bytes > st.maxBytes:
		st.drop(fmt.Sprintf("its prepared statements and settings take more than %d bytes", st.maxBytes))
	}
}

func (st *State) remove(key string) {
	i, ok := st.index[key]
	if !ok {
		return
	}
	st.bytes -= st.items[i].size()
	st.items = append(st.items[:i], st.items[i+1:]...)
	delete(st.index, key)
	for j := i; j < len(st.items); j++ {
		st.index[st.items[j].key] = j
	}
}

func (st *State) removeIf(f func(key string) bool) {
	kept := st.items[:0]
	for _, it := range st.items {
		if f(it.key) {
			st.bytes -= it.size()
			delete(st.index, it.key)
			continue
		}
		st.index[it.key] = len(kept)
		kept = append(kept, it)
	}
	clear(st.items[len(kept):])
	st.items = kept
}

// drop marks the session as one a recording cannot take up from the
// middle, for why, and frees what it kept.
func (st *State) drop(why string) {
	if st.unrecordable != "" {
		return
	}
	st.unrecordable = why
	st.items, st.index, st.bytes, st.txn = nil, nil, 0, nil
	st.names.Reset()
	for c := range st.cmds {
		st.cmds[c] = nil
	}
}

// Bytes is how much memory the kept state accounts for.
func (st *State) Bytes() int { return st.bytes }

// Resume is the state a recording that takes the session up now
// starts it with, and what it missed since Await; the count of what
// it misses starts over. The lock is held.
func (st *State) Resume() *capture.Resume {
	rs := &capture.Resume{Skipped: st.skipped, SkipReason: st.joinWhy}
	st.skipped, st.joinWhy = 0, ""
	if len(st.items) > 0 {
		rs.State = make([]capture.StateItem, len(st.items))
		for i, it := range st.items {
			if it.parse != nil {
				rs.State[i] = capture.StateItem{Parse: it.parse}
			} else {
				rs.State[i] = capture.StateItem{SQL: it.sql}
			}
		}
	}
	if rs.Skipped == 0 {
		rs.SkipReason = ""
	}
	return rs
}
