package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// timedStatement is one statement of a session of a timed log: logged
// at ms after the log's start, having run for 0.1 ms.
type timedStatement struct {
	session int
	ms      int
	sql     string
}

// writeTimedLog writes a stderr log (replayTestPrefix) of sessions of
// user u1 in database db1 whose statements are logged at the times
// given, interleaved in time order: each session connects just before
// its first statement and disconnects just after its last.
func writeTimedLog(t *testing.T, stmts []timedStatement) string {
	t.Helper()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	type line struct {
		ms   float64
		text string
	}
	var lines []line
	first, last := map[int]int{}, map[int]int{}
	for _, s := range stmts {
		if f, ok := first[s.session]; !ok || s.ms < f {
			first[s.session] = s.ms
		}
		last[s.session] = max(last[s.session], s.ms)
		lines = append(lines, line{float64(s.ms), fmt.Sprintf("LOG:  duration: 0.100 ms  statement: %s", s.sql)})
	}
	for s := range first {
		lines = append(lines, line{float64(first[s]) - 0.5, "LOG:  connection authorized: user=u1 database=db1 application_name=app"},
			line{float64(last[s]) + 0.5, "LOG:  disconnection: session time: 0:00:01.000 user=u1 database=db1 host=[local]"})
	}
	// The session of each line, again: lines of one time keep their
	// order (connection, statements, disconnection).
	sessOf := make([]int, 0, len(lines))
	for _, s := range stmts {
		sessOf = append(sessOf, s.session)
	}
	for s := range first {
		sessOf = append(sessOf, s, s)
	}
	idx := make([]int, len(lines))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case lines[a].ms < lines[b].ms:
			return -1
		case lines[a].ms > lines[b].ms:
			return 1
		}
		return 0
	})
	var b []byte
	for _, i := range idx {
		pid := 3000 + sessOf[i]
		when := at.Add(time.Duration(lines[i].ms * float64(time.Millisecond)))
		b = fmt.Appendf(b, "%s [%d] u1@db1/app 65e1a5e0.%x %s\n", when.Format("2006-01-02 15:04:05.000 MST"), pid, pid, lines[i].text)
	}
	return writeFile(t, filepath.Join(t.TempDir(), "postgresql.log"), b)
}

// testSyncLoad is issue 58's acceptance test of --sync load, on c (with
// role u1 and database db1, which it adds tables to).
//
// A writer inserts a row every 100 ms and a reader counts the rows 50 ms
// after each insert, replayed onto a target whose trigger makes every
// insert take 150 ms (a candidate slower for the writer). In object mode
// (and so in rehearse --sync object) each count waits for the insert
// logged before it: the reader is throttled by the writer's lateness,
// which the application's reader never was. In load mode (rehearse's
// default) the reader waits for nothing.
//
// And what the order is for still holds in load mode: a child row
// inserted right after its parent, by another session, at speed 0 while
// the parent's session is held up: no foreign key error, where --sync
// off has them.
func testSyncLoad(t *testing.T, c *pgcluster.Cluster) {
	mustExec(t, c, "db1", `CREATE TABLE feed (id int PRIMARY KEY);
CREATE FUNCTION slow_feed() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_sleep(0.15); RETURN NEW; END$$;
CREATE TRIGGER slow_feed BEFORE INSERT ON feed FOR EACH ROW EXECUTE FUNCTION slow_feed();
CREATE TABLE parent (id int PRIMARY KEY);
CREATE TABLE child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES parent);
GRANT ALL ON feed, parent, child TO u1`)
	var feed []timedStatement
	for i := range 8 {
		feed = append(feed, timedStatement{0, 100 * i, fmt.Sprintf("INSERT INTO feed (id) VALUES (%d)", i)},
			timedStatement{1, 100*i + 50, "SELECT count(*) FROM feed"})
	}
	log := writeTimedLog(t, feed)
	waited := map[string]*results.Result{}
	for _, mode := range []string{"object", "load"} {
		mustExec(t, c, "db1", "TRUNCATE feed")
		code, out, res := runReplay(t, "--target", c.DSN("postgres"), "--speed", "1", "--sync", mode, "--findings=false", "--observe=false", "--prefix", replayTestPrefix, log)
		if res == nil || res.Sync == nil || res.Statements.Failed != 0 || code != ExitOK {
			t.Fatalf("%s: exit %d, result %+v:\n%s", mode, code, res, out)
		}
		if string(res.Sync.Mode) != mode {
			t.Errorf("%s: the result says mode %q", mode, res.Sync.Mode)
		}
		waited[mode] = res
	}
	// Object mode: the counts waited for the late inserts, about 2.2 s
	// in all (reader j waits 50j+100 ms).
	if ob := waited["object"]; ob.Sync.Waited < 6 || ob.SyncWait == nil || ob.SyncWait.TotalMS < 1000 {
		t.Errorf("object mode: the reader waited %d times, %v: want it held back by the writer", ob.Sync.Waited, ob.SyncWait)
	}
	if ld := waited["load"]; ld.Sync.Waited != 0 || ld.SyncWait != nil && ld.SyncWait.TotalMS != 0 {
		t.Errorf("load mode: the reader waited %d times, %+v: want never", ld.Sync.Waited, ld.SyncWait)
	}

	// The parent's session sleeps 300 ms first (0.1 ms in the
	// original): at speed 0 the child's session, which started first
	// (no start barrier holds it), is ahead of it.
	fk := []timedStatement{{1, 0, "SELECT 1"}, {0, 2, "SELECT pg_sleep(0.3)"}}
	for i := range 5 {
		fk = append(fk, timedStatement{0, 10 + 10*i, fmt.Sprintf("INSERT INTO parent (id) VALUES (%d)", i)},
			timedStatement{1, 15 + 10*i, fmt.Sprintf("INSERT INTO child (id, parent_id) VALUES (%d, %d)", i, i)})
	}
	log = writeTimedLog(t, fk)
	for _, mode := range []string{"off", "load"} {
		mustExec(t, c, "db1", "TRUNCATE parent, child")
		code, out, res := runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--sync", mode, "--findings=false", "--observe=false", "--prefix", replayTestPrefix, log)
		if res == nil || res.Sync == nil {
			t.Fatalf("%s: exit %d:\n%s", mode, code, out)
		}
		fkErrors := res.ErrorsBySQLState["23503"]
		switch mode {
		case "off":
			// What the order prevents: the test would see it.
			if fkErrors == 0 {
				t.Errorf("off: no foreign key error; the case does not show what the order prevents:\n%s", out)
			}
		case "load":
			if code != ExitOK || res.Statements.Failed != 0 || res.Sync.Waited == 0 {
				t.Errorf("load: exit %d, %d failed (%v), %d waited; want no error, the children waiting:\n%s", code, res.Statements.Failed, res.ErrorsBySQLState, res.Sync.Waited, out)
			}
		}
	}
	testSyncLoadWrites(t, c)
}

// testSyncLoadWrites: in load mode writes wait only where running first
// would fail or lose a write (issue 58 item 1). A session held up 300 ms
// on the target (0.1 ms in the original) inserts a row keyed by a
// sequence and updates an existing row; two other sessions right after
// it, at speed 1, update existing rows (one of them that same row),
// insert a row from the sequence, and update the new row above the
// sequence's start. In object mode all of these wait for the late
// session; in load mode only the update of the new row waits (it may be
// the row the late insert made), and the replay has no error nor lost
// write: the late session's and the other's updates of one row both
// count, and the new row's update finds it.
func testSyncLoadWrites(t *testing.T, c *pgcluster.Cluster) {
	mustExec(t, c, "db1", `CREATE TABLE jobs (id serial PRIMARY KEY, v int NOT NULL);
GRANT ALL ON jobs, jobs_id_seq TO u1`)
	log := writeTimedLog(t, []timedStatement{
		{0, 0, "SELECT pg_sleep(0.3)"},
		{0, 10, "INSERT INTO jobs (v) VALUES (0)"},
		// The other sessions open before the late one ends in the
		// log: none of them can be its client's next (replay's
		// takeClient), they run beside it.
		{1, 15, "SELECT 1"},
		{2, 16, "SELECT 1"},
		{0, 20, "UPDATE jobs SET v = v + 1 WHERE id = 5"},
		{1, 30, "UPDATE jobs SET v = v + 10 WHERE id = 1"},
		{1, 40, "UPDATE jobs SET v = v + 10 WHERE id = 5"},
		{2, 50, "INSERT INTO jobs (v) VALUES (0)"},
		{1, 60, "UPDATE jobs SET v = v + 100 WHERE id = 21"},
	})
	waited := map[string]int64{}
	for _, mode := range []string{"object", "load"} {
		mustExec(t, c, "db1", "TRUNCATE jobs RESTART IDENTITY; INSERT INTO jobs (v) SELECT 0 FROM generate_series(1, 20)")
		code, out, res := runReplay(t, "--target", c.DSN("postgres"), "--speed", "1", "--sync", mode, "--findings=false", "--observe=false", "--prefix", replayTestPrefix, log)
		if res == nil || res.Sync == nil || code != ExitOK || res.Statements.Failed != 0 {
			t.Fatalf("%s: exit %d, result %+v:\n%s", mode, code, res, out)
		}
		waited[mode] = res.Sync.Waited
		got := strings.Join(queryLines(t, c, "db1", "SELECT count(*) || ' rows, row 5: ' || sum(v) FILTER (WHERE id = 5) || ', row 21: ' || sum(v) FILTER (WHERE id = 21) FROM jobs"), "")
		if want := "22 rows, row 5: 11, row 21: 100"; got != want {
			t.Errorf("%s: %s, want %s (no write lost)", mode, got, want)
		}
	}
	// Object mode: at least the first update of an existing row and the
	// other session's insert wait for the late insert (the later
	// updates' waits depend on how far their own session was held).
	if waited["object"] < 2 {
		t.Errorf("object mode: %d statements waited, want at least the first update and the insert after the late session (2)", waited["object"])
	}
	if waited["load"] != 1 {
		t.Errorf("load mode: %d statements waited, want only the update of the new row (1)", waited["load"])
	}
}
