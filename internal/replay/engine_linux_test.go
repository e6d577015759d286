package replay

import (
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// TestEngineDetaches: every connection a session opens on an engine is
// taken off Go's netpoller before its first statement (engineConn.detach). Left on it, each answer
// and each read the server makes of a statement also wakes an idle
// runtime thread in the netpoller's epoll; the replay's results are the
// same, only its CPU shows it, so this counts.
func TestEngineDetaches(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	var l testLog
	const sessions = 3
	for range sessions {
		s := l.session("postgres", "postgres", 0)
		for i := range 50 {
			s.query(time.Duration(i)*time.Millisecond, time.Microsecond, "SELECT 1")
		}
		s.disconnect(time.Second)
	}
	path := l.write(t)
	// On one engine, and dealt to two in turn (2 and 1).
	for _, engines := range []int{1, 2} {
		res, r := replayKept(t, path, Options{Target: c.DSN("postgres"), Speed: 0, Sessions: SessionsEngine, Engines: engines}, source.Selection{})
		if len(r.engines) != engines {
			t.Fatalf("the replay ran on %d engines, want %d", len(r.engines), engines)
		}
		if res.Statements.Executed != sessions*50 || res.Statements.Failed != 0 {
			t.Fatalf("%d engines: executed %d statements, %d failed, want %d and 0", engines, res.Statements.Executed, res.Statements.Failed, sessions*50)
		}
		var per []int64
		total := int64(0)
		for _, e := range r.engines {
			per = append(per, e.detached.Load())
			total += e.detached.Load()
		}
		if total != sessions {
			t.Errorf("%d engines: %d of the %d connections were taken off Go's netpoller", engines, total, sessions)
		}
		if engines == 2 && (per[0] != 2 || per[1] != 1) {
			t.Errorf("two engines: connections %v, want [2 1] (dealt in turn)", per)
		}
	}
}
