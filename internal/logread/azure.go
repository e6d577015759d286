package logread

import (
	"bytes"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// Azure Database for PostgreSQL's diagnostic logs, as diagnostic settings
// write them to storage or to an Event Hub (where a message holds a
// "records" array of them) and as Log Analytics exports them (flat, with
// typed column names: "errorLevel_s", "Message"):
//
//	{"time":"2023-02-27T22:21:11.830Z","category":"PostgreSQLLogs","properties":{"timestamp":"2023-02-27 22:21:11.823 UTC","processId":2030,"errorLevel":"LOG","sqlerrcode":"00000","message":"2023-02-27 22:21:11.823 UTC [2030] [user=postgres,db=postgres,app=pgbench] LOG:  duration: ...","detail":"parameters: ..."}}
//	{"time":"2023-02-27T23:21:40Z","properties":{"prefix":"2023-02-27 23:21:40 UTC-63fd3b04.cf0-","message":"duration: 0.000 ms  statement: ...","errorLevel":"LOG"}}
//
// A record is one line of the server's stderr log, with some of its
// fields apart: the message holds the server's own log_line_prefix
// (Flexible Server), or the prefix is a property of its own (Single
// Server). The prefix is inferred from the first records (see
// jsonReader.sniff). A DETAIL, CONTEXT or STATEMENT is a property of its
// record, or a record of its own after it.
//
// azureEnvelope gives the stderr reader the lines each record stands for,
// with the record's fields: what the record says (its time, process,
// SQLSTATE, ...), and what the prefix in its line says where the record
// says nothing. The stderr reader joins them as it joins a stderr log's.

// azureSlot maps Azure's names: properties of diagnostic records, and Log
// Analytics' columns, whose names end in their type ("errorLevel_s",
// "processId_d") and whose case varies between tables.
func azureSlot(k []byte) int {
	if len(k) > 64 {
		return -1
	}
	var buf [64]byte
	n := copy(buf[:], k)
	b := buf[:n]
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	if n > 2 && b[n-2] == '_' && (b[n-1] == 's' || b[n-1] == 'd' || b[n-1] == 't' || b[n-1] == 'g') {
		b = b[:n-2]
	}
	switch string(b) {
	case "errorlevel":
		return jSeverity
	case "processid":
		return jPID
	case "sqlerrcode", "sqlerrorcode":
		return jSQLState
	case "message":
		return jMessage
	case "detail":
		return jDetail
	case "context":
		return jContext
	case "statement":
		return jStatement
	case "prefix":
		return jPrefix
	case "timestamp":
		return jTime
	case "time", "timegenerated", "timegenerated [utc]":
		return jLogTime
	case "username", "user":
		return jUser
	case "databasename", "dbname", "database":
		return jDatabase
	case "applicationname":
		return jApplication
	case "sessionid":
		return jSession
	}
	return -1
}

// azureLine is the stderr line an Azure record stands for: its message,
// when the message starts with the server's prefix (Flexible Server), or
// the prefix property, the severity and the message (Single Server). It
// is valid until the next call.
func (jr *jsonReader) azureLine(o *jsonObj) []byte {
	sev, ok := jr.bytesOf(o.v[jSeverity])
	if !ok || len(sev) == 0 {
		return nil
	}
	sev = bytes.Clone(sev)
	msg, ok := jr.bytesOf(o.v[jMessage])
	if !ok {
		return nil
	}
	jr.azLine = jr.azLine[:0]
	if o.v[jPrefix].set {
		p, ok := jr.bytesOf(o.v[jPrefix])
		if !ok {
			return nil
		}
		jr.azLine = append(jr.azLine, p...)
		jr.azLine = append(jr.azLine, sev...)
		jr.azLine = append(jr.azLine, ":  "...)
		msg, _ = jr.bytesOf(o.v[jMessage])
		return append(jr.azLine, msg...)
	}
	if i := prefix.SeverityIndex(msg); i >= 0 && bytes.HasPrefix(msg[i:], sev) {
		return append(jr.azLine, msg...)
	}
	jr.azLine = append(jr.azLine, sev...)
	jr.azLine = append(jr.azLine, ":  "...)
	msg, _ = jr.bytesOf(o.v[jMessage])
	return append(jr.azLine, msg...)
}

// azureEnvelope gives the stderr reader the lines of Azure's records
// (see the comment at the top).
type azureEnvelope struct {
	jr     *jsonReader
	fields prefix.Fields
	out    []outLine
	arena  lineArena
}

func (e *azureEnvelope) err() error { return e.jr.cb.err }

// next implements lineSource.
func (e *azureEnvelope) next() (outLine, bool) {
	jr := e.jr
	for len(e.out) == 0 {
		rec := jr.nextRecord()
		if rec.st == frameEOF {
			return outLine{}, false
		}
		if kind, o := jr.record(rec, jsonAzure); kind == recAzure && !e.lines(o, rec) {
			jr.skip(rec, SkipMalformed)
		}
	}
	l := e.out[0]
	e.out = e.out[1:]
	if len(e.out) == 0 {
		e.out = e.out[:0:0]
	}
	return l, true
}

// lines makes the lines of one record: its message (and the lines of a
// message that spans several) with the record's fields, then for a
// message that starts an entry the DETAIL, CONTEXT and STATEMENT
// properties, each a line as the server writes them. Only the first line
// accounts for the record's physical lines. It reports false for a record
// whose values are not of their type (a time that does not parse, ...).
func (e *azureEnvelope) lines(o *jsonObj, rec jsonRec) bool {
	jr := e.jr
	var cur entry
	if !jr.fill(&cur, o) {
		return false
	}
	msg := []byte(cur.message)
	if line := jr.azureLine(o); len(line) > 0 {
		rest := line
		if jr.inPrefix != nil {
			if r, ok := jr.inPrefix.Match(line, &e.fields); ok {
				// What the record leaves out, the server's prefix may say.
				f := &e.fields
				rest = r
				if cur.user == "" {
					cur.user = jr.intern.get(f.User)
				}
				if cur.database == "" {
					cur.database = jr.intern.get(f.Database)
				}
				if cur.application == "" {
					cur.application = jr.intern.get(f.Application)
				}
				if cur.session == "" {
					cur.session = jr.sessions.get(f.Session)
				}
				if cur.pid == 0 {
					cur.pid = pidOf(f.PID, f.Session)
				}
				if cur.sqlstate == "" {
					cur.sqlstate = jr.intern.get(f.SQLState)
				}
				if cur.time == 0 && len(f.Time) > 0 {
					cur.time, _ = jr.times.parse(f.Time)
				}
			}
		}
		if i := prefix.SeverityIndex(rest); i >= 0 {
			if _, m, ok := prefix.SplitSeverity(rest[i:]); ok {
				msg = m
			}
		}
	}
	f := &lineFields{pid: cur.pid, session: cur.session, user: cur.user, database: cur.database,
		application: cur.application, sqlstate: cur.sqlstate}
	// The record's severity, whatever the line says before its message.
	first := len(e.out)
	e.text(cur.severity, msg, f, cur.time)
	e.out[first].first, e.out[first].span = rec.line, rec.lines
	if sev := prefix.SeverityOf([]byte(cur.severity)); sev != prefix.SevNone && sev < prefix.SevDetail {
		for _, p := range [...]struct{ sev, v string }{{"DETAIL", cur.detail}, {"CONTEXT", cur.context}, {"STATEMENT", cur.statement}} {
			if p.v != "" {
				e.text(p.sev, []byte(p.v), f, cur.time)
			}
		}
	}
	for i := first; i < len(e.out); i++ {
		if i > first {
			e.out[i].first = rec.line
		}
	}
	return true
}

// text adds "SEV:  text" as the lines the server writes for it: a newline
// in the text starts a line with a tab.
func (e *azureEnvelope) text(sev string, text []byte, f *lineFields, us int64) {
	line, rest, more := bytes.Cut(text, []byte{'\n'})
	e.out = append(e.out, outLine{b: e.arena.join([]byte(sev), []byte(":  "), line), f: f, us: us})
	for more {
		line, rest, more = bytes.Cut(rest, []byte{'\n'})
		e.out = append(e.out, outLine{b: e.arena.join([]byte{'\t'}, line)})
	}
}
