package logread

import "sort"

// Skip reasons: why lines were read but produced no event. They are part
// of the output (analyze --json), so they never change meaning.
const (
	SkipNoPrefix        = "no matching prefix"         // a line the log_line_prefix does not match
	SkipOrphanLine      = "orphan continuation"        // DETAIL/STATEMENT/tab line with no entry before it
	SkipTruncated       = "truncated at EOF"           // a last line or record cut short
	SkipMalformed       = "malformed record"           // csv/json that does not parse
	SkipCheckpoint      = "checkpoint"                 // checkpoint starting/complete, restartpoints
	SkipAutovacuum      = "autovacuum"                 // automatic vacuum/analyze
	SkipConnection      = "connection received"        // connection received, replication connections
	SkipLockWait        = "lock wait"                  // "still waiting for ShareLock", "acquired"
	SkipTempFile        = "temporary file"             // temporary file: path ...
	SkipBindParse       = "parse/bind"                 // parse/bind logged without anything to use
	SkipDurationAlone   = "duration without statement" // parse/bind durations from log_duration
	SkipPortalFetch     = "portal fetch"               // "execute fetch from": more rows of an execution already counted
	SkipOtherMessage    = "other message"              // a message that carries no statement
	SkipNotice          = "notice/warning"             // NOTICE, WARNING, INFO, DEBUG
	SkipUnsupportedLine = "unsupported line"           // syslog/pgbouncer lines and such
	SkipBlank           = "blank line"                 // an empty line where a csv/json record was expected
)

// Counters accounts for every physical line read: each is either parsed
// (it contributed to an event or to the state that builds one) or skipped
// with a reason. Total == Parsed + sum(Skipped) always holds.
type Counters struct {
	Total   int64
	Parsed  int64
	Skipped map[string]int64
}

func newCounters() *Counters {
	return &Counters{Skipped: make(map[string]int64)}
}

func (c *Counters) parsed(n int64) {
	c.Total += n
	c.Parsed += n
}

func (c *Counters) skip(reason string, n int64) {
	c.Total += n
	c.Skipped[reason] += n
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
