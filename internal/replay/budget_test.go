package replay

import (
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestReadAheadCap: a paced replay onto a target that cannot keep up (4
// sessions logging a statement every millisecond, each taking 5 ms on
// the target) holds the statements read ahead of their sessions within
// the budget: the queues' peak (the counter, not RSS) never exceeds it
// by more than the one event read when it was last under, the reader
// waited there for the target and says how long, and every statement
// still ran. Without the budget the reader would follow the clock, and
// the queues would hold most of the log by its end.
func TestReadAheadCap(t *testing.T) {
	functionalCase(t)
	const sessions, each = 4, 150
	const query = "SELECT pg_sleep(0.005)"
	var l testLog
	for range sessions {
		s := l.session("postgres", "postgres", 0)
		for i := range each {
			s.query(time.Duration(i)*time.Millisecond, time.Millisecond, query)
		}
		s.disconnect(each * time.Millisecond)
	}
	path := l.write(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})

	const budget = 12 << 10 // about 30 events
	res := replayFile(t, path, Options{Target: c.DSN("postgres"), Speed: 1, Budget: budget})
	rd := res.Reader
	t.Logf("reader %+v, lag p99 %.1f ms", rd, res.Lag.P99)
	if got, want := res.Statements.Executed, int64(sessions*each); got != want {
		t.Fatalf("executed %d of %d statements", got, want)
	}
	if rd.OverBudget != 0 {
		t.Fatalf("read %d events past the budget while statements were completing", rd.OverBudget)
	}
	// One event is read past the budget at most: the reader checks it
	// before it reads.
	one := eventSize(&event.Event{Kind: event.Statement, Query: query})
	if rd.MaxBufferedBytes > budget+one {
		t.Errorf("the queues held %d bytes at most, above the budget %d (+%d for the event read last)", rd.MaxBufferedBytes, budget, one)
	}
	if rd.MaxBufferedBytes < budget/2 {
		t.Errorf("the queues held %d bytes at most: the budget %d was never near, the target kept up", rd.MaxBufferedBytes, budget)
	}
	if rd.BudgetBytes != budget {
		t.Errorf("budget recorded as %d, want %d", rd.BudgetBytes, budget)
	}
	if rd.BudgetWaits == 0 || rd.BudgetWaitMS <= 0 {
		t.Errorf("the reader never waited at the budget (%d waits, %.1f ms)", rd.BudgetWaits, rd.BudgetWaitMS)
	}
	// The sessions ran 600 statements of 5 ms, 4 at a time: the reader
	// waited for most of that, not for more than the whole replay.
	if wall := res.WallSeconds * 1000; rd.BudgetWaitMS > wall {
		t.Errorf("the reader waited %.0f ms in a replay of %.0f ms", rd.BudgetWaitMS, wall)
	}
}
