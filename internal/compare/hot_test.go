package compare

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// hotRuns are runs a side whose evidence holds the tellers update (its
// pg_stat_statements text) and pgbench_tellers' update counters: hot of
// every 1000 updates HOT (with 1% noise), with indexes ixs.
func hotRuns(t *testing.T, name string, seed uint64, hot int64, ixs []observe.TableIndex, wal float64) []*Run {
	t.Helper()
	runs := sideRuns(t, name, seed, 3, 0.03, map[string]float64{"upd": 300}, nil, nil)
	r := rand.New(rand.NewPCG(seed, 7))
	for i, run := range runs {
		m := tellersUpdate
		m.recBytes = wal
		q, tot := m.runAt(r, 1, false)
		q.Fingerprint = "upd"
		q.Query = "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2"
		h := hot + int64(r.IntN(21)) - 10
		h = min(max(h, 0), 1000)
		ev := observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: []observe.Query{q}, Totals: tot},
			Tables: []observe.TableUpdates{
				// A rehearsal's rounds replay onto copies under
				// their own names.
				{Database: fmt.Sprintf("bench_r%d", i), Schema: "public", Name: "pgbench_tellers", Updates: 1000, HOTUpdates: h, Indexes: ixs},
				{Database: fmt.Sprintf("bench_r%d", i), Schema: "public", Name: "pgbench_accounts", Updates: 1000, HOTUpdates: 990,
					Indexes: []observe.TableIndex{{Name: "pgbench_accounts_pkey", Columns: []string{"aid"}, Method: "btree"}}},
			}}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		run.Evidence = b
	}
	return runs
}

var tellersPkey = observe.TableIndex{Name: "pgbench_tellers_pkey", Columns: []string{"tid"}, Method: "btree"}

// TestHOTDropNamesIndex: the case. The candidate's index on
// tbalance, which the update sets, ends its HOT updates: the HOT share of
// pgbench_tellers drops from 98% to 0%, the index is named, and the
// update, +141 B a call but 2% of the run's WAL, writes more. A/A, and an
// index on both sides, name nothing.
func TestHOTDropNamesIndex(t *testing.T) {
	tb := observe.TableIndex{Name: "pgbench_tellers_tbalance_idx", Columns: []string{"tbalance"}, Method: "btree"}
	base := hotRuns(t, "A", 1, 980, []observe.TableIndex{tellersPkey}, 78)
	cand := hotRuns(t, "B", 2, 0, []observe.TableIndex{tellersPkey, tb}, 219)
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw := rep.ServerWork
	if sw == nil || len(sw.HOT) != 2 {
		t.Fatalf("server work %+v", sw)
	}
	h := sw.HOT[0]
	if h.Name != "pgbench_tellers" || !h.Dropped || h.Rose || !h.Judged || h.Cause == nil ||
		!slices.Equal(h.Cause.Columns, []string{"tbalance"}) || !slices.Equal(h.Cause.Indexes, []string{tb.Name}) ||
		h.Baseline.Low > h.Baseline.Median || h.Baseline.High < h.Baseline.Median || h.Candidate.Median > 0.01 {
		t.Errorf("tellers: %+v cause %+v", h, h.Cause)
	}
	if a := sw.HOT[1]; a.Name != "pgbench_accounts" || a.Dropped || a.Cause != nil {
		t.Errorf("accounts: %+v", a)
	}
	upd := rep.Query("upd")
	if upd.Status != StatusMoreWork || upd.Work.More != MetricWALBytes || upd.Work.WALBytes.ShareLow < DefaultMinWorkShare {
		t.Errorf("upd: %s %+v", upd.Status, upd.Work.WALBytes)
	}

	// A/A: nothing drops, nothing is named, nothing writes more.
	rep, err = Runs(hotRuns(t, "A", 3, 980, []observe.TableIndex{tellersPkey}, 78), hotRuns(t, "B", 4, 980, []observe.TableIndex{tellersPkey}, 78), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range rep.ServerWork.HOT {
		if h.Dropped || h.Rose || h.Cause != nil {
			t.Errorf("A/A: %+v", h)
		}
	}
	if len(rep.MoreWork) != 0 || len(rep.ServerWork.BelowFloors) != 0 {
		t.Errorf("A/A: more work %v, below the floors %v", rep.MoreWork, rep.ServerWork.BelowFloors)
	}

	// The index on both sides, the drop from something else: the drop
	// is told, no index is named.
	rep, err = Runs(hotRuns(t, "A", 5, 980, []observe.TableIndex{tellersPkey, tb}, 78), hotRuns(t, "B", 6, 0, []observe.TableIndex{tellersPkey, tb}, 219), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h := rep.ServerWork.HOT[0]; !h.Dropped || h.Cause != nil {
		t.Errorf("index on both sides: %+v", h)
	}
	// A BRIN index (PostgreSQL 16) does not stop HOT updates: not named.
	brin := observe.TableIndex{Name: "pgbench_tellers_tbalance_brin", Columns: []string{"tbalance"}, Method: "brin", Summarizing: true}
	rep, err = Runs(hotRuns(t, "A", 7, 980, []observe.TableIndex{tellersPkey}, 78), hotRuns(t, "B", 8, 0, []observe.TableIndex{tellersPkey, brin}, 219), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h := rep.ServerWork.HOT[0]; !h.Dropped || h.Cause != nil {
		t.Errorf("BRIN: %+v", h)
	}
}

// TestHOTFalsePositives: 1000 A/A comparisons of three runs a side whose
// HOT shares vary by up to 5 points run to run: none is called a drop
// (MinHOTDrop is 10 points); a drop from 98% to 60% is found in all.
func TestHOTFalsePositives(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	side := func(hot float64) workRows {
		var w workRows
		for range 3 {
			h := int64(1000 * min(1, max(0, hot+0.05*(2*r.Float64()-1))))
			w.tables = append(w.tables, []observe.TableUpdates{{Schema: "public", Name: "t", Updates: 1000, HOTUpdates: h}})
		}
		return w
	}
	for _, tc := range []struct {
		name    string
		b, c    float64
		minDrop int
		maxDrop int
		trials  int
	}{
		{"A/A", 0.9, 0.9, 0, 0, 1000},
		{"98% -> 60%", 0.98, 0.6, 1000, 1000, 1000},
	} {
		drops := 0
		for range tc.trials {
			rep := &Report{ServerWork: &ServerWork{}}
			rep.compareHOT(side(tc.b), side(tc.c), true)
			if len(rep.ServerWork.HOT) != 1 {
				t.Fatalf("%s: %+v", tc.name, rep.ServerWork.HOT)
			}
			if rep.ServerWork.HOT[0].Dropped {
				drops++
			}
		}
		t.Logf("%s: %d of %d trials call a drop of the HOT share", tc.name, drops, tc.trials)
		if drops < tc.minDrop || drops > tc.maxDrop {
			t.Errorf("%s: %d drops, want %d-%d", tc.name, drops, tc.minDrop, tc.maxDrop)
		}
	}
}
