package logread

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
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

	// foreign is set to the language of a translated message, when seen.
	foreign     string
	foreignLine int64
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
	lastBind *event.Event
	// started is set once the session logged a statement in this log
	// (or part of a split log).
	started bool
	// lastParse is the last "parse" line not yet followed by a bind: an
	// error in bind (planning of the unnamed statement folds constants
	// with the parameter values) leaves only the parse as a trace.
	lastParse *event.Event
}

const eventSlab = 256

func newInterpreter(c *Counters) *interpreter {
	return &interpreter{
		c:        c,
		sessions: make(map[string]*sessionState),
		byPID:    make(map[int32]string),
		gen:      make(map[int32]int),
	}
}

// session finds or creates the state of e's session.
func (in *interpreter) session(e *entry) *sessionState {
	if s := in.lastSession; s != nil && e.session != "" && e.session == s.key {
		in.update(s, e)
		return s
	}
	key := e.session
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
		if old, ok := in.byPID[e.pid]; ok && old != key && e.session != "" {
			in.drop(old)
		}
		in.byPID[e.pid] = key
	}
	in.lastSession = s
	in.update(s, e)
	return s
}

func (in *interpreter) update(s *sessionState, e *entry) {
	// The prefix shows "[unknown]" before the startup packet is read.
	if e.user != "" && e.user != "[unknown]" {
		s.user = e.user
	}
	if e.database != "" && e.database != "[unknown]" {
		s.database = e.database
	}
	if e.application != "" && e.application != "[unknown]" {
		s.application = e.application
	}
}

func (in *interpreter) drop(key string) {
	if s := in.sessions[key]; s != nil {
		if in.lastSession == s {
			in.lastSession = nil
		}
		in.flush(s)
		delete(in.sessions, key)
	}
}

func (in *interpreter) newEvent(k event.Kind, e *entry, s *sessionState) *event.Event {
	if len(in.slab) == 0 {
		in.slab = make([]event.Event, eventSlab)
	}
	ev := &in.slab[0]
	in.slab = in.slab[1:]
	*ev = event.Event{
		Kind:        k,
		Time:        e.time,
		Session:     s.key,
		PID:         e.pid,
		User:        s.user,
		Database:    s.database,
		Application: s.application,
		Duration:    event.NoDuration,
		Line:        e.line,
	}
	return ev
}

// flush emits the session's pending statement, which got no duration.
func (in *interpreter) flush(s *sessionState) {
	if s.pending != nil {
		in.out = append(in.out, s.pending)
		s.pending = nil
	}
}

// takePending returns the statements still waiting for a duration, by
// session, instead of emitting them: the end of a part of a split log.
func (in *interpreter) takePending() map[string]*event.Event {
	m := make(map[string]*event.Event)
	for _, s := range in.sessions {
		if s.pending != nil {
			m[s.key] = s.pending
			s.pending = nil
		}
	}
	return m
}

// finishAll emits what is still pending at the end of the log.
func (in *interpreter) finishAll() {
	for _, s := range in.sessions {
		in.flush(s)
	}
}

// add interprets one entry, appending the events it completes to in.out
// and counting its lines.
func (in *interpreter) add(e *entry) {
	switch e.severity {
	case "LOG":
		in.log(e)
	case "ERROR", "FATAL", "PANIC":
		in.error(e)
	case "WARNING", "NOTICE", "INFO", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4", "DEBUG5":
		in.c.skip(SkipNotice, e.lines)
	default:
		in.c.skip(SkipOtherMessage, e.lines)
	}
}

func (in *interpreter) log(e *entry) {
	msg := e.message
	var dur int64 = event.NoDuration
	if rest, ok := cutPrefixFold(msg, "duration: "); ok {
		// "duration: 0.123 ms  statement: SELECT 1" or, from log_duration,
		// "duration: 0.123 ms" alone.
		d, after, ok := parseDuration(rest)
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
	switch {
	case hasPrefixFold(msg, "statement: "):
		// "statement: SELECT 1"
		s := in.session(e)
		ev := in.newEvent(event.Statement, e, s)
		ev.Query = msg[len("statement: "):]
		in.statement(e, s, ev, dur)
	case hasPrefixFold(msg, "execute "):
		// "execute <unnamed>: SELECT $1" / "execute S_1/C_2: ..." /
		// "execute fetch from <unnamed>/C_1: ..."
		rest := msg[len("execute "):]
		if hasPrefixFold(rest, "fetch from ") {
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
	case hasPrefixFold(msg, "parse "):
		// "duration: 0.05 ms  parse S_1: SELECT $1"
		s, ev, ok := in.protocolEvent(e, event.Prepare, msg[len("parse "):])
		if !ok {
			return
		}
		ev.Duration = dur
		if dur >= 0 {
			ev.Time -= dur
		}
		in.c.parsed(e.lines)
		in.out = append(in.out, ev)
		s.lastParse = ev
	case hasPrefixFold(msg, "bind "):
		// "duration: 0.02 ms  bind S_1: SELECT $1" + DETAIL parameters.
		// Not an execution; remembered in case the execute fails.
		s, ev, ok := in.protocolEvent(e, event.Execute, msg[len("bind "):])
		if !ok {
			return
		}
		s.lastBind, s.lastParse = ev, nil
		in.c.parsed(e.lines)
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
	case strings.HasPrefix(msg, "process ") && (strings.Contains(msg, " still waiting for ") || strings.Contains(msg, " acquired ")):
		in.c.skip(SkipLockWait, e.lines)
	default:
		if lang := foreignLogMessage([]byte(msg)); lang != "" && in.foreign == "" {
			in.foreign, in.foreignLine = lang, e.line
		}
		in.c.skip(SkipOtherMessage, e.lines)
	}
}

// protocolEvent builds the event of a "parse", "bind" or "execute" line,
// whose text is "<name>[/<portal>]: <query>", with the parameters of the
// DETAIL for an Execute. It counts the line as skipped when the text has
// another shape.
func (in *interpreter) protocolEvent(e *entry, k event.Kind, text string) (*sessionState, *event.Event, bool) {
	name, query, ok := splitNameQuery(text)
	if !ok {
		in.c.skip(SkipOtherMessage, e.lines)
		return nil, nil, false
	}
	s := in.session(e)
	ev := in.newEvent(k, e, s)
	ev.Name, ev.Portal = splitPortal(name)
	ev.Query = query
	if k == event.Execute {
		ev.Params, ev.ParamState = parseParams(e.detail, query)
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
	in.flush(s)
	if dur >= 0 {
		ev.Duration = dur
		ev.Time -= dur
		in.out = append(in.out, ev)
		s.lastBind, s.lastParse = nil, nil
		return
	}
	s.pending = ev
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
		in.c.skip(SkipDurationAlone, e.lines)
		return
	}
	s.pending.Duration = dur
	in.c.parsed(e.lines)
	in.flush(s)
}

func (in *interpreter) connect(e *entry, msg string) {
	if e.session == "" {
		// Without %c, each connection on a process is a new session.
		in.gen[e.pid]++
		if old, ok := in.byPID[e.pid]; ok {
			in.drop(old)
		}
		delete(in.byPID, e.pid)
	}
	// "connection authorized: user=app database=shop application_name=web"
	// gives what the prefix may lack.
	if v := field(msg, "user="); v != "" {
		e.user = v
	}
	if v := field(msg, "database="); v != "" {
		e.database = v
	}
	if v := field(msg, "application_name="); v != "" {
		e.application = v
	}
	s := in.session(e)
	in.c.parsed(e.lines)
	in.out = append(in.out, in.newEvent(event.Connect, e, s))
}

func (in *interpreter) disconnect(e *entry) {
	// "disconnection: session time: 0:00:01.234 user=app database=shop host=[local]"
	if e.user == "" {
		e.user = field(e.message, "user=")
	}
	if e.database == "" {
		e.database = field(e.message, "database=")
	}
	s := in.session(e)
	in.c.parsed(e.lines)
	in.flush(s)
	in.out = append(in.out, in.newEvent(event.Disconnect, e, s))
	delete(in.sessions, s.key)
	in.lastSession = nil
	if in.byPID[e.pid] == s.key {
		delete(in.byPID, e.pid)
	}
}

// error handles ERROR, FATAL and PANIC. The failing statement, if any, is
// emitted first with Failed set, then the Error event.
func (in *interpreter) error(e *entry) {
	s := in.session(e)
	in.c.parsed(e.lines)
	state, msg := e.sqlstate, e.message
	if state == "" {
		// log_error_verbosity = verbose: "ERROR:  42P01: relation ... "
		if len(msg) > 7 && msg[5] == ':' && msg[6] == ' ' && isSQLState(msg[:5]) {
			state, msg = msg[:5], msg[7:]
		}
	}
	var failed *event.Event
	switch {
	case s.pending != nil && (e.statement == "" || e.statement == s.pending.Query):
		// log_statement style: the statement was announced, then failed.
		failed, s.pending = s.pending, nil
	case e.statement != "" && s.lastBind != nil && s.lastBind.Query == e.statement:
		// log_min_duration_statement style, extended protocol: the bind
		// was logged, the execute failed and logged nothing else.
		failed, s.lastBind = s.lastBind, nil
		failed.Time = e.time
		failed.Line = e.line
	case e.statement != "" && s.lastParse != nil && s.lastParse.Query == e.statement:
		// The bind failed: the execution was attempted with parameters
		// the log does not show.
		p := s.lastParse
		s.lastParse = nil
		failed = in.newEvent(event.Execute, e, s)
		failed.Name, failed.Query = p.Name, p.Query
		if hasPlaceholder(p.Query) {
			failed.ParamState = event.ParamsMissing
		}
	case e.statement != "" && e.severity == "ERROR":
		in.flush(s)
		failed = in.newEvent(event.Statement, e, s)
		failed.Query = e.statement
		if in.leading && !s.started {
			// Held for the boundary with the previous part: see
			// leadingErrors.
			failed.Failed = true
			failed.Severity, failed.SQLState, failed.Message = e.severity, state, msg
			if in.leadingErrors == nil {
				in.leadingErrors = make(map[string]*event.Event)
			}
			in.leadingErrors[s.key] = failed
			failed = nil
		}
	}
	s.started = true
	if failed != nil {
		failed.Failed = true
		failed.Severity, failed.SQLState, failed.Message = e.severity, state, msg
		in.out = append(in.out, failed)
	}
	ev := in.newEvent(event.Error, e, s)
	ev.Severity, ev.SQLState, ev.Message = e.severity, state, msg
	ev.Query = e.statement
	in.out = append(in.out, ev)
}

func isSQLState(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// parseDuration parses "0.123 ms" and returns microseconds and the text
// after the unit.
func parseDuration(s string) (int64, string, bool) {
	i := 0
	var whole, frac int64
	var fracDigits int
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		whole = whole*10 + int64(s[i]-'0')
		i++
	}
	if i == 0 {
		return 0, "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if fracDigits < 3 {
				frac = frac*10 + int64(s[i]-'0')
				fracDigits++
			}
			i++
		}
	}
	for ; fracDigits < 3; fracDigits++ {
		frac *= 10
	}
	rest, ok := strings.CutPrefix(s[i:], " ms")
	if !ok {
		return 0, "", false
	}
	return whole*1000 + frac, rest, true
}

// splitNameQuery splits "<unnamed>: SELECT 1" or "S_1/C_2: SELECT 1".
func splitNameQuery(s string) (name, query string, ok bool) {
	i := strings.Index(s, ": ")
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+2:], true
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

// field returns the value of "key=" in a space-separated message.
func field(msg, key string) string {
	i := strings.Index(msg, key)
	if i < 0 || i > 0 && msg[i-1] != ' ' {
		return ""
	}
	v := msg[i+len(key):]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
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

var _ = bytes.MinRead
