package compareplans

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestWorkSettingCauses: the settings that change a query's work are
// named as the cause of the work the comparison found it does more of,
// on real servers: a control without data checksums and a candidate
// with them (as an 18 initdb makes it) and a smaller shared_buffers. The
// read first shows the difference: after a checkpoint it writes WAL on
// the candidate (its hint bits WAL-logged) and none on the control. A
// read writing more WAL names data_checksums (not shared_buffers); an
// update dirtying more blocks names shared_buffers (not data_checksums);
// a query whose work did not grow names neither.
func TestWorkSettingCauses(t *testing.T) {
	var ctl, cand *pgcluster.Cluster
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		ctl = pgclustertest.StartT(t, pgcluster.Options{Checksums: pgcluster.ChecksumsOff})
	}()
	go func() {
		defer wg.Done()
		cand = pgclustertest.StartT(t, pgcluster.Options{Checksums: pgcluster.ChecksumsOn, Settings: map[string]string{"shared_buffers": "1MB"}})
	}()
	wg.Wait()
	if ctl == nil || cand == nil {
		t.FailNow()
	}
	ctx := context.Background()
	// The checkpoint, after the rows are committed, also flushes their
	// commit record: before that (synchronous_commit is off) no hint
	// bit may be set.
	const schema = `CREATE TABLE items (id int PRIMARY KEY, qty int, note text) WITH (autovacuum_enabled = off);
INSERT INTO items SELECT i, i % 7, repeat('x', 100) FROM generate_series(1, 5000) i`
	for _, c := range []*pgcluster.Cluster{ctl, cand} {
		for _, sql := range []string{schema, "CHECKPOINT"} {
			if err := c.Exec(ctx, "postgres", sql); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first read after the checkpoint sets the rows' hint bits.
	walOfRead := func(c *pgcluster.Cluster) float64 {
		conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
		defer conn.Close(ctx)
		var out []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, WAL, FORMAT JSON) SELECT count(*) FROM items WHERE qty = 3").Scan(&out); err != nil {
			t.Fatal(err)
		}
		var p []struct {
			Plan struct {
				WALBytes float64 `json:"WAL Bytes"`
			} `json:"Plan"`
		}
		if err := json.Unmarshal(out, &p); err != nil || len(p) != 1 {
			t.Fatalf("EXPLAIN: %v: %s", err, out)
		}
		return p[0].Plan.WALBytes
	}
	if a, b := walOfRead(ctl), walOfRead(cand); a != 0 || b == 0 {
		t.Fatalf("the read wrote %g WAL bytes on the control (no checksums) and %g on the candidate (checksums): want none, then some", a, b)
	}

	judged := func(more compare.Metric) *compare.QueryWork {
		w := &compare.QueryWork{Judged: true, More: more}
		if more != "" {
			*w.Of(more) = compare.WorkEffect{Estimate: compare.Estimate{Ratio: 105, Change: compare.ChangeMore, Beyond: true}, Baseline: 0, Candidate: 105, Delta: 105}
		}
		return w
	}
	f := &compare.Figures{}
	rep := &compare.Report{
		Queries: []compare.QueryDiff{
			{Fingerprint: "read", Query: "SELECT count(*) FROM items WHERE qty = $1", Status: compare.StatusMoreWork, Work: judged(compare.MetricWALBytes), Baseline: f, Candidate: f},
			{Fingerprint: "write", Query: "UPDATE items SET qty = qty + 1 WHERE id = $1", Status: compare.StatusMoreWork, Work: judged(compare.MetricDirtied), Baseline: f, Candidate: f},
			{Fingerprint: "same", Query: "SELECT note FROM items WHERE id = $1", Status: compare.StatusUnchanged, AddedMS: 1, Work: judged(""), Baseline: f, Candidate: f},
		},
		MoreWork: []string{"read", "write"},
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := Run(rctx, Input{Report: rep}, Options{ControlDSN: ctl.DSN("postgres"), CandidateDSN: cand.DSN("postgres"), Database: "postgres"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"read": "data_checksums off -> on (wal)", "write": "shared_buffers 128MB -> 1MB (dirtied)", "same": ""}
	for _, o := range res.Report.Outcomes {
		if o.Verdict != explain.SamePlan {
			t.Errorf("%s: verdict %s %+v", o.Fingerprint, o.Verdict, o.Problems)
		}
		got := ""
		for _, c := range o.Causes {
			if c.Kind != explain.CauseSetting {
				continue
			}
			if got != "" {
				got += "; "
			}
			got += c.Setting + " " + c.Control + " -> " + c.Candidate + " (" + c.Evidence + ")"
		}
		if got != want[o.Fingerprint] {
			t.Errorf("%s: setting causes %q, want %q", o.Fingerprint, got, want[o.Fingerprint])
		}
		if o.Fingerprint == "read" && (len(o.Causes) == 0 || o.Causes[0].Setting != "data_checksums") {
			t.Errorf("read: data_checksums is not the first cause: %+v", o.Causes)
		}
	}
	if len(res.Report.Outcomes) != 3 {
		t.Errorf("%d outcomes, want 3", len(res.Report.Outcomes))
	}
}
