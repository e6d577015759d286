package logread

import (
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
