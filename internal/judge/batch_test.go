package judge

import (
	"math"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

func batchRound(max int, ms float64, wal int64) *results.Result {
	r := &results.Result{Replay: &results.Replay{BatchInserts: &results.BatchInserts{
		Max: max, Statements: 100, Batches: 100, Rows: 100, InsertMS: ms, WALBytes: wal, Tables: map[string]int64{"events": 100},
	}}}
	return r
}

// TestBatchInserts: the factor is the plain rounds' time per row over
// the batched rounds', with the rank interval of three rounds a side
// (min over max, max over min); a round without WAL leaves the WAL out;
// rounds of the wrong kind are refused.
func TestBatchInserts(t *testing.T) {
	plain := []*results.Result{batchRound(1, 100, 25000), batchRound(1, 90, 25000), batchRound(1, 110, 25000)}
	batched := []*results.Result{batchRound(50, 10, 20000), batchRound(50, 11, 20000), batchRound(50, 9, 20000)}
	m, err := BatchInserts(plain, batched, 0)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(m.Time.Ratio, 10) || !near(m.Time.Low, 90.0/11) || !near(m.Time.High, 110.0/9) || m.Time.Level < 0.89 {
		t.Errorf("time %+v, want 10 (8.18–12.2)", m.Time)
	}
	if m.WAL == nil || !near(m.WAL.Ratio, 1.25) {
		t.Errorf("WAL %+v, want 1.25", m.WAL)
	}
	if m.Max != 50 || m.Rounds != 3 || len(m.Tables) != 1 || m.Tables[0] != "events" {
		t.Errorf("measure %+v", m)
	}
	batched[1].BatchInserts.WALBytes = -1
	if m, _ := BatchInserts(plain, batched, 0); m.WAL != nil {
		t.Errorf("WAL %+v with a round that could not read it", m.WAL)
	}
	if _, err := BatchInserts(batched, plain, 0); err == nil {
		t.Error("rounds of the wrong kinds judged")
	}
	if _, err := BatchInserts(plain, nil, 0); err == nil {
		t.Error("no batched rounds judged")
	}
}
