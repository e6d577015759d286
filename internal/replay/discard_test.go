package replay

import (
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestDiscardAllForgetsPrepared: a pooler sends DISCARD ALL between its
// clients, in the middle of a recorded session, and the SQL-level
// DEALLOCATE name or ALL also drops the statements prepared through the
// protocol (Parse). The replay runs them on the target, which forgets
// the session's prepared statements as the source did: the replay
// forgets them too, and prepares each again (a Parse of the same name and
// query) at its next execution rather than executing a statement the
// target no longer has (26000, prepared statement does not exist). A
// DISCARD ALL that fails (inside a transaction block) drops nothing.
func TestDiscardAllForgetsPrepared(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	var l testLog
	ms := time.Millisecond
	s := l.session("postgres", "postgres", 0)
	at := 10 * ms
	step := func() time.Duration { at += 10 * ms; return at }
	const a, b = "SELECT $1::int AS a", "SELECT $1::text AS b"
	s.execute(step(), ms, "S_1", a, "1")
	s.execute(step(), ms, "S_2", b, "x")
	s.query(step(), ms, "DISCARD ALL")
	s.execute(step(), ms, "S_1", a, "2")
	s.execute(step(), ms, "S_2", b, "y")
	s.query(step(), ms, `DEALLOCATE "S_1"`)
	s.execute(step(), ms, "S_1", a, "3")
	s.execute(step(), ms, "S_2", b, "z")
	s.query(step(), ms, "DEALLOCATE ALL")
	s.execute(step(), ms, "S_1", a, "4")
	s.execute(step(), ms, "S_2", b, "w")
	// Inside a transaction block DISCARD ALL fails, on the target as
	// in the original: the statements stay prepared.
	s.query(step(), ms, "BEGIN")
	s.query(step(), ms, "DISCARD ALL")
	s.query(step(), ms, "ROLLBACK")
	s.execute(step(), ms, "S_1", a, "5")
	s.disconnect(step())
	path := l.write(t)
	res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 0})
	// 9 executions and 6 statements, of which 1 fails.
	if res.Statements.Executed != 14 {
		t.Errorf("executed %d statements, want 14 (skipped %v)", res.Statements.Executed, res.Statements.Skipped)
	}
	// The DISCARD ALL inside the block fails, as it did in the
	// original (a log shows only the statement): nothing else.
	if res.ErrorsBySQLState["26000"] != 0 || res.Statements.Failed != 1 || res.ErrorsBySQLState["25001"] != 1 {
		t.Errorf("failed %d, errors %v: want only the DISCARD ALL inside the block (25001)", res.Statements.Failed, res.ErrorsBySQLState)
	}
}
