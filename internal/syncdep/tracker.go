package syncdep

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// Mode is how a replay synchronizes its sessions. The zero value is
// Object, the default.
type Mode uint8

const (
	// Object: a statement waits for the commits that ended before it
	// started in the log and wrote a relation it reads or writes.
	Object Mode = iota
	// Commit: a statement waits for every commit that ended before it
	// started in the log.
	Commit
	// Off: sessions are not synchronized.
	Off
	// Load: the load the application gave. Only what would otherwise
	// fail or be lost waits, as in Object mode: a statement that writes
	// or locks rows (or whose effect is unknown), and a read of large
	// objects (lo_open of one not yet made fails). A statement that only
	// reads waits for nothing but the commits that changed the schema
	// (DDL, DO, CALL...: a table or a role it needs may not exist yet);
	// the rest of the commit order is left to the server, as the
	// application left it. Writes wait less than in Object mode: fresh
	// inserts (Resolver.fresh) not for each other, a statement by key
	// not for them when its key is older (RowKey.Seq), nor for another
	// session's autocommit update of its row (Tracker.rowOrders).
	Load
	// Answers: the order of a replay that checks answers. As in
	// Object mode, a statement waits for the commits that ended before
	// it was sent in the original and wrote what it reads or writes;
	// and a commit waits for every statement of another session that
	// ended before the commit was sent and read or wrote what it wrote
	// (answers.go). Only a statement whose interval overlapped such a
	// commit can race.
	Answers
)

var modeNames = [...]string{"object", "commit", "off", "load", "answers"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", m)
}

// ParseMode reads "answers", "object", "commit", "off" or "load".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if strings.EqualFold(s, n) {
			return Mode(i), nil
		}
	}
	return Off, fmt.Errorf("unknown synchronization mode %q: use answers, load, object, commit or off", s)
}

// Limits of the Tracker's memory.
const (
	// maxEffects bounds each database's cache of expanded statements,
	// by normalized text; beyond it the cache starts over.
	maxEffects = 100_000
	// maxRelations bounds the relation ids; names beyond it share one id
	// (more waiting, never less).
	maxRelations = 1 << 20
	// maxCuts bounds the index from log time to commit order.
	maxCuts = 1 << 16
)

// Exec is one execution event of the log, as the Tracker needs it.
type Exec struct {
	// Start is when it started, End the time of its log line (when it
	// ended, for a statement logged with its duration), in µs since the
	// epoch.
	Start, End int64
	// Items are its statements (fingerprint.Cache); Text the logged
	// text, read when a normalized statement does not parse.
	Items []fingerprint.Item
	Text  string
	// Failed: it failed in the original.
	Failed bool
	// Params are its bind parameters as logged, and ParamState how
	// complete they are: the values of the keys of the rows it reaches
	// (see RowKey).
	Params     []event.Param
	ParamState event.ParamState
	// Answer is what the original server answered, where the input
	// recorded it (a capture) and it was one row of one boolean:
	// whether a try of an advisory lock got it (see advisory.go).
	Answer AnswerBool
}

// Step is what the replay must do around one execution event: wait for
// Wait before issuing it, and call Commit.Done (when not nil) once it has
// run.
type Step struct {
	Wait Wait
	// Commit is the transaction the event commits; or, for an event
	// inside a transaction block that writes or locks rows by key, that
	// event (Position 0, not on the Board): the next write or lock of
	// those rows by another session waits until it ran on the target
	// (see Wait).
	Commit *Txn
	// Barrier: the event must also wait for every event of other
	// sessions that ended before it in the log, committed or not (see
	// Effect.Barrier). The Tracker does not follow events that commit
	// nothing, so the replay does that wait.
	Barrier bool
	// Rows says whether the event was ordered by the row its key names.
	Rows RowOrder
	// Tables are the relations the event reads or writes by name
	// (schema.name, sorted; nil when it names none): where a differing
	// answer that nothing else explains says the target's data differs
	// from the start. Shared: not to be modified. One the target's
	// catalog does not have is named with NotInCatalog after it, and
	// Unknown set: a temporary table, or one missing on the target.
	Tables  []string
	Unknown bool
	// Race says whether, in the original, the event ran while a
	// transaction of another session that wrote a relation it touches
	// ended (committed or rolled back), or followed such an event in its
	// block: its answer may have depended on which came first, an order
	// the replay may not reproduce (see endRing). Nil when it touches no
	// relation; read with Raced once the event ran, since a commit
	// logged just after it may set it (RaceSlack).
	Race *Race
	// Mark, in Answers mode, is the event itself when it touches a
	// relation (a Txn not on the Board, Position 0): the commits of
	// other sessions sent after it ended in the original wait until it
	// ran on the target (answers.go). The replay marks it Done once the
	// event ran or was skipped, never Lost: a commit that waits for a
	// read does not depend on the read's outcome.
	Mark *Txn
	// Reach, in Answers mode, is what the event reads and writes by
	// row, range and relation, for the replay's Taint (taint.go); nil
	// when it touches no relation.
	Reach *Reach
}

// Raced reports whether the event raced (see Step.Race).
func (st Step) Raced() bool { return st.Race.Raced() }

// RowOrder says whether an event was ordered by the rows it reaches (see
// RowKey).
type RowOrder uint8

const (
	// RowsNone: it reaches no row by key; ordered by relation.
	RowsNone RowOrder = iota
	// RowsByKey: ordered by the row its primary key names.
	RowsByKey
	// RowsKeyNotLogged: of a form that reaches a row by key, but the
	// log did not give the key's value (parameters missing or cut, a
	// NULL, a constant keyHash does not read): ordered by relation.
	RowsKeyNotLogged
)

// Wait is what a statement waits for: the transactions of the log, up to
// a place in its commit order (cut), that wrote what it touches, and up
// to a later place (lockCut) those that wrote what it may have waited to
// lock. The zero Wait waits for nothing.
//
// A write or lock of a row by key waits instead for the last write or
// lock by key of that row (its bucket) by another session before it in
// the log (row) to have run on the target: the server's row lock then
// orders the two as in the original, without a client round trip to
// wait for that transaction's commit. It waits by its cut only for the
// commits that inserted a row of its bucket: a row inserted by a
// transaction not yet committed is not visible, and is no lock to wait
// for. (Waiting for the commits logged while it ran, the lock cut, would
// be wrong twice here: PostgreSQL releases row locks before it logs the
// COMMIT, so the lock's holder may be logged after the waiter; and an
// insert committed while the statement ran was not visible to it.)
type Wait struct {
	cut, lockCut uint64
	eff          *effect
	// all: every transaction up to cut (commit mode). With neither all
	// nor eff, only those that may have written anything (a session's
	// connection waits so for DDL: CREATE ROLE, CREATE DATABASE).
	all bool
	// row and rows: the writes and locks by key it waits for (see
	// above); rows only when it reaches more than one row by key.
	row  *Txn
	rows []*Txn
	// schema: only the transactions up to cut that changed the schema
	// (a read in Load mode: see Txn.schema).
	schema bool
}

// None reports whether w waits for nothing.
func (w Wait) None() bool { return w.cut == 0 && w.lockCut == 0 && w.row == nil }

// addRow makes w wait for t (see Wait.row).
func (w *Wait) addRow(t *Txn) {
	switch {
	case w.row == nil:
		w.row = t
	case w.row != t && !slices.Contains(w.rows, t):
		w.rows = append(w.rows, t)
	}
}

// effect is an Effect with relation ids, shared by every event of one
// normalized text in one database; it is never modified once made.
type effect struct {
	control  Control
	chain    bool
	touch    []uint32
	write    []uint32
	lock     []uint32
	readAll  bool
	writeAll bool
	lockAll  bool
	barrier  bool
	// query: a SELECT, VALUES, TABLE or WITH, which reads what other
	// sessions made even when it names no relation (see Session.Event);
	// not SET, SHOW, LISTEN, FETCH, a plain EXPLAIN...
	query bool
	// rows: the row of one relation it reaches by key, whose ids each
	// event decides from its parameters (see Tracker.rowEffect).
	rows *rowRef
	// rng: the range of its relation's keys it reads, whose bounds
	// each event gives (see KeyRange and Tracker.rangeOf).
	rng *rangeRef
	// read: it only reads, and what it reads is there or not without an
	// error (not large objects): in Load mode it waits only for the
	// commits that changed the schema.
	read bool
	// tables are the relations it reads or writes by name (schema.name,
	// sorted), for Step.Tables; unknown: it names one the catalog does
	// not have (Step.Unknown).
	tables  []string
	unknown bool
	// adv are its calls of advisory-lock functions, note its LISTEN,
	// UNLISTEN or NOTIFY.
	adv  []fingerprint.Advisory
	note *fingerprint.Notification
}

// rowRef is a RowKey with relation ids: rel is the relation's id (that
// of whole-relation writes), any the id that every write by key of the
// relation also writes, for the statements that reach it whole.
type rowRef struct {
	rel, any            uint32
	params              []int32
	kinds               []keyKind
	write, lock, insert bool
	// shared: its lock is a shared one (RowKey.Shared).
	shared bool
	// fresh is the id that the relation's fresh inserts write (0 when
	// it takes none: see RowKey.Fresh); seq and seqLast tell which keys
	// no fresh insert made (RowKey.Seq).
	fresh   uint32
	seq     bool
	seqLast int64
}

// isQuery reports whether a normalized statement is a query: SELECT,
// VALUES, TABLE or WITH, in parentheses or not.
func isQuery(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n(")
	n := 0
	for n < len(q) && n < 7 && (q[n]|0x20 >= 'a' && q[n]|0x20 <= 'z') {
		n++
	}
	switch strings.ToLower(q[:n]) {
	case "select", "values", "table", "with":
		return true
	}
	return false
}

// noEffect is the effect of a statement that names no relation and
// calls no function that reads or writes one: waited for by nothing, it
// still waits for the commits that may have written anything (see
// Session.Event).
var noEffect = &effect{}

func (e *effect) empty() bool {
	return len(e.touch) == 0 && len(e.write) == 0 && e.rows == nil && !e.readAll && !e.writeAll
}

// Tracker follows the log's sessions and transactions and decides each
// statement's Wait. All its methods (and its Sessions') are for one
// goroutine, the replay's reader; its Board is for any.
type Tracker struct {
	mode     Mode
	board    *Board
	dbs      map[string]*database
	ids      map[string]uint32 // database NUL relation key -> id
	seq      uint64            // commits so far
	cuts     cutIndex
	res      int64 // the log's time resolution, µs
	prepared map[string]txBuild
	// preparing is, by global transaction id, the PREPARE TRANSACTION
	// event that a COMMIT PREPARED or ROLLBACK PREPARED (of any
	// session) waits to have run on the target: run first, it fails
	// (42704), where the original's did not.
	preparing map[string]*Txn
	sessions  int
	// buckets maps a relation's any id and a key's bucket to the id of
	// the bucket's rows (sharing maxRelations with ids).
	buckets map[uint64]uint32
	// rowEffects caches rowEffect's answers: effects are never modified,
	// so the executions of one statement on one bucket share one.
	rowEffects map[rowEffectKey]*effect
	// last is, by bucket id, the last write or lock by key of a row of
	// the bucket read so far, and its session (see Wait.row); lasts
	// counts the entries made, to sweep out those that ran now and then.
	last  map[uint32]rowLast
	lasts int
	// ends are the last write transactions that ended, and lates the
	// last statements read, whose Race a commit logged just after them
	// may set (see Step.Raced).
	ends     endRing
	lates    []late
	nextLate int
	// adv are the advisory locks followed, by key (see advisory.go);
	// advKept how many were kept at the last sweep, advUnread the calls
	// whose key was not read.
	adv       map[string]*advLock
	advKept   int
	advUnread int64
	// notified are, by channel, the commits that notified it and may
	// not have run yet (see notify.go).
	notified map[string][]notified
	// live are the sessions whose last statements a commit may wait
	// for, in Answers mode (see answerWaits); local says which owners'
	// sessions the replay runs, nil for all (see SetLocal).
	live  []*Session
	local func(owner any) bool
	// remoteMarks: the other processes' sessions get marks too (see
	// FollowRemoteMarks).
	remoteMarks bool
}

// rowLast is an entry of Tracker.last; makes: the event may have
// inserted the row; held: it ran inside a transaction block that went on
// after it, holding the row's lock.
type rowLast struct {
	tx          *Txn
	s           *Session
	makes, held bool
}

// rowOrders reports whether a write or lock by key, r, waits for the
// last write or lock l of its row by another session (see Wait.row). In
// Load mode only where running first would fail or lose a write the
// original did not have: after the row's insert (run first, an update
// finds nothing), as an insert (a key's deleter before its re-inserter:
// 23505 otherwise), or after a write or lock held in a transaction block
// (run first, it could take the row's lock while that block holds
// another this one then waits for: a deadlock the original did not
// have). An update, delete or lock of an existing row after another
// session's autocommit update or delete of it does not wait: the server's
// row lock orders the two as it did for the application, whose sessions
// waited for no other.
func (t *Tracker) rowOrders(l rowLast, r *rowRef) bool {
	return t.mode != Load || l.makes || l.held || r.insert
}

// rowEffectKey is an effect with rows and the bucket an execution reached
// (wholeBucket when its key was not logged).
type rowEffectKey struct {
	base   *effect
	bucket uint32
	old    bool
}

const (
	wholeBucket = ^uint32(0)
	// maxRowEffects bounds rowEffects; beyond it the cache starts over.
	maxRowEffects = 1 << 16
)

type database struct {
	res     *Resolver
	effects map[string]*effect
	prefix  string
}

// NewTracker returns a Tracker for mode (Object, Commit, Load or
// Answers).
func NewTracker(mode Mode) *Tracker {
	t := &Tracker{mode: mode, board: newBoard(), dbs: map[string]*database{}, ids: map[string]uint32{},
		res: 1_000_000, prepared: map[string]txBuild{}, preparing: map[string]*Txn{}, buckets: map[uint64]uint32{}, rowEffects: map[rowEffectKey]*effect{},
		last: map[uint32]rowLast{}, adv: map[string]*advLock{}}
	t.ends.answers, t.ends.res = mode == Answers, &t.res
	return t
}

// Board returns the transactions not yet run on the target.
func (t *Tracker) Board() *Board { return t.board }

// Mode returns the tracker's mode.
func (t *Tracker) Mode() Mode { return t.mode }

// HasDatabase reports whether SetCatalog was called for db.
func (t *Tracker) HasDatabase(db string) bool { _, ok := t.dbs[db]; return ok }

// SetCatalog sets the catalog of a database, before its first session; a
// nil catalog (it could not be read) makes that database's statements
// wait as in commit mode.
func (t *Tracker) SetCatalog(db string, c *Catalog) {
	res := NewResolver(c)
	if t.mode == Load {
		res = res.ForLoad()
	}
	t.dbs[db] = &database{res: res, effects: map[string]*effect{}, prefix: db + "\x00"}
}

// Session starts following a session of database db (on the target);
// owner is handed back by the Txns it commits.
func (t *Tracker) Session(db string, owner any) *Session {
	d := t.dbs[db]
	if d == nil {
		t.SetCatalog(db, nil)
		d = t.dbs[db]
	}
	t.sessions++
	s := &Session{t: t, db: d, owner: owner}
	if t.mode == Answers {
		if t.local != nil && !t.remoteMarks && !t.local(owner) {
			s.foreign = true
		} else {
			t.live = append(t.live, s)
		}
	}
	return s
}

// Footprint counts what the Tracker holds, to check that memory stays
// bounded.
type Footprint struct {
	Relations, Sessions, Prepared, Cuts, Pending, Effects int
}

// Footprint returns what the Tracker holds now.
func (t *Tracker) Footprint() Footprint {
	f := Footprint{Relations: len(t.ids) + len(t.buckets), Sessions: t.sessions, Prepared: max(len(t.prepared), len(t.preparing)), Cuts: len(t.cuts.t), Pending: t.board.Pending(),
		Effects: len(t.rowEffects)}
	for _, d := range t.dbs {
		f.Effects += len(d.effects)
	}
	return f
}

// observe refines the time resolution from a log line's time: whole
// seconds until a line shows milliseconds, then milliseconds until one
// shows microseconds. Log times of PostgreSQL have milliseconds (%m,
// csvlog, jsonlog) or seconds (%t).
func (t *Tracker) observe(line int64) {
	if t.res > 1000 && line%1_000_000 != 0 {
		t.res = 1000
	}
	if t.res > 1 && line%1000 != 0 {
		t.res = 1
	}
}

// Tick is the log's time resolution as seen so far, in µs: times less
// than a tick apart cannot be ordered (see cutAt).
func (t *Tracker) Tick() int64 { return t.res }

// cutAt is the last commit that a statement starting at log time start
// depends on. A log time is truncated to the log's resolution, so a
// commit logged in the same tick as the statement started may have ended
// before it: such a commit counts as before. That can add a wait on a
// commit that was in fact concurrent, never drop one it needed.
func (t *Tracker) cutAt(start int64) uint64 { return t.cuts.before(start + t.res) }

// LockWindow bounds how far into a statement's own run (in log time) the
// commits it may have waited to lock rows for are taken: see lockCutAt.
const LockWindow = time.Second

// lockCutAt is the last commit that a statement which writes or locks
// rows, and ran from start to end in the log, waits for on the relations
// it locks. In the original it may have waited for the row locks of
// transactions that committed while it ran: on the target it must not
// take those rows first. Without this, a session whose UPDATE ran before
// such a commit on the target (nothing told it to wait) holds the row
// while its next statement waits for that very commit, whose transaction
// waits for the row: a deadlock the server cannot see. Waiting for a
// commit logged before the statement ended never deadlocks on a target
// like the original: that transaction committed while the statement's
// own transaction was open, so it needed none of its locks. Only the
// first LockWindow of a long statement counts, so that a bulk UPDATE is
// not held back by every commit of its ten minutes.
//
// For a statement no longer than LockWindow that is every commit read
// before it: its log line came after theirs. (Comparing log times instead
// would miss some: lines of two backends are written a little out of the
// order of their times, and both may fall in one tick.)
func (t *Tracker) lockCutAt(start, end int64) uint64 {
	if end-start <= LockWindow.Microseconds() {
		return t.seq
	}
	return t.cuts.before(start + LockWindow.Microseconds())
}

// id interns a relation key of a database.
func (t *Tracker) id(d *database, key string) uint32 {
	k := d.prefix + key
	if id, ok := t.ids[k]; ok {
		return id
	}
	if len(t.ids)+len(t.buckets) >= maxRelations {
		return maxRelations // the shared overflow id
	}
	id := uint32(len(t.ids) + len(t.buckets))
	t.ids[k] = id
	return id
}

// keyBuckets is how many groups of rows by key each relation has: two
// keys in one bucket wait for each other's writes (more waiting, never
// less), and the ids the Board keeps lists for stay bounded.
const keyBuckets = 1024

// bucket interns the id of a bucket of a relation's rows.
func (t *Tracker) bucket(any uint32, b uint64) uint32 {
	k := uint64(any)<<32 | b
	if id, ok := t.buckets[k]; ok {
		return id
	}
	if len(t.ids)+len(t.buckets) >= maxRelations {
		return maxRelations
	}
	id := uint32(len(t.ids) + len(t.buckets))
	t.buckets[k] = id
	return id
}

// anyKey is the name of a relation's any id (see rowRef).
func anyKey(key string) string { return key + "\x00rows" }

// freshKey is the name of the id that a relation's fresh inserts write
// in Load mode (see Resolver.fresh), in place of the relation's id: they
// wait for the whole relation's writes, not for each other. What reaches
// the relation whole touches it, and a statement by key touches it unless
// its key is one no fresh insert made (see RowKey.Seq).
func freshKey(key string) string { return key + "\x00fresh" }

// rowEffect is base (an effect with rows) for one execution: its row's
// bucket when the event's parameters give the key (keyed), otherwise
// the whole relation. A read by key touches its bucket and the
// relation's whole-relation writes; a write or lock by key touches its
// bucket's inserts instead of its bucket (see Wait) and may wait to lock
// the relation's whole-relation writes; a write by key writes its bucket
// (and its inserts, for an INSERT) and the relation's any id.
//
// bucket and keyed are the execution's row (Tracker.raceRow), read once
// for both.
func (t *Tracker) rowEffect(base *effect, bucket uint32, keyed bool, slot uint32, old bool) *effect {
	r := base.rows
	k := rowEffectKey{base: base, bucket: wholeBucket, old: old}
	if keyed {
		k.bucket = slot
	}
	if x, ok := t.rowEffects[k]; ok {
		return x
	}
	x := *base
	x.rows = nil
	x.touch = append(make([]uint32, 0, len(base.touch)+2), base.touch...)
	x.write = append(make([]uint32, 0, len(base.write)+2), base.write...)
	x.lock = append(make([]uint32, 0, len(base.lock)+2), base.lock...)
	if keyed {
		b := bucket
		inserts := t.bucket(r.any, keyBuckets+uint64(k.bucket))
		if r.write || r.lock {
			x.touch = append(x.touch, inserts, r.rel)
		} else {
			x.touch = append(x.touch, b, r.rel)
		}
		if r.write {
			x.write = append(x.write, b, r.any)
			if r.insert {
				x.write = append(x.write, inserts)
			}
		}
		if r.lock {
			x.lock = append(x.lock, r.rel)
		}
		if r.fresh != 0 && !old {
			x.touch = append(x.touch, r.fresh)
		}
	} else {
		x.touch = append(x.touch, r.rel, r.any)
		if r.fresh != 0 {
			x.touch = append(x.touch, r.fresh)
		}
		if r.write {
			x.write = append(x.write, r.rel)
		}
		if r.lock {
			x.lock = append(x.lock, r.rel, r.any)
		}
	}
	x.touch, x.write, x.lock = sortedIDs(x.touch), sortedIDs(x.write), sortedIDs(x.lock)
	if len(t.rowEffects) >= maxRowEffects {
		clear(t.rowEffects)
	}
	t.rowEffects[k] = &x
	return &x
}

func (t *Tracker) effectOf(d *database, e *Exec, i int) *effect {
	it := e.Items[i]
	// Keyed by normalized text, not fingerprint: pg_query's fingerprint
	// leaves out digits at the end of table names (events_2024 and
	// events_2025 share one), which are different relations here.
	if ef, ok := d.effects[it.Query]; ok {
		return ef
	}
	// The one classifier's answer, made once per statement text and
	// shared with the rest of the replay.
	st := it.Class(e.Text)
	ef := d.res.Effect(st)
	x := &effect{control: st.Tx, chain: st.Chain, readAll: ef.ReadAll, writeAll: ef.WriteAll, lockAll: ef.LockAll, barrier: ef.Barrier,
		query: isQuery(it.Query), read: ef.ReadOnly(), adv: st.Advisory, note: st.Notification}
	// A relation reached whole also waits for writes of its rows by
	// key (its any id).
	for _, k := range ef.Touch {
		x.touch = append(x.touch, t.id(d, k))
		if d.res.Keyed(k) {
			x.touch = append(x.touch, t.id(d, anyKey(k)))
		}
		if d.res.FreshInserts(k) {
			x.touch = append(x.touch, t.id(d, freshKey(k)))
		}
	}
	for _, k := range ef.Whole {
		x.touch = append(x.touch, t.id(d, k))
	}
	for _, k := range ef.Write {
		x.write = append(x.write, t.id(d, writeKey(&ef, k)))
	}
	for _, k := range ef.Lock {
		x.lock = append(x.lock, t.id(d, k))
		if d.res.Keyed(k) {
			x.lock = append(x.lock, t.id(d, anyKey(k)))
		}
	}
	for _, k := range append(slices.Clip(ef.Touch), ef.Write...) {
		if n, ok := strings.CutPrefix(k, unknownPrefix); ok {
			x.unknown = true
			x.tables = append(x.tables, n+NotInCatalog)
		} else {
			x.tables = append(x.tables, k)
		}
	}
	if k := ef.Rows; k != nil {
		x.tables = append(x.tables, k.Rel)
	}
	x.tables = sortedUnique(x.tables)
	if k := ef.Range; k != nil {
		x.rng = &rangeRef{any: t.id(d, anyKey(k.Rel)), lo: k.Lo, hi: k.Hi}
	}
	if k := ef.Rows; k != nil {
		x.rows = &rowRef{rel: t.id(d, k.Rel), any: t.id(d, anyKey(k.Rel)), params: k.Params, kinds: k.kinds, write: k.Write, lock: k.Lock, insert: k.Insert,
			shared: k.Shared, seq: k.Seq, seqLast: k.SeqLast}
		if k.Fresh {
			x.rows.fresh = t.id(d, freshKey(k.Rel))
		}
	}
	x.touch, x.write, x.lock = sortedIDs(x.touch), sortedIDs(x.write), sortedIDs(x.lock)
	if len(d.effects) >= maxEffects {
		clear(d.effects)
	}
	d.effects[it.Query] = x
	return x
}

// writeKey is the relation key whose id ef's writes of k write: a fresh
// insert's own id in Load mode (see freshKey), k otherwise.
func writeKey(ef *Effect, k string) string {
	if slices.Contains(ef.Whole, k) {
		return freshKey(k)
	}
	return k
}

func sortedIDs(s []uint32) []uint32 {
	slices.Sort(s)
	return slices.Compact(s)
}

// Session follows one session of the log.
type Session struct {
	t        *Tracker
	db       *database
	owner    any
	rowLocks []uint32 // the buckets the event being read writes or locks by key
	rowMakes bool     // and one of its statements may insert them
	rowWeak  bool     // or takes a shared lock of them (rowRef.shared)
	// firstHeld are, in Load mode, the rows the open block locked first
	// by an exclusive lock or a write (FOR UPDATE, FOR NO KEY UPDATE,
	// UPDATE or DELETE by key), with that event's Txn (Tracker.setLast).
	firstHeld map[uint32]*Txn
	inBlock   bool // in an explicit transaction block
	aborted   bool // the block failed: its COMMIT rolls back
	tx        txBuild
	commit    txBuild // what the event being read commits; both buffers are reused
	ended     bool
	// raceTx is what the open transaction wrote, from log time
	// raceBegan, and raceStmt what the event last read touches,
	// relation by relation; raceOpen: a statement of the open block
	// raced; block numbers the session's blocks (see Step.Race).
	raceTx, raceStmt raceRels
	// reach is what the event being read reaches, in Answers mode
	// (Step.Reach).
	reach     Reach
	raceBegan int64
	raceOpen  RaceKind
	block     uint64
	// prepGid is the global id the event being read prepares, and
	// prepWait the PREPARE TRANSACTION it finishes (see
	// Tracker.preparing).
	prepGid  string
	prepWait *Txn
	// advHeld are the advisory locks the session holds, advPend those
	// the event being read took, released or met, advWaits what it
	// waits for by them (see advisory.go).
	advHeld  []*advHold
	advPend  []advPend
	advWaits []*Txn
	// listens are the channels the session listens on, notifying
	// those its open transaction (or the event being read) notified,
	// notifyCommit: the event being read commits that transaction (see
	// notify.go).
	listens      map[string]bool
	notifying    []string
	notifyCommit bool
	// ans is what a commit of another session waits for in Answers
	// mode, the session's last statements (answers.go); ansWait what
	// the event being read waits for so, once it commits.
	ans     answerRing
	ansWait []*Txn
	// foreign: another process replays it (SetLocal), which marks none
	// of its statements run here (not FollowRemoteMarks).
	foreign bool
	// cut is the cut of the event being read (Tracker.cutAt), and
	// endedNow whether it ended a transaction (Tracker.ended), for
	// Raced.
	cut      uint64
	endedNow bool
}

// txBuild is what a transaction wrote so far; schema: it ran a statement
// of unknown effect by its kind (DDL: see Txn.schema).
type txBuild struct {
	writes []uint32
	all    bool
	schema bool
}

func (b *txBuild) add(e *effect) {
	b.all = b.all || e.writeAll
	b.schema = b.schema || e.barrier
	for _, id := range e.write {
		if !slices.Contains(b.writes, id) {
			b.writes = append(b.writes, id)
		}
	}
}

func (b *txBuild) merge(o txBuild) {
	b.all = b.all || o.all
	b.schema = b.schema || o.schema
	for _, id := range o.writes {
		if !slices.Contains(b.writes, id) {
			b.writes = append(b.writes, id)
		}
	}
}

func (b *txBuild) empty() bool { return len(b.writes) == 0 && !b.all }

func (b *txBuild) reset() { b.writes, b.all, b.schema = b.writes[:0], false, false }

// Start returns what the session waits for before it connects, when it
// starts at log time at: the commits before that may have created its
// role or database (statements of unknown effect, DDL among them).
func (s *Session) Start(at int64) Wait {
	if cut := s.t.cutAt(at); cut > 0 {
		// In Load mode, only those that changed the schema: a
		// write through a trigger or a volatile function made no
		// role.
		return Wait{cut: cut, schema: s.t.mode == Load}
	}
	return Wait{}
}

// resetStmt empties what the event being read reaches, before its
// items are read.
func (s *Session) resetStmt() {
	s.raceStmt.reset()
	s.reach.reset()
}

// Event reads the session's next execution event and returns its Step.
func (s *Session) Event(e Exec) Step {
	t := s.t
	t.observe(e.End)
	cut := t.cutAt(e.Start)
	lockCut := t.lockCutAt(e.Start, e.End)
	var step Step
	var wantAll, loadRead bool
	var merged *effect // the union of the event's effects when several reach something
	commit := &s.commit
	commit.reset()
	committing := false
	s.resetStmt()
	s.ansWait = s.ansWait[:0]
	s.cut, s.endedNow = cut, false
	items := e.Items
	if e.Failed {
		// What came after the failure in a string of several did not
		// run: BEGIN; ...; ROLLBACK that failed left its block open.
		items = fingerprint.RanBeforeFailure(items, e.Text)
	}
	for i, it := range items {
		eff := t.effectOf(s.db, &e, i)
		if len(eff.adv) > 0 && !(e.Failed && i == len(items)-1) {
			s.advisory(eff.adv, &e)
		}
		if eff.note != nil {
			s.notification(eff.note)
		}
		if eff.control != TxNone {
			committing = s.control(eff, it, &e) || committing
			continue
		}
		if eff.empty() {
			if !eff.query {
				continue
			}
			if t.mode == Load {
				loadRead = true
				continue
			}
			// A query that names no relation may still read
			// what another session's commit made: a role, a
			// grant, a function, a large object (SELECT
			// loread(...) after a GRANT ON LARGE OBJECT). So it
			// waits for every earlier commit in commit mode,
			// and for those of unknown effect (DDL, GRANT) in
			// object mode; it writes nothing.
			wantAll = wantAll || t.mode == Commit
			if step.Wait.eff == nil {
				step.Wait.eff = noEffect
			}
			continue
		}
		step.Tables = mergeTables(step.Tables, eff.tables)
		step.Unknown = step.Unknown || eff.unknown
		rb, rk, slot := s.raceItem(eff, &e)
		if t.mode == Load && eff.read {
			// It only reads: what it finds is there or not without
			// an error, so it waits for nothing but the schema.
			loadRead = true
			continue
		}
		if eff.rows != nil {
			r := eff.rows
			bucket, keyed := rb, rk
			eff = t.rowEffect(eff, bucket, keyed, slot, keyed && keyOld(r, &e))
			if keyed && (r.write || r.lock) {
				s.rowLocks = append(s.rowLocks, bucket)
				s.rowMakes = s.rowMakes || r.insert
				s.rowWeak = s.rowWeak || r.shared
				if l, ok := t.last[bucket]; ok && l.s != s && !l.tx.Ran() && t.rowOrders(l, r) {
					step.Wait.addRow(l.tx)
				}
			}
			switch {
			case !keyed:
				step.Rows = RowsKeyNotLogged
			case step.Rows == RowsNone:
				step.Rows = RowsByKey
			}
		}
		s.tx.add(eff)
		step.Barrier = step.Barrier || eff.barrier
		wantAll = wantAll || t.mode == Commit
		switch {
		case step.Wait.eff == nil || step.Wait.eff == noEffect:
			step.Wait.eff = eff
		case merged == nil:
			merged = &effect{}
			merged.union(step.Wait.eff)
			merged.union(eff)
			step.Wait.eff = merged
		default:
			merged.union(eff)
		}
	}
	step.Wait.bound(cut, lockCut, wantAll, loadRead)
	if s.prepWait != nil {
		step.Wait.addRow(s.prepWait)
		s.prepWait = nil
	}
	s.end(&e, &step, committing)
	s.prepare(&e, &step)
	s.advEnd(&e, &step)
	s.notifyEnd(&e, &step)
	if t.mode == Answers {
		s.answer(&e, &step)
	}
	return step
}

// bound sets how far back the wait reaches, once the event's effects are
// gathered: to the commits before cut (and the locks before lockCut)
// when it reaches something; otherwise nothing, or the schema alone for
// a read in Load mode (loadRead).
func (w *Wait) bound(cut, lockCut uint64, wantAll, loadRead bool) {
	if eff := w.eff; eff != nil && (cut > 0 || lockCut > 0 && (len(eff.lock) > 0 || eff.lockAll)) {
		w.cut, w.all = cut, wantAll
		if len(eff.lock) > 0 || eff.lockAll {
			w.lockCut = lockCut
		}
		return
	}
	w.eff = nil
	w.schema = loadRead // a read in Load mode (cut 0 waits for nothing)
	w.cut = cut
	if !loadRead {
		w.cut = 0
	}
}

// control applies a transaction-control statement (eff.control is not
// TxNone), item it of event e, to the session's transaction; it says
// whether the statement commits what s.commit then holds.
func (s *Session) control(eff *effect, it fingerprint.Item, e *Exec) (committing bool) {
	t, commit := s.t, &s.commit
	switch eff.control {
	case TxBegin:
		s.inBlock = true
		s.block++
	case TxCommit, TxRollback:
		clear(s.firstHeld)
		s.advRelease(advXact)
		if eff.control == TxRollback {
			s.notifying = s.notifying[:0]
		} else {
			s.notifyCommitted()
		}
		if eff.control == TxCommit && !s.aborted {
			commit.merge(s.tx)
			committing = true
		}
		t.ended(s, e.Start, e.End, &s.raceTx)
		s.raceTx.reset()
		s.tx.reset()
		s.aborted, s.inBlock = false, eff.chain
		s.block++
	case TxSavepoint:
		// ROLLBACK TO lets go of the locks taken after its savepoint.
		clear(s.firstHeld)
	case TxPrepare:
		clear(s.firstHeld)
		s.advRelease(advXact)
		if !s.aborted && !s.tx.empty() {
			t.prepared[it.Class(e.Text).Gid] = txBuild{writes: slices.Clone(s.tx.writes), all: s.tx.all, schema: s.tx.schema}
		}
		if !s.aborted && !e.Failed {
			s.prepGid = it.Class(e.Text).Gid
		}
		s.tx.reset()
		s.raceTx.reset()
		s.aborted, s.inBlock = false, false
	case TxCommitPrepared:
		g := it.Class(e.Text).Gid
		s.finishPrepared(g)
		if p, ok := t.prepared[g]; ok {
			delete(t.prepared, g)
			commit.merge(p)
			committing = true
			if t.mode == Answers && !s.foreign {
				// What it wrote is the PREPARE's session's: taken
				// as anything.
				t.answerWaits(s, &txEnd{from: e.Start, at: e.End, all: true})
			}
		}
	case TxRollbackPrepared:
		g := it.Class(e.Text).Gid
		s.finishPrepared(g)
		delete(t.prepared, g)
	}
	return committing
}

// finishPrepared makes the event being read, a COMMIT PREPARED or
// ROLLBACK PREPARED of gid, wait for its PREPARE TRANSACTION to have run
// (see Tracker.preparing).
func (s *Session) finishPrepared(gid string) {
	if m, ok := s.t.preparing[gid]; ok {
		delete(s.t.preparing, gid)
		s.prepWait = m
	}
}

// prepare records the event being read as the PREPARE TRANSACTION of
// s.prepGid, which its COMMIT or ROLLBACK PREPARED waits for: step's
// Commit, which the replay marks Done once the event ran, made for it
// when the event commits nothing.
func (s *Session) prepare(e *Exec, step *Step) {
	if s.prepGid == "" {
		return
	}
	if step.Commit == nil {
		step.Commit = &Txn{b: s.t.board, at: e.End, owner: s.owner}
	}
	s.t.preparing[s.prepGid] = step.Commit
	s.prepGid = ""
}

// end finishes reading event e once its items are: whether it raced, the
// transaction it ended or committed (committing: one of its statements
// commits s.commit), and the rows it locked, into step.
func (s *Session) end(e *Exec, step *Step, committing bool) {
	t, commit := s.t, &s.commit
	// What a block did after a statement that raced depends on that
	// statement's answer (a DELETE of 0 rows, then an INSERT that finds
	// the key): it raced too, up to the block's end.
	switch {
	case s.raceOpen != RaceNone:
		step.Race = racedAs(s.raceOpen)
		if s.raceOpen == RaceRelation && !s.raceStmt.empty() {
			// It may still race by row itself.
			step.Race.set(t.ends.raced(s, e.Start, e.End, s.cut, &s.raceStmt, t.flagTxn))
		}
	case !s.raceStmt.empty():
		// Every transaction it raced with: their statements race too.
		if k := t.ends.raced(s, e.Start, e.End, s.cut, &s.raceStmt, t.flagTxn); k != RaceNone {
			step.Race = racedAs(k)
		} else {
			step.Race = &Race{}
		}
	}
	s.raceOpen = RaceNone
	if s.inBlock {
		s.raceOpen = step.Race.Kind()
	}
	t.read(s, e.Start, e.End, step.Race)
	if !s.inBlock && !s.raceTx.empty() {
		// Outside a block an execution is its own transaction, which
		// ended with it, committed or not.
		t.ended(s, e.Start, e.End, &s.raceTx)
		s.raceTx.reset()
	}
	if e.Failed {
		// The original rolled back what the event was committing, and
		// an open block can only roll back from here.
		commit.reset()
		committing = false
		if s.inBlock {
			s.aborted = true
		} else {
			s.tx.reset()
		}
	}
	if !s.inBlock && !s.tx.empty() {
		// Outside a block an execution is its own transaction.
		commit.merge(s.tx)
		committing = true
		s.tx.reset()
	}
	if committing && !commit.empty() {
		step.Commit = t.commit(*commit, e.End, s.owner)
		if s.endedNow {
			t.ends.setSeq(step.Commit.seq)
		}
	}
	if len(s.rowLocks) > 0 && !e.Failed {
		// The next write or lock of these rows by another session waits
		// for this event (see Wait): its commit, or in a block the event
		// itself, whose locks the server holds until the block ends. An
		// autocommit lock that commits nothing held its lock only while
		// it ran.
		if step.Commit == nil && s.inBlock {
			step.Commit = &Txn{b: t.board, at: e.End, owner: s.owner}
		}
		if step.Commit != nil {
			t.setLast(s, step.Commit)
		}
	}
	s.rowLocks, s.rowMakes, s.rowWeak = s.rowLocks[:0], false, false
}

// setLast records tx as the last write or lock by key of the rows of the
// session's event being read (see Tracker.last). In Load mode a row the
// open block first locked exclusively keeps that first event instead:
// once it ran on the target, the block holds the row until it ends, so
// another session's write or lock of the row, run then, waits in the
// server's lock queue behind the block, as the application's did, and
// that wait is in its time on the target; made to wait in the replay
// for the block's last statement of the row, it waited there instead,
// the application's think time and statements between the two with it,
// and the candidate's lock queue was out of its time (the load judged a
// busy hour's contention by).
func (t *Tracker) setLast(s *Session, tx *Txn) {
	for _, b := range s.rowLocks {
		if t.mode == Load && s.inBlock {
			if first, ok := s.firstHeld[b]; ok {
				if l, ok := t.last[b]; ok && l.tx == first || !ok && first.Ran() {
					continue
				}
			} else if !s.rowMakes && !s.rowWeak {
				if s.firstHeld == nil {
					s.firstHeld = map[uint32]*Txn{}
				}
				s.firstHeld[b] = tx
			}
		}
		t.last[b] = rowLast{tx: tx, s: s, makes: s.rowMakes, held: s.inBlock}
	}
	t.lasts += len(s.rowLocks)
	if t.lasts >= maxLasts {
		// Bounded by the bucket ids anyway; the sweep lets the Txns
		// that ran (and their owners) go.
		t.lasts = 0
		for b, l := range t.last {
			if l.tx.Ran() {
				delete(t.last, b)
			}
		}
	}
}

// maxLasts is how many entries Tracker.last takes between two sweeps.
const maxLasts = 1 << 14

func (e *effect) union(o *effect) {
	e.readAll = e.readAll || o.readAll
	e.writeAll = e.writeAll || o.writeAll
	e.lockAll = e.lockAll || o.lockAll
	e.barrier = e.barrier || o.barrier
	e.touch = sortedIDs(append(e.touch, o.touch...))
	e.write = sortedIDs(append(e.write, o.write...))
	e.lock = sortedIDs(append(e.lock, o.lock...))
}

// commit numbers a transaction that wrote and puts it on the board.
func (t *Tracker) commit(b txBuild, end int64, owner any) *Txn {
	t.seq++
	tx := &Txn{b: t.board, seq: t.seq, pos: t.seq, at: end, owner: owner, writes: sortedIDs(slices.Clone(b.writes)), writeAll: b.all, schema: b.schema}
	t.board.add(tx)
	t.cuts.add(end, t.seq)
	return tx
}

// End ends the session: an open transaction is rolled back, as the
// server does when the connection closes.
func (s *Session) End() {
	if !s.ended {
		s.ended = true
		s.tx, s.commit, s.inBlock = txBuild{}, txBuild{}, false
		s.raceTx, s.raceStmt, s.raceOpen = raceRels{}, raceRels{}, RaceNone
		s.advSessionEnd()
		s.listens, s.notifying = nil, nil
		s.t.sessions--
	}
}

// cutIndex maps log time to commit order: for each commit time (the log
// lines' running maximum) the last commit at that time. When full, its
// older half is thinned, keeping every other entry: a lookup between two
// kept entries then answers the older one, which waits for fewer commits
// than it might, never for one that came later.
type cutIndex struct {
	t    []int64
	seq  []uint64
	last int64
}

func (c *cutIndex) add(at int64, seq uint64) {
	at = max(at, c.last)
	c.last = at
	if n := len(c.t); n > 0 && c.t[n-1] == at {
		c.seq[n-1] = seq
		return
	}
	if len(c.t) == maxCuts {
		c.thin()
	}
	c.t = append(c.t, at)
	c.seq = append(c.seq, seq)
}

func (c *cutIndex) thin() {
	half := len(c.t) / 2
	j := 0
	for i := 0; i < len(c.t); i++ {
		if i < half && i%2 == 1 {
			continue
		}
		c.t[j], c.seq[j] = c.t[i], c.seq[i]
		j++
	}
	c.t, c.seq = c.t[:j], c.seq[:j]
}

// before returns the last commit logged before at, 0 for none.
func (c *cutIndex) before(at int64) uint64 {
	i, _ := slices.BinarySearch(c.t, at) // first entry >= at
	if i == 0 {
		return 0
	}
	return c.seq[i-1]
}

// NotInCatalog follows, in Step.Tables, the name of a relation the
// target's catalog does not have.
const NotInCatalog = " (not in the target's catalog)"

// mergeTables is the union of two sorted lists of tables; a when b adds
// nothing, b when a is empty (shared, not copied).
func mergeTables(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	for _, n := range b {
		if _, ok := slices.BinarySearch(a, n); !ok {
			return sortedUnique(append(slices.Clone(a), b...))
		}
	}
	return a
}
