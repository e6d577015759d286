package logread

import (
	"fmt"
	"io"
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
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
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
