package logread

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// interpreter turns entries into events. It keeps a little state per
// session, because the log spreads one execution over several messages:
// log_statement writes the statement when it starts and log_duration its
// duration when it ends; an error's STATEMENT names a statement whose bind
// was logged earlier; a session without %c in the prefix is known only by
// its process id.
type interpreter struct {
	c        *Counters
	sessions map[string]*sessionState // by session key
	byPID    map[int32]string         // the live session key of each process
	gen      map[int32]int            // sessions seen per process, when %c is missing
	out      []*event.Event

	// slab hands out events allocated in blocks: one allocation per
	// eventSlab events instead of one each. A kept event keeps its block
	// (some 60 kB) alive.
	slab []event.Event
	// free holds events given back by the consumer (Reader.Recycle),
	// zeroed, to be filled again before the slab is used. Once a consumer
	// recycles, slabs are small (recycledSlab): a recycled event keeps
	// its slab alive, and small slabs bound what the pool can pin.
	free      []*event.Event
	recycling bool
	// params is the slab parameters are parsed into: a parameter list is
	// a full slice of it.
	params []event.Param

	// leading is set for the parts of a split log after the first: the
	// durations found before any statement of their session may belong
	// to a statement at the end of the previous part.
	leading          bool
	leadingDurations map[string]int64
	// leadingErrors are failed statements of sessions not yet started in
	// the part: they may be the statement announced at the end of the
	// previous part, which then fails instead.
	leadingErrors map[string]*event.Event

	// lastSession is the session of the previous entry: sessions log
	// several lines in a row.
	lastSession *sessionState

	// suspects are errors that may be parallel workers', held (see
	// error).
	suspects []suspect

	// scratch holds an entry's fields as the message corrects them
	// (connect, disconnect): the reader's are shared, and stay as they
	// are.
	scratch lineFields

	// own is set when the entries' text is in buffers the format reader
	// reads into again (see lineReader): what the interpreter keeps past
	// an entry, in events and in a session's state, it copies (keep).
	own bool
	// text holds the copies.
	text textArena

	// durAlone counts the lines of durations without a statement not yet
	// in c (see flushCounts): the most common reason to skip a line
	// costs an add, not a map update.
	durAlone int64
	// texts holds copies of query texts and statement names seen twice,
	// by a hash of their length and three words (textHash): most logs
	// repeat a few texts (those of prepared statements, BEGIN, COMMIT)
	// many times, and a copy of each would be most of what the reader
	// allocates. seen holds the hashes of those seen once, which get a
	// copy in text.
	texts [256]string
	seen  [256]uint64

	// foreign is the first word of a translated message, when seen.
	foreign     string
	foreignLine int64

	// origin is what the messages show of the server (see Origin).
	origin Origin

	// plansSeen is set once the log has auto_explain plans (in its head,
	// or read): executions are then held for theirs (holdForPlan).
	plansSeen bool
}

type sessionState struct {
	key         string
	user        string
	database    string
	application string

	// pending is a statement announced by log_statement whose duration or
	// error may still follow.
	pending *event.Event
	// lastBind is the last "bind" line (log_min_duration_statement style),
	// used when an execution fails: the failure is then the only trace.
	// Its parameters are parsed from bindDetail only then. bindEv is the
	// event that the session's binds reuse until one is emitted.
	lastBind   *event.Event
	bindDetail string
	bindEv     *event.Event
	// applied is the shared fields (lineFields.shared) of the last entry
	// whose user, database and application update took from, when
	// nothing else updated them since: an entry with the same fields has
	// the same values, and can leave them.
	applied *lineFields
	// gone is set once the session is no longer in the interpreter's
	// sessions, so that a format reader's fields that remember it
	// (lineFields.sess) are not followed.
	gone bool
	// started is set once the session logged a statement in this log
	// (or part of a split log).
	started bool
	// lastParse is the last "parse" line not yet followed by a bind: an
	// error in bind (planning of the unnamed statement folds constants
	// with the parameter values) leaves only the parse as a trace.
	// Only its name and query are kept, not the event: an event kept
	// keeps its whole slab alive, and the collector scans it all.
	lastParse             bool
	parseName, parseQuery string
	// done is a sketch of the query of the last execution emitted with
	// its duration, when it was an Execute: an error logged after it with
	// the same statement (at Sync, in a later fetch from its portal) is
	// that execution's, already counted. Not the string, which would keep
	// its chunk of the log alive.
	done querySketch

	// plans are auto_explain plans logged before the execution they
	// belong to (see plan), and held an Execute whose plan may come after
	// it (holdForPlan).
	plans []pendingPlan
	held  *event.Event
}

// querySketch tells a query from others cheaply: its length and its first
// and last eight bytes.
type querySketch struct {
	n           int
	first, last uint64
}

func sketchOf(q string) querySketch {
	if len(q) < 8 {
		var b [8]byte
		copy(b[:], q)
		w := binary.LittleEndian.Uint64(b[:])
		return querySketch{n: len(q), first: w, last: w}
	}
	return querySketch{n: len(q), first: loadString64(q, 0), last: loadString64(q, len(q)-8)}
}

const eventSlab = 256

// textBlock is the size of the blocks kept text is copied into; text
// longer than textBlock/8 gets an allocation of its own.
const textBlock = 64 << 10

// keep returns s, or a copy of it when the entries' text is in buffers
// the reader reuses (see own).
func (in *interpreter) keep(s string) string {
	if !in.own || s == "" {
		return s
	}
	return in.copyText(s)
}

// keepText is keep for text that may come again: a query, a statement
// name.
func (in *interpreter) keepText(s string) string {
	if !in.own || s == "" {
		return s
	}
	h := textHash(s)
	i := h & uint64(len(in.texts)-1)
	if t := in.texts[i]; t == s {
		return t
	}
	if in.seen[i] != h {
		in.seen[i] = h
		return in.copyText(s)
	}
	// A copy of its own, not in a block: the table would keep blocks
	// alive.
	t := strings.Clone(s)
	in.texts[i] = t
	return t
}

// textHash hashes s by its length and its first, middle and last eight
// bytes: a whole hash of every query would cost as much as its copy. Two
// texts alike in those differ in the compare, and only get copied.
func textHash(s string) uint64 {
	n := len(s)
	var a, b, c uint64
	if n >= 8 {
		a, b, c = loadString64(s, 0), loadString64(s, (n-8)/2), loadString64(s, n-8)
	} else {
		var w [8]byte
		copy(w[:], s)
		a = binary.LittleEndian.Uint64(w[:])
	}
	h := (a ^ uint64(n)<<56) * 0x9e3779b97f4a7c15
	h = (h ^ b ^ h>>29) * 0xbf58476d1ce4e5b9
	h = (h ^ c ^ h>>32) * 0x94d049bb133111eb
	return h ^ h>>31
}

func (in *interpreter) copyText(s string) string { return in.text.copy(s) }

// textArena hands out room for copies of text in blocks: one allocation
// for many short strings. A block is never written again below its
// length, so strings can alias it.
type textArena struct{ b []byte }

// alloc returns room for n bytes, to be filled before anything else is
// allocated.
func (a *textArena) alloc(n int) []byte {
	if n > textBlock/8 {
		return make([]byte, n)
	}
	if cap(a.b)-len(a.b) < n {
		a.b = make([]byte, 0, textBlock)
	}
	m := len(a.b)
	a.b = a.b[:m+n]
	return a.b[m : m+n : m+n]
}

// copy returns a copy of s.
func (a *textArena) copy(s string) string {
	if s == "" {
		return ""
	}
	b := a.alloc(len(s))
	copy(b, s)
	return unsafe.String(&b[0], len(b))
}

// keep returns s, or a copy of it when a is not nil.
func (a *textArena) keep(s string) string {
	if a == nil {
		return s
	}
	return a.copy(s)
}

// paramSlab is how many parameters are allocated at a time.
const paramSlab = 256

func newInterpreter(c *Counters) *interpreter {
	return &interpreter{
		c:        c,
		sessions: make(map[string]*sessionState),
		byPID:    make(map[int32]string),
		gen:      make(map[int32]int),
	}
}

// session finds or creates the state of e's session, for an entry that
// is not an auto_explain plan: an execution held for its plan is
// emitted first (see holdForPlan).
func (in *interpreter) session(e *entry) *sessionState { return in.sessionOf(e, true) }

// sessionOf finds or creates the state of e's session; with release, it
// emits the execution the session held for its plan (see session).
func (in *interpreter) sessionOf(e *entry, release bool) *sessionState {
	f := e.f
	// The session the shared fields remember first: its key is most often
	// the very same string.
	if f.shared && f.session != "" {
		if s := f.sess; s != nil && !s.gone && sameString(s.key, f.session) {
			if in.lastSession != s {
				in.lastSession = s
			}
			if s.applied != f {
				in.update(s, f)
				s.applied = f
			}
			if release && s.held != nil {
				in.releaseHeld(s)
			}
			return s
		}
	}
	if s := in.lastSession; s != nil && f.session != "" && f.session == s.key {
		in.update(s, f)
		if release && s.held != nil {
			in.releaseHeld(s)
		}
		return s
	}
	key := f.session
	if key == "" {
		key = in.byPID[e.pid]
		if key == "" {
			key = "p" + strconv.Itoa(int(e.pid)) + "." + strconv.Itoa(in.gen[e.pid])
			in.byPID[e.pid] = key
		}
	}
	s := in.sessions[key]
	if s == nil {
		s = &sessionState{key: key}
		in.sessions[key] = s
		// A process runs one session at a time: a new session on the same
		// process means the previous one ended without a disconnection
		// line, and its state can go.
		if old, ok := in.byPID[e.pid]; ok && old != key && f.session != "" {
			in.drop(old)
		}
		in.byPID[e.pid] = key
	}
	in.lastSession = s
	if f.shared && f.session != "" {
		f.sess = s
	}
	in.update(s, f)
	if release && s.held != nil {
		in.releaseHeld(s)
	}
	return s
}

// sameString is a == b, without a call when they are the same string,
// as interned values are.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func (in *interpreter) update(s *sessionState, f *lineFields) {
	if s.applied != nil {
		s.applied = nil
	}
	// The prefix shows "[unknown]" before the startup packet is read.
	if f.user != "" && f.user != "[unknown]" {
		s.user = f.user
	}
	if f.database != "" && f.database != "[unknown]" {
		s.database = f.database
	}
	if f.application != "" && f.application != "[unknown]" {
		s.application = f.application
	}
}

func (in *interpreter) drop(key string) {
	if s := in.sessions[key]; s != nil {
		if in.lastSession == s {
			in.lastSession = nil
		}
		in.flush(s)
		in.dropPlans(s)
		s.release()
		delete(in.sessions, key)
	}
}

func (in *interpreter) newEvent(k event.Kind, e *entry, s *sessionState) *event.Event {
	var ev *event.Event
	if n := len(in.free); n > 0 {
		// Zeroed when recycled.
		ev = in.free[n-1]
		in.free[n-1] = nil
		in.free = in.free[:n-1]
	} else {
		if len(in.slab) == 0 {
			size := eventSlab
			if in.recycling {
				size = recycledSlab
			}
			in.slab = make([]event.Event, size)
		}
		ev = &in.slab[0]
		in.slab = in.slab[1:]
	}
	// Zero memory: only the other fields are written.
	fillEvent(ev, k, e, s)
	return ev
}

// recycledSlab is the slab size once the consumer recycles events, and
// maxFree bounds the pool: at worst each pooled event pins a slab of its
// own, 2,048 × 32 × 176 bytes (11 MB), and the pool rarely holds more
// than the events a consumer has in flight.
const (
	recycledSlab = 32
	maxFree      = 2048
)

// recycle takes back events the consumer is done with.
func (in *interpreter) recycle(evs []*event.Event) {
	if !in.recycling {
		in.recycling = true
		in.slab = nil // the rest of a large slab would stay pinned
	}
	for _, ev := range evs {
		if ev == nil || len(in.free) == maxFree {
			continue
		}
		// Zeroed now, so that the pool keeps no text alive.
		*ev = event.Event{}
		in.free = append(in.free, ev)
	}
}

func fillEvent(ev *event.Event, k event.Kind, e *entry, s *sessionState) {
	ev.Kind = k
	ev.Time = e.time
	ev.Session = s.key
	ev.PID = e.pid
	ev.User = s.user
	ev.Database = s.database
	ev.Application = s.application
	ev.Duration = event.NoDuration
	ev.Line = e.line
}

// appendParams parses the parameters of detail into the interpreter's
// slab of parameters: one allocation for many executions.
func (in *interpreter) appendParams(detail, query string) ([]event.Param, event.ParamState) {
	if cap(in.params)-len(in.params) < paramSlab/16 {
		in.params = make([]event.Param, 0, paramSlab)
	}
	n := len(in.params)
	var ar *textArena
	if in.own {
		// The values are copied as they are read.
		ar = &in.text
	}
	ps, state := appendParams(in.params, detail, query, ar)
	if len(ps) == n {
		return nil, state
	}
	if unsafe.SliceData(ps) == unsafe.SliceData(in.params) {
		// Still in the slab: take what was appended, with no room to
		// append more, so that a consumer's append copies it.
		in.params = ps
		return ps[n:len(ps):len(ps)], state
	}
	// Too many for the slab: append made a new array, with a copy of the
	// slab's earlier parameters too. Keep only the new ones.
	return append([]event.Param(nil), ps[n:]...), state
}

// flush emits the session's pending statement, which got no duration.
func (in *interpreter) flush(s *sessionState) {
	if s.held != nil {
		in.releaseHeld(s)
	}
	if s.pending != nil {
		in.out = append(in.out, s.pending)
		s.pending = nil
	}
}

// flushCounts brings c up to date.
func (in *interpreter) flushCounts() {
	if in.durAlone != 0 {
		in.c.skip(SkipDurationAlone, in.durAlone)
		in.durAlone = 0
	}
}

// takePending returns the statements still waiting for a duration, by
// session, instead of emitting them: the end of a part of a split log.
func (in *interpreter) takePending() map[string]*event.Event {
	in.releaseSuspects(nil)
	m := make(map[string]*event.Event)
	for _, s := range in.sessions {
		if s.held != nil {
			in.releaseHeld(s)
		}
		in.dropPlans(s)
		if s.pending != nil {
			m[s.key] = s.pending
			s.pending = nil
		}
	}
	return m
}

// finishAll emits what is still pending at the end of the log, in log
// order: sessions are in a map, whose order would change from run to run.
func (in *interpreter) finishAll() {
	in.releaseSuspects(nil)
	n := len(in.out)
	for _, s := range in.sessions {
		in.flush(s)
		in.dropPlans(s)
	}
	slices.SortFunc(in.out[n:], byLine)
}

// byLine orders events by the line they come from, then by session.
func byLine(a, b *event.Event) int {
	if c := cmp.Compare(a.Line, b.Line); c != 0 {
		return c
	}
	return strings.Compare(a.Session, b.Session)
}

// add interprets one entry, appending the events it completes to in.out
// and counting its lines.
func (in *interpreter) add(e *entry) {
	if e.f == nil {
		in.scratch = lineFields{pid: e.pid, session: e.session, user: e.user, database: e.database, application: e.application, sqlstate: e.sqlstate, worker: e.worker}
		e.f = &in.scratch
	}
	if len(in.suspects) > 0 {
		in.releaseSuspects(e)
	}
	if e.sev != prefix.SevNone {
		if e.sev == prefix.SevLog {
			in.log(e)
			return
		}
		e.severity = e.sev.String()
	}
	switch e.severity {
	case "LOG":
		in.log(e)
	case "ERROR", "FATAL", "PANIC":
		in.error(e)
	case "WARNING", "NOTICE", "INFO", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4", "DEBUG5":
		in.c.skip(SkipNotice, e.lines)
	default:
		// A severity in another language (csvlog and jsonlog write it
		// as the server translated it).
		if w := prefix.ForeignSeverity([]byte(e.severity + ":  ")); w != "" && in.foreign == "" {
			in.foreign, in.foreignLine = w, e.line
		}
		in.c.skip(SkipOtherMessage, e.lines)
	}
}

func (in *interpreter) log(e *entry) {
	msg := e.message
	if len(msg) > 7 && msg[5] == ':' && msg[6] == ' ' && prefix.IsSQLState(msg[:5]) {
		// log_error_verbosity = verbose: "00000: duration: ...". The
		// SQLSTATE of a LOG is no part of its events.
		msg = msg[7:]
		e.message = msg
	}
	var dur int64 = event.NoDuration
	if len(msg) >= len("duration: ") && (loadString64(msg, 0) == wordDuration && msg[8] == ':' && msg[9] == ' ' || msg[0]|0x20 == 'd' && hasPrefixFold(msg, "duration: ")) {
		// "duration: 0.123 ms  statement: SELECT 1" or, from log_duration,
		// "duration: 0.123 ms" alone.
		rest := msg[len("duration: "):]
		var d int64
		var after string
		ok := false
		if len(rest) >= 8 {
			d, ok = durationWord(loadString64(rest, 0))
			after = rest[8:]
		}
		if !ok {
			d, after, ok = parseDuration(rest)
		}
		if !ok {
			in.c.skip(SkipOtherMessage, e.lines)
			return
		}
		dur = d
		// "duration: 0.1 ms  statement: ..." has two spaces.
		for len(after) > 0 && after[0] == ' ' {
			after = after[1:]
		}
		msg = after
		if msg == "" {
			in.durationAlone(e, dur)
			return
		}
	}
	// The keywords as the servers write them, told by their first letter;
	// any other case goes the long way below.
	if len(msg) > 0 {
		// Compared by words: the strings' compare is a call.
		var w uint64
		if len(msg) >= 8 {
			w = loadString64(msg, 0)
		}
		switch msg[0] {
		case 's':
			if w == wordStatemen && len(msg) >= len("statement: ") && msg[8] == 't' && msg[9] == ':' && msg[10] == ' ' {
				in.simple(e, msg[len("statement: "):], dur)
				return
			}
		case 'e':
			if w == wordExecute {
				in.execute(e, msg[len("execute "):], dur)
				return
			}
		case 'p':
			if w&0xffffffffffff == wordParse {
				in.parse(e, msg[len("parse "):], dur)
				return
			}
			if len(msg) > 1 && msg[1] == 'l' && strings.HasPrefix(msg, "plan:") {
				// auto_explain: "duration: 0.046 ms  plan:\n..."
				in.plan(e, msg[len("plan:"):], dur)
				return
			}
		case 'b':
			if w&0xffffffffff == wordBind {
				in.bind(e, msg[len("bind "):])
				return
			}
		}
	}
	switch {
	case hasPrefixFold(msg, "statement: "):
		in.simple(e, msg[len("statement: "):], dur)
	case hasPrefixFold(msg, "execute "):
		in.execute(e, msg[len("execute "):], dur)
	case hasPrefixFold(msg, "parse "):
		in.parse(e, msg[len("parse "):], dur)
	case hasPrefixFold(msg, "bind "):
		in.bind(e, msg[len("bind "):])
	case hasPrefixFold(msg, "connection authorized: "), hasPrefixFold(msg, "replication connection authorized: "):
		in.connect(e, msg)
	case hasPrefixFold(msg, "disconnection: "):
		in.disconnect(e)
	case hasPrefixFold(msg, "connection received: "), hasPrefixFold(msg, "connection ready: "),
		hasPrefixFold(msg, "connection authenticated: "):
		in.c.skip(SkipConnection, e.lines)
	case hasPrefixFold(msg, "checkpoint"), hasPrefixFold(msg, "restartpoint"):
		in.c.skip(SkipCheckpoint, e.lines)
	case hasPrefixFold(msg, "automatic vacuum"), hasPrefixFold(msg, "automatic analyze"), hasPrefixFold(msg, "automatic aggressive vacuum"):
		in.c.skip(SkipAutovacuum, e.lines)
	case hasPrefixFold(msg, "temporary file: "):
		in.c.skip(SkipTempFile, e.lines)
	case hasPrefixFold(msg, "fastpath function call: "):
		in.fastPath(e, msg[len("fastpath function call: "):], dur)
	case strings.HasPrefix(msg, "process ") && (strings.Contains(msg, " still waiting for ") || strings.Contains(msg, " acquired ")):
		in.c.skip(SkipLockWait, e.lines)
	default:
		if w := prefix.TranslatedMessage(msg); w != "" && in.foreign == "" {
			in.foreign, in.foreignLine = strings.Clone(w), e.line
		}
		in.origin.note(msg)
		in.c.skip(SkipOtherMessage, e.lines)
	}
}

// Little-endian words of the keywords log compares messages with.
var (
	wordDuration = binary.LittleEndian.Uint64([]byte("duration"))
	wordStatemen = binary.LittleEndian.Uint64([]byte("statemen"))
	wordExecute  = binary.LittleEndian.Uint64([]byte("execute "))
	wordParse    = binary.LittleEndian.Uint64([]byte("parse \x00\x00"))
	wordBind     = binary.LittleEndian.Uint64([]byte("bind \x00\x00\x00"))
)

// simple handles "statement: SELECT 1", after "statement: ".
func (in *interpreter) simple(e *entry, query string, dur int64) {
	s := in.session(e)
	ev := in.newEvent(event.Statement, e, s)
	ev.Query = in.keepText(query)
	in.statement(e, s, ev, dur)
}

// fastPath handles "fastpath function call: "lo_open" (OID 952)", after
// "fastpath function call: ": a call of the fast-path protocol (libpq's
// large-object functions), which ran in the original but whose arguments
// the log does not hold. It is an Execute whose parameters are missing,
// its text FastPathQuery's, so that an analysis counts the call and its
// time and a replay skips it for its own reason ("fast-path function
// call") rather than dropping it unsaid. A text of another shape is
// counted as another message.
func (in *interpreter) fastPath(e *entry, rest string, dur int64) {
	name, ok := fastPathName(rest)
	if !ok {
		in.c.skip(SkipOtherMessage, e.lines)
		return
	}
	s := in.session(e)
	ev := in.newEvent(event.Execute, e, s)
	ev.Query = in.keepText(FastPathQuery(name))
	ev.ParamState = event.ParamsMissing
	in.statement(e, s, ev, dur)
}

// execute handles "execute <unnamed>: SELECT $1", "execute S_1/C_2: ..."
// and "execute fetch from <unnamed>/C_1: ...", after "execute ".
func (in *interpreter) execute(e *entry, rest string, dur int64) {
	if len(rest) > 0 && rest[0]|0x20 == 'f' && hasPrefixFold(rest, "fetch from ") {
		// A later fetch from a portal already counted at its first
		// execute: the server does not count it as a new call.
		in.c.skip(SkipPortalFetch, e.lines)
		return
	}
	s, ev, ok := in.protocolEvent(e, event.Execute, rest)
	if !ok {
		return
	}
	in.statement(e, s, ev, dur)
}

// parse handles "duration: 0.05 ms  parse S_1: SELECT $1", after "parse ".
func (in *interpreter) parse(e *entry, rest string, dur int64) {
	s, ev, ok := in.protocolEvent(e, event.Prepare, rest)
	if !ok {
		return
	}
	ev.Duration = dur
	if dur >= 0 && ev.Time != 0 {
		ev.Time -= dur
	}
	in.c.parsed(e.lines)
	in.out = append(in.out, ev)
	s.lastParse, s.parseName, s.parseQuery = true, ev.Name, ev.Query
	s.done.n = -1
}

// bind handles "duration: 0.02 ms  bind S_1: SELECT $1" + DETAIL
// parameters, after "bind ". It is not an execution, only remembered in
// case the execute fails; its parameters are parsed only then.
func (in *interpreter) bind(e *entry, rest string) {
	name, portal, query, ok := splitProtocol(rest)
	if !ok {
		in.c.skip(SkipOtherMessage, e.lines)
		return
	}
	s := in.session(e)
	ev := s.bindEv
	if ev == nil {
		// Not from the slab: it is kept (see lastParse).
		ev = new(event.Event)
		s.bindEv = ev
	} else {
		*ev = event.Event{}
	}
	fillEvent(ev, event.Execute, e, s)
	ev.Name, ev.Query = in.keepText(name), in.keepText(query)
	if portal != "" {
		ev.SetPortal(in.keep(portal))
	}
	s.lastBind, s.bindDetail = ev, in.keep(e.detail)
	s.lastParse, s.parseName, s.parseQuery = false, "", ""
	s.done.n = -1
	in.c.parsed(e.lines)
}

// protocolEvent builds the event of a "parse" or "execute" line, whose
// text is "<name>[/<portal>]: <query>", with the parameters of the DETAIL
// for an Execute. It counts the line as skipped when the text has another
// shape.
func (in *interpreter) protocolEvent(e *entry, k event.Kind, text string) (*sessionState, *event.Event, bool) {
	name, portal, query, ok := splitProtocol(text)
	if !ok {
		in.c.skip(SkipOtherMessage, e.lines)
		return nil, nil, false
	}
	s := in.session(e)
	ev := in.newEvent(k, e, s)
	ev.Name, ev.Query = in.keepText(name), in.keepText(query)
	if portal != "" {
		ev.SetPortal(in.keep(portal))
	}
	if k == event.Execute {
		ev.Params, ev.ParamState = in.appendParams(e.detail, query)
	}
	return s, ev, true
}

// statement handles a Statement or Execute line. With its duration on the
// same line (log_min_duration_statement) it is complete; without one
// (log_statement) it waits for a "duration:" line, an error or the
// session's next statement.
func (in *interpreter) statement(e *entry, s *sessionState, ev *event.Event, dur int64) {
	in.c.parsed(e.lines)
	s.started = true
	if s.pending != nil {
		in.flush(s)
	}
	if len(s.plans) > 0 {
		in.attachPlans(s, ev)
	}
	if dur >= 0 {
		ev.Duration = dur
		if ev.Time != 0 {
			// The line's time is when it ended; a log without times
			// has none to move back.
			ev.Time -= dur
		}
		if in.plansSeen && in.holdForPlan(s, ev) {
			// Emitted with its plan, or at the session's next entry.
		} else {
			in.out = append(in.out, ev)
		}
		if s.lastBind != nil || s.lastParse {
			s.forgetProtocol()
		}
		if ev.Kind == event.Execute {
			s.done = sketchOf(ev.Query)
		} else {
			s.done.n = -1
		}
		return
	}
	s.done.n = -1
	s.pending = ev
}

// release marks a session that left the interpreter's sessions, and
// drops what it held: a format reader's hint may keep the state itself
// for a while (see entry.hint), but not the log text it referred to.
func (s *sessionState) release() {
	s.gone = true
	s.pending, s.bindEv = nil, nil
	s.lastBind, s.bindDetail = nil, ""
	s.lastParse, s.parseName, s.parseQuery = false, "", ""
}

// forgetProtocol forgets the last bind and parse, and the strings they
// held: a session that keeps them keeps their chunk of the log alive.
func (s *sessionState) forgetProtocol() {
	if s.lastBind != nil {
		*s.lastBind = event.Event{}
		s.lastBind, s.bindDetail = nil, ""
	}
	s.lastParse, s.parseName, s.parseQuery = false, "", ""
}

// durationAlone pairs "duration: X ms" (log_duration) with the statement
// the session announced before it. Parse and bind durations have no
// statement to pair with and are counted as skipped.
func (in *interpreter) durationAlone(e *entry, dur int64) {
	s := in.session(e)
	if s.pending == nil {
		if in.leading && !s.started {
			if in.leadingDurations == nil {
				in.leadingDurations = make(map[string]int64)
			}
			in.leadingDurations[s.key] = dur
			s.started = true
		}
		in.durAlone += e.lines
		return
	}
	s.pending.Duration = dur
	in.c.parsed(e.lines)
	if in.plansSeen {
		ev := s.pending
		if s.pending = nil; !in.holdForPlan(s, ev) {
			in.out = append(in.out, ev)
		}
		return
	}
	in.flush(s)
}

func (in *interpreter) connect(e *entry, msg string) {
	if e.f.session == "" {
		// Without %c, each connection on a process is a new session.
		in.gen[e.pid]++
		if old, ok := in.byPID[e.pid]; ok {
			in.drop(old)
		}
		delete(in.byPID, e.pid)
	}
	// "connection authorized: user=app database=shop application_name=web"
	// gives what the prefix may lack. The entry's fields are then no
	// longer the prefix's: the session must not remember them as applied.
	f := in.ownFields(e)
	if v := prefix.Field(msg, "user="); v != "" {
		f.user = in.keep(v)
		if u, db, ok := strings.Cut(f.user, "database="); ok {
			// Azure Single Server writes "user=postgresdatabase=postgres".
			f.user, f.database = u, db
		}
	}
	if v := prefix.Field(msg, "database="); v != "" {
		f.database = in.keep(v)
	}
	if v := prefix.Field(msg, "application_name="); v != "" {
		f.application = in.keep(v)
	}
	s := in.session(e)
	in.c.parsed(e.lines)
	in.out = append(in.out, in.newEvent(event.Connect, e, s))
}

// ownFields points e at a copy of its fields that the interpreter may
// change, and returns it.
func (in *interpreter) ownFields(e *entry) *lineFields {
	in.scratch = *e.f
	in.scratch.shared, in.scratch.sess = false, nil
	e.f = &in.scratch
	return e.f
}

func (in *interpreter) disconnect(e *entry) {
	// "disconnection: session time: 0:00:01.234 user=app database=shop host=[local]"
	f := in.ownFields(e) // see connect
	if f.user == "" {
		f.user = in.keep(prefix.Field(e.message, "user="))
	}
	if f.database == "" {
		f.database = in.keep(prefix.Field(e.message, "database="))
	}
	s := in.session(e)
	in.c.parsed(e.lines)
	in.flush(s)
	in.dropPlans(s)
	in.out = append(in.out, in.newEvent(event.Disconnect, e, s))
	s.release()
	delete(in.sessions, s.key)
	in.lastSession = nil
	if in.byPID[e.pid] == s.key {
		delete(in.byPID, e.pid)
	}
}

// error handles ERROR, FATAL and PANIC. The failing statement, if any, is
// emitted first with Failed set, then the Error event.
func (in *interpreter) error(e *entry) {
	if e.f.worker || e.f.short && e.statement != "" {
		// A parallel worker's error: its leader logs it again, with
		// "CONTEXT:  parallel worker", in its own session. Read as a
		// session of its own, the failure would count twice, and a
		// replay would run its statement again without the leader's
		// database. Without %b or %P in the prefix, a worker's line
		// stops at %q (it has no client) and is known by the
		// statement it ran, which no other process that stops there
		// has.
		in.c.skip(SkipParallelWorker, e.lines)
		return
	}
	if len(in.suspects) > 0 && strings.Contains(e.context, "parallel worker") {
		in.confirmWorker(e)
	}
	if e.f.session == "" && e.f.user == "" && e.f.database == "" && in.byPID[e.pid] == "" && workerOnlyError(e.message) {
		// A parallel worker still running when its leader failed,
		// which stopped it, or one that started after its leader had
		// freed the query's shared memory and cannot attach (a busy
		// machine runs workers late): its leader never repeats this
		// error, so the suspect below would wait in vain and become
		// a session of its own, with a failure the clients never saw.
		in.c.skip(SkipParallelWorker, e.lines)
		return
	}
	if e.statement != "" && e.f.session == "" && e.f.user == "" && e.f.database == "" && !in.leading && in.byPID[e.pid] == "" {
		// A process never seen, whose line names no session, user or
		// database, fails a statement: with a prefix as bare as
		// '%m [%p] ' (PostgreSQL's default), a parallel worker's error
		// reads so, and so does a session whose first statement failed.
		// Its events are held until its leader's error (CONTEXT:
		// parallel worker) names the same statement and message, or
		// released (see suspect).
		n := len(in.out)
		in.sessionError(e)
		in.suspects = append(in.suspects, suspect{pid: e.pid, key: in.byPID[e.pid], time: e.time, line: e.line, lines: e.lines,
			statement: strings.Clone(e.statement), message: strings.Clone(e.message), evs: slices.Clone(in.out[n:])})
		clear(in.out[n:])
		in.out = in.out[:n]
		return
	}
	in.sessionError(e)
}

// workerOnlyMessages are errors that only a parallel worker logs
// (PostgreSQL 13 to 18): stopped by its leader, which failed while the
// worker still ran (die() in a background worker), or started after its
// leader had ended and unable to attach to its shared memory
// (ParallelWorkerMain, dsa_attach). Untranslated (lc_messages C or
// English), as the interpreter reads every message.
var workerOnlyMessages = []string{
	`terminating background worker "parallel worker" due to administrator command`,
	"could not attach to dynamic shared area",
	"could not map dynamic shared memory segment",
	"invalid magic number in dynamic shared memory segment",
}

// workerOnlyError reports whether msg is one of workerOnlyMessages. A
// message may start with its SQLSTATE (log_error_verbosity = verbose).
func workerOnlyError(msg string) bool {
	if len(msg) > 7 && msg[5] == ':' && msg[6] == ' ' && prefix.IsSQLState(msg[:5]) {
		msg = msg[7:]
	}
	return slices.Contains(workerOnlyMessages, msg)
}

// suspect is an error held in case it was a parallel worker's (see
// error): its events, and what its leader's error would repeat.
type suspect struct {
	pid                int32
	key                string
	time, line, lines  int64
	statement, message string
	evs                []*event.Event
}

// suspectWindow bounds how long, in log time (µs) or in lines for a log
// without times, a suspect waits for its leader's error: the leader
// reports its worker's error as soon as it reads the worker's messages,
// which PostgreSQL 15 logged within milliseconds.
const (
	suspectWindow      = 10_000_000
	suspectWindowLines = 10_000
)

// confirmWorker drops the suspect whose statement and message the
// leader's error e repeats: it was a parallel worker's, its lines are
// counted as such and its session forgotten.
func (in *interpreter) confirmWorker(e *entry) {
	for i, sp := range in.suspects {
		if sp.statement != e.statement || sp.message != e.message || sp.pid == e.pid {
			continue
		}
		in.c.Total -= sp.lines
		in.c.Parsed -= sp.lines
		in.c.skip(SkipParallelWorker, sp.lines)
		if s := in.sessions[sp.key]; s != nil {
			if in.lastSession == s {
				in.lastSession = nil
			}
			s.release()
			delete(in.sessions, sp.key)
		}
		if in.byPID[sp.pid] == sp.key {
			delete(in.byPID, sp.pid)
		}
		in.suspects = slices.Delete(in.suspects, i, i+1)
		return
	}
}

// releaseSuspects emits the events of the suspects that e shows were no
// parallel worker's: another line of the same process, or no leader's
// error within the window; all of them when e is nil (the end).
func (in *interpreter) releaseSuspects(e *entry) {
	kept := in.suspects[:0]
	for _, sp := range in.suspects {
		if e != nil && e.pid != sp.pid && (e.time == 0 || sp.time == 0 || e.time-sp.time <= suspectWindow) && e.line-sp.line <= suspectWindowLines {
			kept = append(kept, sp)
			continue
		}
		in.out = append(in.out, sp.evs...)
	}
	clear(in.suspects[len(kept):])
	in.suspects = kept
}

// sessionError handles an error of a session: see error.
func (in *interpreter) sessionError(e *entry) {
	s := in.session(e)
	in.c.parsed(e.lines)
	state, msg := e.f.sqlstate, e.message
	if state == "" {
		// log_error_verbosity = verbose: "ERROR:  42P01: relation ... "
		if len(msg) > 7 && msg[5] == ':' && msg[6] == ' ' && prefix.IsSQLState(msg[:5]) {
			state, msg = in.keep(msg[:5]), msg[7:]
		}
	}
	if len(msg) > 0 && msg[0] == 'W' {
		in.origin.note(msg)
	}
	msg = in.keep(trimCursor(msg))
	statement := in.keepText(e.statement)
	var failed *event.Event
	// held: the failed statement waits for the boundary with the
	// previous part, which emits it.
	held := false
	switch {
	case s.pending != nil && (e.statement == "" || e.statement == s.pending.Query):
		// log_statement style: the statement was announced, then failed.
		failed, s.pending = s.pending, nil
	case e.statement != "" && s.lastBind != nil && s.lastBind.Query == e.statement:
		// log_min_duration_statement style, extended protocol: the bind
		// was logged, the execute failed and logged nothing else.
		failed, s.lastBind, s.bindEv = s.lastBind, nil, nil
		failed.Params, failed.ParamState = parseParams(s.bindDetail, failed.Query)
		s.bindDetail = ""
		failed.Time = e.time
		failed.Line = e.line
	case e.statement != "" && s.lastParse && s.parseQuery == e.statement:
		// The bind failed: the execution was attempted with parameters
		// the log does not show.
		failed = in.newEvent(event.Execute, e, s)
		failed.Name, failed.Query = s.parseName, s.parseQuery
		if hasPlaceholder(s.parseQuery) {
			failed.ParamState = event.ParamsMissing
		}
		s.lastParse, s.parseName, s.parseQuery = false, "", ""
	case e.statement != "" && s.done.n == len(e.statement) && sketchOf(e.statement) == s.done && hasPlaceholder(e.statement):
		// An error after the execution of this statement was logged
		// with its duration: raised at Sync (a deferred constraint at
		// commit) or in a later fetch from its portal. The execution is
		// counted already; the error is only an error.
		s.done.n = -1
	case e.statement != "" && e.severity == "ERROR":
		in.flush(s)
		failed = in.newEvent(event.Statement, e, s)
		failed.Query = statement
		if in.leading && !s.started {
			// Held for the boundary with the previous part: see
			// leadingErrors.
			failed.Failed = true
			failed.SQLState = state
			failed.SetError(e.severity, msg)
			if in.leadingErrors == nil {
				in.leadingErrors = make(map[string]*event.Event)
			}
			in.leadingErrors[s.key] = failed
			failed, held = nil, true
		}
	}
	s.started = true
	if failed != nil {
		failed.Failed = true
		failed.SQLState = state
		failed.SetError(e.severity, msg)
		in.out = append(in.out, failed)
	}
	ev := in.newEvent(event.Error, e, s)
	ev.SQLState = state
	ev.SetError(e.severity, msg)
	if failed == nil && !held {
		ev.SetOutsideStatement()
	}
	ev.Query = statement
	in.out = append(in.out, ev)
}

// trimCursor drops the " at character 15" the stderr and syslog formats
// add to an error's message when it points into the statement: csvlog and
// jsonlog keep the position apart, and one error must read the same in
// every format.
func trimCursor(msg string) string {
	i := strings.LastIndex(msg, " at character ")
	if i < 0 {
		return msg
	}
	n := msg[i+len(" at character "):]
	if n == "" {
		return msg
	}
	for j := 0; j < len(n); j++ {
		if n[j] < '0' || n[j] > '9' {
			return msg
		}
	}
	return msg[:i]
}

// parseDuration parses "0.123 ms" and returns microseconds and the text
// after the unit.
func parseDuration(s string) (int64, string, bool) {
	if len(s) >= 8 {
		if d, ok := durationWord(loadString64(s, 0)); ok {
			return d, s[8:], true
		}
	}
	i := 0
	var whole int64
	for ; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			break
		}
		whole = whole*10 + int64(d)
	}
	if i == 0 {
		return 0, "", false
	}
	if len(s) >= i+7 && s[i] == '.' && s[i+4:i+7] == " ms" {
		// The server's own "%.3f ms".
		d0, d1, d2 := s[i+1]-'0', s[i+2]-'0', s[i+3]-'0'
		if d0 <= 9 && d1 <= 9 && d2 <= 9 {
			return whole*1000 + int64(d0)*100 + int64(d1)*10 + int64(d2), s[i+7:], true
		}
	}
	var frac int64
	if i < len(s) && s[i] == '.' {
		// Microseconds: three digits, the rest ignored.
		i++
		n := 0
		for ; i < len(s); i++ {
			d := s[i] - '0'
			if d > 9 {
				break
			}
			if n < 3 {
				frac = frac*10 + int64(d)
				n++
			}
		}
		for ; n < 3; n++ {
			frac *= 10
		}
	}
	if len(s)-i < 3 || s[i:i+3] != " ms" {
		return 0, "", false
	}
	return whole*1000 + frac, s[i+3:], true
}

// splitNameQuery splits "<unnamed>: SELECT 1" or "S_1/C_2: SELECT 1".
func splitNameQuery(s string) (name, query string, ok bool) {
	for off := 0; ; {
		i := strings.IndexByte(s[off:], ':')
		if i < 0 {
			return "", "", false
		}
		off += i + 1
		if off < len(s) && s[off] == ' ' {
			return s[:off-1], s[off+1:], true
		}
	}
}

// durationWord reads "0.123 ms", the server's "%.3f ms" under 10 ms,
// from the 8 bytes of w; false for anything else. It is small enough to
// be inlined where durations are read.
func durationWord(w uint64) (int64, bool) {
	// The digits' bytes XOR '0' are each 0-9 exactly when they are digits.
	t := w&0x000000ffffff00ff ^ 0x0000003030300030
	ok := w&0xffffff000000ff00 == 0x736d200000002e00 && t&0x000000f0f0f000f0 == 0 && (t+0x0000000606060006)&0x0000001010100010 == 0
	return int64(t&0xff)*1000 + int64(t>>16&0xff)*100 + int64(t>>24&0xff)*10 + int64(t>>32&0xff), ok
}

// splitProtocol is splitNameQuery then splitPortal, in one pass over the
// name: "<unnamed>: SELECT 1" or "S_1/C_2: SELECT 1".
func splitProtocol(s string) (stmt, portal, query string, ok bool) {
	if len(s) >= len("<unnamed>: ") && s[:len("<unnamed>: ")] == "<unnamed>: " {
		// The unnamed statement, the usual case: a compare of two words.
		return "", "", s[len("<unnamed>: "):], true
	}
	slash := -1
	for i := 0; i+1 < len(s); i++ {
		switch s[i] {
		case '/':
			if slash < 0 {
				slash = i
			}
		case ':':
			if s[i+1] != ' ' {
				continue
			}
			stmt, query = s[:i], s[i+2:]
			if slash >= 0 {
				stmt, portal = s[:slash], s[slash+1:i]
			}
			if stmt == "<unnamed>" {
				stmt = ""
			}
			return stmt, portal, query, true
		}
	}
	return "", "", "", false
}

// splitPortal splits "S_1/C_2" into statement and portal names; the server
// writes "<unnamed>" for the unnamed statement.
func splitPortal(name string) (stmt, portal string) {
	stmt, portal, _ = strings.Cut(name, "/")
	if stmt == "<unnamed>" {
		stmt = ""
	}
	return stmt, portal
}

// hasPrefixFold matches an ASCII keyword case-insensitively: servers of
// different versions capitalize "parameters:" and friends differently.
func hasPrefixFold(s, prefix string) bool {
	if strings.HasPrefix(s, prefix) {
		return true // as written by the servers that use lower case
	}
	// prefix is lower case: most mismatches show in the first byte.
	return len(s) >= len(prefix) && s[0]|0x20 == prefix[0] && strings.EqualFold(s[:len(prefix)], prefix)
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if hasPrefixFold(s, prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
