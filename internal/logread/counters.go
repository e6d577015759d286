package logread

import "sort"

// Skip reasons: why lines were read but produced no event. They are part
// of the output (analyze --json), so they never change meaning.
const (
	SkipNoPrefix        = "no matching prefix"         // a line the log_line_prefix does not match
	SkipOrphanLine      = "orphan continuation"        // DETAIL/STATEMENT/tab line with no entry before it
	SkipTruncated       = "truncated at EOF"           // a csv or json record cut short at EOF, or a line too long to hold
	SkipMalformed       = "malformed record"           // csv/json that does not parse
	SkipCheckpoint      = "checkpoint"                 // checkpoint starting/complete, restartpoints
	SkipAutovacuum      = "autovacuum"                 // automatic vacuum/analyze
	SkipConnection      = "connection received"        // connection received, replication connections
	SkipLockWait        = "lock wait"                  // "still waiting for ShareLock", "acquired"
	SkipTempFile        = "temporary file"             // temporary file: path ...
	SkipDurationAlone   = "duration without statement" // parse/bind durations from log_duration
	SkipPortalFetch     = "portal fetch"               // "execute fetch from": more rows of an execution already counted
	SkipOtherMessage    = "other message"              // a message that carries no statement
	SkipNotice          = "notice/warning"             // NOTICE, WARNING, INFO, DEBUG
	SkipUnsupportedLine = "unsupported line"           // syslog/pgbouncer lines and such
	SkipBlank           = "blank line"                 // an empty line (or spaces only)
	SkipOtherProgram    = "other program"              // another program's lines in a syslog file
	// SkipUnprefixed is what the server itself writes to its stderr
	// without the log_line_prefix: the memory-context dump before an
	// "out of memory" error, an assertion's TRAP line and backtrace.
	SkipUnprefixed = "server output without prefix"
	// SkipPlanAlone is an auto_explain plan of no statement the log has:
	// a statement under log_min_duration_statement, one inside a function
	// (auto_explain.log_nested_statements), or one whose plan came before
	// the first plan of the log showed it has plans.
	SkipPlanAlone = "plan without statement"
	// SkipParallelWorker is a parallel worker's error, which its leader
	// logs again in its own session (CONTEXT: parallel worker).
	SkipParallelWorker = "parallel worker error"
)

// unparseable are the skip reasons that mean the reader could not read a
// line it should have: a wrong prefix, a damaged record, a format it does
// not know. The other reasons are lines read and set aside on purpose
// (checkpoints, connections, autovacuum, lock waits, ...), or the
// harmless leftovers of how logs are written (a last line cut while the
// server was writing it, blank lines, other programs' syslog lines).
var unparseable = map[string]bool{
	SkipNoPrefix:        true,
	SkipOrphanLine:      true,
	SkipMalformed:       true,
	SkipUnsupportedLine: true,
}

// Unparseable reports whether lines skipped for reason are lines the
// reader failed to read, rather than lines it had no use for. A run whose
// log is mostly unparseable did not read the log it was given.
func Unparseable(reason string) bool { return unparseable[reason] }

// Sample is the first line skipped for a reason: where, and its text
// (cut to sampleLen bytes).
type Sample struct {
	Line int64
	Text string
}

const sampleLen = 200

// Counters accounts for every physical line read: each is either parsed
// (it contributed to an event or to the state that builds one) or skipped
// with a reason. Total == Parsed + sum(Skipped) always holds.
type Counters struct {
	Total   int64
	Parsed  int64
	Skipped map[string]int64
	// Samples holds, for each unparseable reason (see Unparseable), the
	// first line skipped for it, so that a message can show it.
	Samples map[string]Sample
}

func newCounters() *Counters {
	return &Counters{Skipped: make(map[string]int64), Samples: make(map[string]Sample)}
}

func (c *Counters) parsed(n int64) {
	c.Total += n
	c.Parsed += n
}

func (c *Counters) skip(reason string, n int64) {
	c.Total += n
	c.Skipped[reason] += n
}

// skipSample is skip for a line the reader could not read: the first of
// each reason is kept as a sample.
func (c *Counters) skipSample(reason string, n, line int64, text []byte) {
	c.skip(reason, n)
	if _, ok := c.Samples[reason]; !ok {
		if len(text) > sampleLen {
			text = text[:sampleLen]
		}
		c.Samples[reason] = Sample{Line: line, Text: string(text)}
	}
}

// Unparseable returns how many lines were skipped for unparseable reasons.
func (c *Counters) Unparseable() int64 {
	var n int64
	for k, v := range c.Skipped {
		if unparseable[k] {
			n += v
		}
	}
	return n
}

// SkippedTotal returns the sum of all skipped lines.
func (c *Counters) SkippedTotal() int64 {
	var n int64
	for _, v := range c.Skipped {
		n += v
	}
	return n
}

// Add adds o's counts to c.
func (c *Counters) Add(o *Counters) {
	c.Total += o.Total
	c.Parsed += o.Parsed
	for k, v := range o.Skipped {
		// The parts of a split log may move a count between parts.
		if c.Skipped[k] += v; c.Skipped[k] == 0 {
			delete(c.Skipped, k)
		}
	}
	for k, v := range o.Samples {
		if c.Samples == nil {
			c.Samples = make(map[string]Sample)
		}
		// The parts of a split log are added in order: the first part's
		// sample is the first.
		if _, ok := c.Samples[k]; !ok {
			c.Samples[k] = v
		}
	}
}

// Reasons returns the skip reasons present, most lines first.
func (c *Counters) Reasons() []string {
	r := make([]string, 0, len(c.Skipped))
	for k := range c.Skipped {
		r = append(r, k)
	}
	sort.Slice(r, func(i, j int) bool {
		if c.Skipped[r[i]] != c.Skipped[r[j]] {
			return c.Skipped[r[i]] > c.Skipped[r[j]]
		}
		return r[i] < r[j]
	})
	return r
}
