package logread

import "github.com/pgrehearse/pgrehearse/internal/logread/prefix"

// entry is one log message with its secondary fields (DETAIL, CONTEXT,
// STATEMENT) joined to it: the unit that every format reader produces and
// the interpreter turns into events. Format readers know about bytes and
// quoting; only the interpreter knows what messages mean.
type entry struct {
	time        int64 // µs since the Unix epoch; 0 when the log has no time
	pid         int32
	session     string // %c / session_id; empty when not logged
	user        string
	database    string
	application string
	severity    string // LOG, ERROR, FATAL, ... as written (English only)
	sqlstate    string
	message     string
	detail      string
	context     string
	statement   string // STATEMENT: line, csvlog query, jsonlog statement
	// worker: a parallel worker's line (csvlog's and jsonlog's
	// backend_type or leader_pid say so; the stderr reader sets
	// lineFields.worker instead).
	worker bool

	line  int64 // first physical line of the entry, 1-based
	lines int64 // physical lines the entry spans, for the line counters

	// f, when not nil, holds the session, user, database, application and
	// SQLSTATE instead of the fields above: the stderr reader points it at
	// the fields it keeps for each text of the prefix, which many lines
	// share (lineFields.shared). It writes one pointer per line instead of
	// five strings, each of which would go through the collector's write
	// barrier while it marks. The interpreter reads f, which it points at
	// a copy of the fields above when a reader left it nil.
	f *lineFields
	// sev, when not prefix.SevNone, is the severity instead of the string
	// above: the stderr reader knows it as a number.
	sev prefix.Severity
}

// formatReader reads entries of one log format. next returns the next
// entry, valid until the following call, or io.EOF after the last one. Lines that cannot form an entry (garbage,
// a prefix that does not match, a record cut at EOF) are counted on the
// counters given to the reader's constructor and never returned.
type formatReader interface {
	next() (*entry, error)
}
