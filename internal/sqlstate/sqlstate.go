package sqlstate

import (
	"strings"
)

// entry maps the start of a message class to its SQLSTATE. Prefixes are
// of the class, in which quoted values read "…" and numbers N.
type entry struct {
	prefix string
	code   string
}

// table is checked in order: a longer, more specific prefix comes before
// a shorter one it starts with.
var table = []entry{
	// Class 23: integrity constraint violation.
	{`duplicate key value violates unique constraint`, "23505"},
	{`insert or update on table "…" violates foreign key constraint`, "23503"},
	{`update or delete on table "…" violates foreign key constraint`, "23503"},
	{`null value in column "…"`, "23502"},
	{`new row for relation "…" violates check constraint`, "23514"},
	{`check constraint "…" of relation "…" is violated by some row`, "23514"},
	{`conflicting key value violates exclusion constraint`, "23P01"},
	// Class 40: transaction rollback.
	{`could not serialize access`, "40001"},
	{`deadlock detected`, "40P01"},
	// Class 25: invalid transaction state.
	{`current transaction is aborted, commands ignored until end of transaction block`, "25P02"},
	// Class 57 and 55: operator intervention, object not in state.
	{`canceling statement due to lock timeout`, "55P03"},
	{`could not obtain lock on`, "55P03"},
	{`canceling statement due to statement timeout`, "57014"},
	{`canceling statement due to user request`, "57014"},
	{`canceling autovacuum task`, "57014"},
	{`terminating connection due to administrator command`, "57P01"},
	{`terminating connection due to idle-in-transaction timeout`, "25P03"},
	{`terminating connection due to idle-session timeout`, "57P05"},
	{`the database system is starting up`, "57P03"},
	{`the database system is shutting down`, "57P03"},
	{`the database system is in recovery mode`, "57P03"},
	{`the database system is not yet accepting connections`, "57P03"},
	// Class 53: insufficient resources.
	{`sorry, too many clients already`, "53300"},
	{`too many connections for role`, "53300"},
	{`too many connections for database`, "53300"},
	{`remaining connection slots are reserved`, "53300"},
	{`out of memory`, "53200"},
	{`could not extend file`, "53100"},
	// Class 42: syntax error or access rule violation.
	{`syntax error at or near`, "42601"},
	{`syntax error at end of input`, "42601"},
	{`unterminated quoted string`, "42601"},
	{`relation "…" does not exist`, "42P01"},
	{`missing FROM-clause entry for table`, "42P01"},
	{`column "…" of relation "…" does not exist`, "42703"},
	{`column "…" does not exist`, "42703"},
	{`operator does not exist`, "42883"},
	{`relation "…" already exists`, "42P07"},
	{`database "…" already exists`, "42P04"},
	{`role "…" already exists`, "42710"},
	{`schema "…" already exists`, "42P06"},
	{`prepared statement "…" already exists`, "42P05"},
	{`cursor "…" already exists`, "42P03"},
	{`permission denied`, "42501"},
	{`must be owner of`, "42501"},
	{`column "…" is of type`, "42804"},
	{`could not determine data type of parameter`, "42P18"},
	{`column reference "…" is ambiguous`, "42702"},
	{`column "…" must appear in the GROUP BY clause`, "42803"},
	{`aggregate functions are not allowed in`, "42803"},
	// Class 3D, 28, 26, 34: names that do not resolve.
	{`database "…" does not exist`, "3D000"},
	{`password authentication failed for user`, "28P01"},
	{`role "…" does not exist`, "28000"},
	{`no pg_hba.conf entry for`, "28000"},
	{`prepared statement "…" does not exist`, "26000"},
	{`cursor "…" does not exist`, "34000"},
	// Class 22: data exception.
	{`division by zero`, "22012"},
	{`invalid input syntax for type timestamp`, "22007"},
	{`invalid input syntax for type date`, "22007"},
	{`invalid input syntax for type time`, "22007"},
	{`invalid input syntax for type interval`, "22007"},
	{`invalid input syntax for`, "22P02"},
	{`invalid input value for enum`, "22P02"},
	{`date/time field value out of range`, "22008"},
	{`integer out of range`, "22003"},
	{`bigint out of range`, "22003"},
	{`smallint out of range`, "22003"},
	{`numeric field overflow`, "22003"},
	{`value "…" is out of range for type`, "22003"},
	{`value too long for type`, "22001"},
	{`invalid byte sequence for encoding`, "22021"},
	{`invalid regular expression`, "2201B"},
	{`more than one row returned by a subquery used as an expression`, "21000"},
	{`query returned more than one row`, "P0003"},
	{`query returned no rows`, "P0002"},
	// Class 0A: feature not supported.
	{`cached plan must not change result type`, "0A000"},
}

// Class is a message without its values: each quoted name or value
// becomes "…" (in its quotes), each number N, and runs of white space one
// space. Two occurrences of one error on different rows or objects have
// the same class.
func Class(message string) string {
	var b strings.Builder
	b.Grow(len(message))
	space := false
	for i := 0; i < len(message); {
		c := message[i]
		switch {
		case c == '"' || c == '\'':
			end := strings.IndexByte(message[i+1:], c)
			if end < 0 {
				b.WriteString(message[i:])
				return strings.TrimSpace(b.String())
			}
			b.WriteByte(c)
			b.WriteString("…")
			b.WriteByte(c)
			i += end + 2
			space = false
		case c >= '0' && c <= '9' && (i == 0 || !isWordByte(message[i-1])):
			j := i
			for j < len(message) && (message[j] >= '0' && message[j] <= '9' || message[j] == '.') {
				j++
			}
			if j < len(message) && isWordByte(message[j]) {
				// A name that starts with digits: not a number.
				b.WriteString(message[i:j])
			} else {
				b.WriteByte('N')
			}
			i = j
			space = false
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			i++
		default:
			b.WriteByte(c)
			i++
			space = false
		}
	}
	return strings.TrimSpace(b.String())
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// FromMessage is the SQLSTATE of a server error message, written in
// English (lc_messages = 'C'); false for a message the table does not
// know.
func FromMessage(message string) (string, bool) {
	class := Class(message)
	if class == "" {
		return "", false
	}
	for _, e := range table {
		if strings.HasPrefix(class, e.prefix) {
			return e.code, true
		}
	}
	// "function foo(integer) does not exist" and "column x does not
	// exist" name their object without quotes: match their shape.
	switch {
	case strings.HasPrefix(class, "function ") && strings.HasSuffix(class, " does not exist"):
		return "42883", true
	case strings.HasPrefix(class, "column ") && strings.HasSuffix(class, " does not exist"):
		return "42703", true
	case strings.HasSuffix(class, " cannot run inside a transaction block"):
		return "25001", true
	case strings.HasSuffix(class, " is out of range for type"):
		return "22003", true
	}
	return "", false
}
