package replay

import (
	"github.com/pgrehearse/pgrehearse/internal/results"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// TestReadOnlySQLExecute: under --read-only an SQL-level EXECUTE is as
// read-only as the statement its session prepared; one whose PREPARE the
// log does not show is skipped with its own reason, never run blind; a
// DEALLOCATE forgets the name; a new session knows none of another's.
func TestReadOnlySQLExecute(t *testing.T) {
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

// TestClassifyExplainAnalyzeOff: EXPLAIN (ANALYZE false) does not run its
// statement, so it cannot write; ANALYZE of a write can.
func TestClassifyExplainAnalyzeOff(t *testing.T) {
	for sql, want := range map[string]bool{
		"EXPLAIN (ANALYZE false) UPDATE t SET v = 1":      true,
		"EXPLAIN (ANALYZE off) DELETE FROM t":             true,
		"EXPLAIN (ANALYZE) UPDATE t SET v = 1":            false,
		"EXPLAIN ANALYZE SELECT 1":                        true,
		"EXPLAIN (ANALYZE true) INSERT INTO t VALUES (1)": false,
	} {
		if got := classify(sql).readOnly; got != want {
			t.Errorf("%s: readOnly %v, want %v", sql, got, want)
		}
	}
}
