package logread

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// TestParallelWorkerErrors reads the logs of a real PostgreSQL 15 whose
// statement failed in a parallel worker (testdata/parallel, generate.sh
// there): the worker logs the error first, as a process of its own, and
// its leader logs it again in its session, with "CONTEXT:  parallel
// worker". The failure is the leader's, once: the worker's lines make no
// session and no event, and are counted as skipped. Before, they made a
// session of their own (without the leader's database), which analyze
// counted as a second failure and a replay ran again (issue 39).
func TestParallelWorkerErrors(t *testing.T) {
	for _, tc := range []struct {
		file, prefix string
	}{
		{"debian.log", "%m [%p] %q%u@%d "},        // the worker's line stops at %q
		{"b.log", "%m [%p] %b %P %q%u@%d/%a %c "}, // its backend type and leader
		{"b.csv", ""}, // backend_type, leader_pid
		{"b.json", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			evs, c := readAll(t, "testdata/parallel/"+tc.file, Options{Prefix: tc.prefix})
			sessions := map[string]bool{}
			var failed []*event.Event
			for _, ev := range evs {
				if ev.Session != "" && ev.Kind != event.Error {
					sessions[ev.Session] = true
				}
				if ev.Failed {
					failed = append(failed, ev)
				}
			}
			// (A stderr log without %e does not say the SQLSTATE.)
			if len(failed) != 1 || tc.prefix == "" && failed[0].SQLState != "22012" || failed[0].Database != "postgres" || failed[0].User != "postgres" {
				for _, ev := range failed {
					t.Logf("failed: session %q %s@%s %s: %s", ev.Session, ev.User, ev.Database, ev.SQLState, ev.Query)
				}
				t.Errorf("%d failed statements, want the leader's division by zero alone", len(failed))
			}
			if len(sessions) != 1 {
				t.Errorf("sessions %v, want the leader's alone", sessions)
			}
			if c.Skipped[SkipParallelWorker] < 2 {
				t.Errorf("skipped %v, want the worker's ERROR and STATEMENT lines as %q", c.Skipped, SkipParallelWorker)
			}
		})
	}
}

// TestLateParallelWorker reads the logs that PostgreSQL 15.18 wrote, with
// its default prefix '%m [%p] ', for TestParallelWorkerBarePrefix's
// division by zero (internal/replay) on a loaded 2-core machine: the
// second worker, still running when its leader reported the first one's
// error, was stopped and said so (FATAL: terminating background worker),
// or it started after its leader had freed the query's shared memory
// and logged an error of its own (could not attach). No leader repeats
// either. They are a parallel worker's errors too: the failure stays the
// leader's alone, in one session. Before, the second worker was read as a
// session of its own (with a second failure, which a replay ran again,
// for the late one). The other cases are the worker failing earlier (no
// shared memory segment, before it knows its statement) and a verbose
// log's SQLSTATE.
func TestLateParallelWorker(t *testing.T) {
	const head = `2026-11-25 16:57:30.241 UTC [18194] LOG:  connection authorized: user=postgres database=postgres application_name=psql
2026-11-25 16:57:30.247 UTC [18194] LOG:  duration: 0.023 ms  statement: SET parallel_leader_participation = off
2026-11-25 16:57:30.262 UTC [18195] ERROR:  division by zero
2026-11-25 16:57:30.262 UTC [18195] STATEMENT:  SELECT count(*) FROM t WHERE 1/(a-500) > 0
2026-11-25 16:57:30.265 UTC [18194] ERROR:  division by zero
2026-11-25 16:57:30.265 UTC [18194] CONTEXT:  parallel worker
2026-11-25 16:57:30.265 UTC [18194] STATEMENT:  SELECT count(*) FROM t WHERE 1/(a-500) > 0
2026-11-25 16:57:30.266 UTC [18184] LOG:  background worker "parallel worker" (PID 18195) exited with exit code 1
`
	const tail = `2026-11-25 16:57:30.277 UTC [18184] LOG:  background worker "parallel worker" (PID 18196) exited with exit code 1
2026-11-25 16:57:30.296 UTC [18194] LOG:  duration: 18.686 ms  statement: SELECT 1
2026-11-25 16:57:30.298 UTC [18194] LOG:  disconnection: session time: 0:00:00.059 user=postgres database=postgres host=[local]
`
	for _, tc := range []struct {
		name, late  string
		workerLines int64 // the first worker's 2 and the late one's
	}{
		{"attach", `2026-11-25 16:57:30.269 UTC [18196] ERROR:  could not attach to dynamic shared area
2026-11-25 16:57:30.269 UTC [18196] STATEMENT:  SELECT count(*) FROM t WHERE 1/(a-500) > 0
`, 4},
		{"stopped", `2026-11-25 17:16:39.728 UTC [18196] FATAL:  terminating background worker "parallel worker" due to administrator command
2026-11-25 17:16:39.728 UTC [18196] STATEMENT:  SELECT count(*) FROM t WHERE 1/(a-500) > 0
`, 4},
		{"stopped early", "2026-11-25 17:17:04.385 UTC [18196] FATAL:  terminating background worker \"parallel worker\" due to administrator command\n", 3},
		{"segment", "2026-11-25 16:57:30.269 UTC [18196] ERROR:  could not map dynamic shared memory segment\n", 3},
		{"verbose", `2026-11-25 16:57:30.269 UTC [18196] ERROR:  XX000: could not attach to dynamic shared area
2026-11-25 16:57:30.269 UTC [18196] STATEMENT:  SELECT count(*) FROM t WHERE 1/(a-500) > 0
`, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(head+tc.late+tail), "late", Options{Prefix: "%m [%p] "})
			if err != nil {
				t.Fatal(err)
			}
			sessions := map[string]bool{}
			failed := 0
			for ev, err := range event.All(r) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Session != "" {
					sessions[ev.Session] = true
				}
				if ev.Failed {
					failed++
				}
			}
			c := r.Counters()
			if failed != 1 || len(sessions) != 1 {
				t.Errorf("%d failed statements in sessions %v: want the leader's division by zero alone, in its session", failed, sessions)
			}
			if c.Skipped[SkipParallelWorker] != tc.workerLines || c.Total != c.Parsed+c.SkippedTotal() {
				t.Errorf("lines %d, parsed %d, skipped %v: want %d as %q", c.Total, c.Parsed, c.Skipped, tc.workerLines, SkipParallelWorker)
			}
		})
	}
}

// TestFastPathCalls: the lines PostgreSQL 15 wrote for psql's \lo_import
// (libpq's large-object functions call the server through the fast-path
// protocol; log_min_duration_statement = 0) are executions whose
// parameters the log does not hold, their text the SQL of the call after
// FastPathPrefix, so that an analysis counts them and a replay skips them
// by name. Before, they were counted as lines of another message, and
// then as lines of their own, never as statements.
func TestFastPathCalls(t *testing.T) {
	const log = `2026-11-25 07:23:35.060 UTC [636] postgres@postgres LOG:  duration: 0.096 ms  statement: BEGIN
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  duration: 0.251 ms  fastpath function call: "lo_creat" (OID 957)
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  duration: 0.011 ms  fastpath function call: "lo_open" (OID 952)
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  duration: 0.178 ms  fastpath function call: "lowrite" (OID 955)
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  fastpath function call: "lo_close" (OID 953)
2026-11-25 07:23:35.064 UTC [636] postgres@postgres LOG:  duration: 0.012 ms  fastpath function call: "my "f" (OID 16999)
2026-11-25 07:23:35.064 UTC [636] postgres@postgres LOG:  duration: 0.012 ms  fastpath function call: lo_open (OID 952)
2026-11-25 07:23:35.068 UTC [636] postgres@postgres LOG:  duration: 4.467 ms  statement: COMMIT
`
	r, err := NewReader(strings.NewReader(log), "lo_import", Options{Prefix: "%m [%p] %q%u@%d "})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev, err := range event.All(r) {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.IsExecution() {
			continue
		}
		q := ev.Query
		if strings.HasPrefix(q, FastPathPrefix) {
			if ev.Kind != event.Execute || ev.ParamState != event.ParamsMissing {
				t.Errorf("%q: kind %v, params %v: want an Execute whose parameters are missing", q, ev.Kind, ev.ParamState)
			}
			q = "fast-path " + strings.TrimPrefix(q, FastPathPrefix)
		}
		got = append(got, fmt.Sprintf("%s %d", q, ev.Duration))
	}
	want := []string{
		"BEGIN 96",
		"fast-path SELECT pg_catalog.lo_creat($1) 251",
		"fast-path SELECT pg_catalog.lo_open($1, $2) 11",
		"fast-path SELECT pg_catalog.lowrite($1, $2) 178",
		"fast-path SELECT pg_catalog.lo_close($1) -1",
		`fast-path SELECT "my ""f"(/* arguments not logged */) 12`,
		"COMMIT 4467",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("executions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c := r.Counters()
	if c.Parsed != 7 || c.Skipped[SkipOtherMessage] != 1 || c.Total != c.Parsed+c.SkippedTotal() {
		t.Errorf("lines %d, parsed %d, skipped %v: want 7 parsed and the call without quotes an other message", c.Total, c.Parsed, c.Skipped)
	}
}
