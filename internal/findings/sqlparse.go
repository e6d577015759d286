package findings

import (
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// classOf is what q is, as package fingerprint's classifier says (one
// parse per distinct text, shared with every other package that asks);
// nil when q is not one statement that parses.
func classOf(q string) *fingerprint.Class {
	c, err := fingerprint.Statement(q)
	if err != nil {
		return nil
	}
	return c
}

// insertShape is what an INSERT ... VALUES says about its target.
type insertShape struct {
	Schema, Table string
	// Columns are the named target columns; nil when the statement
	// lists none (values go to the table's columns in order).
	Columns []string
	// Rows is the number of VALUES rows; 0 for INSERT ... SELECT.
	Rows int
	// values are the first VALUES row's values.
	values []fingerprint.Value
}

// Qualified is the table as the statement names it.
func (s *insertShape) Qualified() string {
	if s.Schema != "" {
		return s.Schema + "." + s.Table
	}
	return s.Table
}

// parseInsert returns the shape of an INSERT statement, or nil for any
// other statement.
func parseInsert(q string) *insertShape {
	c := classOf(q)
	if c == nil || c.Insert == nil {
		return nil
	}
	in := c.Insert
	return &insertShape{Schema: in.Rel.Schema, Table: in.Rel.Name, Columns: in.Columns, Rows: in.Rows, values: in.Values}
}

// value returns the text of the i-th value of the first row: a literal, or
// the logged parameter it refers to. ok is false for anything else (an
// expression, DEFAULT, a NULL).
func (s *insertShape) value(i int, params []*string) (string, bool) {
	if i >= len(s.values) {
		return "", false
	}
	v := s.values[i]
	if v.Param != 0 {
		k := v.Param - 1
		if k < 0 || k >= len(params) || params[k] == nil {
			return "", false
		}
		return *params[k], true
	}
	return v.Literal, v.IsLiteral
}

// statementKind is "select", "insert", "update", "delete" or "".
func statementKind(c *fingerprint.Class) string {
	if c == nil {
		return ""
	}
	switch c.Kind {
	case fingerprint.KindSelect:
		return "select"
	case fingerprint.KindInsert:
		return "insert"
	case fingerprint.KindUpdate:
		return "update"
	case fingerprint.KindDelete:
		return "delete"
	}
	return ""
}

// Queue patterns.
const (
	patternSelectForUpdate = "SELECT ... LIMIT n FOR UPDATE without SKIP LOCKED"
	patternUpdateSubquery  = "UPDATE/DELETE of rows picked by a subquery with LIMIT, without SKIP LOCKED"
)

// queuePattern recognizes a job-queue poll that makes concurrent pollers
// wait for each other: a top-level SELECT with LIMIT that locks rows and
// waits for locked ones, or an UPDATE or DELETE whose rows come from a
// subquery with LIMIT that does not skip locked rows (locking or not: an
// unlocked one lets two workers claim the same rows, a locking one queues
// them). NOWAIT is not a wait, so it does not count. The classifier
// (fingerprint.Class.Queue) recognizes it.
func queuePattern(q string) string {
	c := classOf(q)
	if c == nil {
		return ""
	}
	switch c.Queue {
	case fingerprint.QueueSelectLimitLocks:
		return patternSelectForUpdate
	case fingerprint.QueueModifyLimitSubquery:
		return patternUpdateSubquery
	}
	return ""
}
