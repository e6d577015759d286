package logread

import (
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
// protocol; log_min_duration_statement = 0) are counted as "fast-path
// function call", not as any other message: they are calls the log
// cannot replay (it does not hold their arguments), as a capture counts
// its FunctionCall messages. Before, they were "other message".
func TestFastPathCalls(t *testing.T) {
	const log = `2026-11-25 07:23:35.060 UTC [636] postgres@postgres LOG:  duration: 0.096 ms  statement: BEGIN
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  duration: 0.251 ms  fastpath function call: "lo_creat" (OID 957)
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  duration: 0.011 ms  fastpath function call: "lo_open" (OID 952)
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  duration: 0.178 ms  fastpath function call: "lowrite" (OID 955)
2026-11-25 07:23:35.063 UTC [636] postgres@postgres LOG:  fastpath function call: "lo_close" (OID 953)
2026-11-25 07:23:35.068 UTC [636] postgres@postgres LOG:  duration: 4.467 ms  statement: COMMIT
`
	r, err := NewReader(strings.NewReader(log), "lo_import", Options{Prefix: "%m [%p] %q%u@%d "})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.IsExecution() {
			n++
		}
	}
	c := r.Counters()
	if n != 2 || c.Skipped[SkipFastPath] != 4 || c.Skipped[SkipOtherMessage] != 0 {
		t.Errorf("%d statements, skipped %v: want BEGIN and COMMIT, and 4 fast-path calls", n, c.Skipped)
	}
}
