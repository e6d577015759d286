package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// TestReadOnlySQLExecute: under --read-only an SQL-level EXECUTE is as
// read-only as the statement its session prepared; one whose PREPARE the
// log does not show is skipped with its own reason, never run blind; a
// DEALLOCATE forgets the name; a new session knows none of another's.
func TestReadOnlySQLExecute(t *testing.T) {
	functionalCase(t)
	ms := time.Millisecond
	evs := []*event.Event{
		stmt("a", 0, "PREPARE r(int) AS SELECT $1 + 1"),
		stmt("a", 1*ms, "PREPARE w(int) AS UPDATE t SET v = $1"),
		stmt("a", 2*ms, "EXECUTE r(1)"),                     // read-only: runs
		stmt("a", 3*ms, "EXECUTE w(2)"),                     // writes: skipped
		stmt("a", 4*ms, "EXECUTE elsewhere(3)"),             // unknown: skipped
		stmt("a", 5*ms, "EXPLAIN ANALYZE EXECUTE w(4)"),     // runs the UPDATE: skipped
		stmt("a", 6*ms, "EXPLAIN EXECUTE w(5)"),             // plans only: runs
		stmt("a", 7*ms, "PREPARE x AS SELECT 1; EXECUTE x"), // same string: runs
		stmt("a", 8*ms, "DEALLOCATE r"),
		stmt("a", 9*ms, "EXECUTE r(6)"), // deallocated: unknown
		stmt("a", 10*ms, "PREPARE s AS SELECT 2; INSERT INTO t VALUES (1)"),
		stmt("a", 11*ms, "EXECUTE s"), // its PREPARE was skipped with the INSERT
		stmt("b", 12*ms, "EXECUTE x"), // session b prepared nothing
		stmt("a", 13*ms, "DISCARD ALL"),
		stmt("a", 14*ms, "EXECUTE x"), // discarded
	}
	res := dryRun(t, Options{Speed: 0, ReadOnly: true}, &sliceSource{evs: evs})
	st := res.Statements
	want := map[results.SkipReason]int64{
		SkipNotReadOnly:    1 + 1 + 1 + 2, // PREPARE w, EXECUTE w, EXPLAIN ANALYZE, the PREPARE s + INSERT string
		SkipExecuteUnknown: 1 + 1 + 1 + 1, // elsewhere, r after DEALLOCATE, x in b, x after DISCARD
		SkipPrepareSkipped: 1,
	}
	for k, v := range want {
		if st.Skipped[k] != v {
			t.Errorf("skipped %q = %d, want %d (all: %v)", k, st.Skipped[k], v, st.Skipped)
		}
	}
	// PREPARE r, EXECUTE r, EXPLAIN EXECUTE, PREPARE x + EXECUTE x,
	// DEALLOCATE r, DISCARD ALL.
	if st.Executed != 7 {
		t.Errorf("executed %d, want 7 (%+v)", st.Executed, st)
	}
}

// TestClassParsedOnceInReplay: a synchronized replay reads each
// statement's kind (transaction block, read-only, destructive, the
// relations for the synchronization) from one Class per statement text:
// the parser runs for it at most once per distinct statement of the log,
// though the dispatcher's synchronization and the session each ask.
func TestClassParsedOnceInReplay(t *testing.T) {
	// Sequential: it counts the parses of fingerprint's package-wide
	// counter, which other tests' replays would add to.
	cp := captureOrders(t, true, 2, 2, 50, 4*time.Millisecond)
	// The distinct statements of the log: per distinct text, its items.
	rd, err := logread.Open(cp.log, logread.Options{Prefix: workload.LogLinePrefix})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	distinct := 0
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if ev.IsExecution() && !seen[ev.Query] {
			seen[ev.Query] = true
			distinct += len(fingerprint.Compute(ev.Query))
		}
	}
	rd.Close()
	target := pgclustertest.StartT(t, pgcluster.Options{})
	before := fingerprint.ClassParses()
	res, _ := replayOrders(t, target, cp, Options{Speed: 0})
	parses := fingerprint.ClassParses() - before
	t.Logf("%d statements executed, %d distinct statements in %d distinct texts, %d parsed for their class", res.Statements.Executed, distinct, len(seen), parses)
	if res.Sync == nil || res.Sync.Mode != results.SyncObject || res.Statements.Executed == 0 {
		t.Fatalf("sync %+v, statements %+v", res.Sync, res.Statements)
	}
	if parses == 0 || parses > int64(distinct) {
		t.Errorf("parsed %d statements for their class, want between 1 and the %d distinct statements", parses, distinct)
	}
}

// TestFailedBlockRealigned: a query string that is a whole transaction
// block (BEGIN; ...; COMMIT) and fails on the target before its COMMIT
// leaves the block open and aborted there, while the log's is closed. The
// session rolls it back and goes on as logged: its next statements do not
// fail with 25P02, and the result says so.
func TestFailedBlockRealigned(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, c, "postgres", "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
	var l testLog
	ms := time.Millisecond
	s := l.session("postgres", "postgres", 0)
	s.query(100*ms, ms, "BEGIN; INSERT INTO t VALUES (1); COMMIT") // the row is there on the target
	s.query(200*ms, ms, "SELECT count(*) FROM t")
	s.query(300*ms, ms, "INSERT INTO t VALUES (2)")
	s.disconnect(400 * ms)
	res := replayFile(t, l.write(t), Options{Target: c.DSN("postgres"), Speed: 0})
	if res.ErrorsBySQLState["23505"] != 1 || res.ErrorsBySQLState["25P02"] != 0 || res.Outcomes.FailedOnlyOnTarget != 1 {
		t.Errorf("errors %v, outcomes %+v: want the one duplicate key and nothing after", res.ErrorsBySQLState, res.Outcomes)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "rolled back") {
		t.Errorf("warnings %q", res.Warnings)
	}
}
