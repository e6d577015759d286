package report

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport/htmltest"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// The Plans section renders in a real browser: the statements' table
// sorts and opens on the causes, and both plan trees are laid side by
// side with the changed nodes marked. At 1,400 pixels the plan trees (a
// deep one with long names and large figures among them) and the server
// work table fit their card: no column of the evidence (the candidate's
// actual, hit / read; the work table's query) is cut off (issue 57 item 7).
func TestPlansInBrowser(t *testing.T) {
	rep := plansReport(t)
	rep.Redact()
	sec := PlansSection(rep, map[string]compare.Status{"aaaa": compare.StatusRegressed, "bbbb": compare.StatusRegressed}, PlanHints{KeepSamples: "--keep-samples"})
	if len(sec.Tables) != 3 {
		t.Fatalf("%d tables: the statements and two pairs of trees", len(sec.Tables))
	}
	wide := widePlans(t)
	sec.Tables = append(sec.Tables, PlanTreesTable("dddd", &wide))
	sec.Tables[len(sec.Tables)-1].ID = "plans-wide"
	work, ok := workSection(wideWorkComparison(t))
	if !ok {
		t.Fatal("no server work section")
	}
	path := writePage(t, htmlreport.Page{Title: "plans test", Sections: []htmlreport.Section{sec, work}})
	sc := htmltest.SelfCheckAt(t, path, "1400,1400")
	htmltest.AssertSelfCheck(t, sc, 0, "server-work-table")
	if sc.ViewportWidth != 1400 || sc.PageWidth > sc.ViewportWidth {
		t.Errorf("page %d px wide in a %d px window, want 1400 and no wider", sc.PageWidth, sc.ViewportWidth)
	}
	for _, o := range sc.Overflows {
		t.Errorf("at 1400 px the table %s is cut off its card: %d px in %d", o.Table, o.ScrollWidth, o.ClientWidth)
	}
	found := false
	for _, tb := range sc.Tables {
		if tb.Rows == len(rep.Outcomes) && tb.DetailShown {
			found = true
		}
	}
	if !found {
		t.Errorf("no statements table with a detail: %+v", sc.Tables)
	}
	dom := string(htmltest.DumpDOM(t, path, ""))
	wantIn(t, "the page", dom, "Index Scan using customers_email_idx on customers", "Seq Scan on customers", `class="bad"`,
		"index customers_email_idx on customers does not exist on the candidate",
	)
	htmltest.ScreenshotLogged(t, path, "1400,1400")
}

// widePlans is a plan as deep and wide as a demo's: a sort over a hash
// join of a bitmap scan and a seq scan, the candidate's reading millions
// of blocks, spilling to disk, with long relation and index names.
func widePlans(t *testing.T) explain.Explained {
	t.Helper()
	const ctl = `Sort  (cost=9000.00..9012.50 rows=5000 width=40) (actual time=30.100..31.200 rows=4821 loops=1)
  Sort Key: o.created_at DESC
  Sort Method: quicksort  Memory: 600kB
  Buffers: shared hit=12543
  ->  Hash Join  (cost=1800.00..8700.00 rows=5000 width=40) (actual time=2.100..28.300 rows=4821 loops=1)
        Hash Cond: (o.customer_id = c.id)
        Buffers: shared hit=12543
        ->  Bitmap Heap Scan on order_lines_archive_2026 o  (cost=95.00..6800.00 rows=5000 width=32) (actual time=1.200..20.400 rows=4821 loops=1)
              Recheck Cond: (created_at > '2026-11-01'::date)
              Heap Blocks: exact=11234
              Buffers: shared hit=11300
              ->  Bitmap Index Scan on order_lines_archive_2026_created_at_idx  (cost=0.00..94.00 rows=5000 width=0) (actual time=0.900..0.900 rows=4821 loops=1)
                    Index Cond: (created_at > '2026-11-01'::date)
                    Buffers: shared hit=66
        ->  Hash  (cost=1200.00..1200.00 rows=50000 width=16) (actual time=0.800..0.800 rows=50000 loops=1)
              Buckets: 65536  Batches: 1  Memory Usage: 3000kB
              Buffers: shared hit=1177
              ->  Seq Scan on customers_with_a_longer_name c  (cost=0.00..1200.00 rows=50000 width=16) (actual time=0.010..4.200 rows=50000 loops=1)
                    Buffers: shared hit=1177`
	const cand = `Sort  (cost=900000.00..901250.00 rows=500000 width=40) (actual time=12345.100..12999.200 rows=4821000 loops=1)
  Sort Key: o.created_at DESC
  Sort Method: external merge  Disk: 1234567kB
  Buffers: shared hit=16 read=12345678, temp read=154321 written=154321
  ->  Hash Join  (cost=1800.00..870000.00 rows=500000 width=40) (actual time=2.100..9999.300 rows=4821000 loops=1)
        Hash Cond: (o.customer_id = c.id)
        Buffers: shared hit=16 read=12345678
        ->  Bitmap Heap Scan on order_lines_archive_2026 o  (cost=95.00..680000.00 rows=500000 width=32) (actual time=1.200..8888.400 rows=4821000 loops=12)
              Recheck Cond: (created_at > '2026-11-01'::date)
              Heap Blocks: exact=11234567
              Buffers: shared hit=16 read=12344501
              ->  Bitmap Index Scan on order_lines_archive_2026_created_at_idx  (cost=0.00..94.00 rows=500000 width=0) (actual time=900.900..900.900 rows=4821000 loops=12)
                    Index Cond: (created_at > '2026-11-01'::date)
                    Buffers: shared read=6600
        ->  Hash  (cost=1200.00..1200.00 rows=50000 width=16) (actual time=0.800..0.800 rows=50000 loops=1)
              Buckets: 65536  Batches: 1  Memory Usage: 3000kB
              Buffers: shared read=1177
              ->  Seq Scan on customers_with_a_longer_name c  (cost=0.00..1200.00 rows=50000 width=16) (actual time=0.010..1234.200 rows=50000 loops=1)
                    Buffers: shared read=1177`
	return explained(t, explain.ModeCustom, ctl, cand)
}

// wideWorkComparison is workComparison with the figures as wide as a
// demo's: the runs' totals (so each change has its share of the run),
// WAL per call in megabytes, blocks dirtied from none, and intervals of
// several digits.
func wideWorkComparison(t *testing.T) *compare.Report {
	t.Helper()
	base, cand := workRuns(t, func(i int) observe.Evidence {
		k := int64(1)
		if i >= 3 {
			k = 40
		}
		j := int64(i%3 + 1)
		qs := []observe.Query{
			{Fingerprint: "b2c3d4e5f6071829", QueryStats: observe.QueryStats{Calls: 5000, WALBytes: 5000 * 31000 * k * j, WALFPI: 4600 * k * j, SharedBlksDirtied: 5000 * k * j}},
			{Fingerprint: "a1b2c3d4e5f60718", QueryStats: observe.QueryStats{Calls: 5000, WALBytes: 5000 * 216 * (k / 40) * j, SharedBlksDirtied: 4150 * (k / 40) * j}},
			{Fingerprint: "c3d4e5f607182930", QueryStats: observe.QueryStats{Calls: 400, WALBytes: 400 * 1200 * k * j, WALFPI: 12 * k, SharedBlksDirtied: 400 * 3 * k * j}},
			{Fingerprint: "d4e5f60718293041", QueryStats: observe.QueryStats{Calls: 1234567, WALBytes: 1234567 * 98, SharedBlksDirtied: 1234567 / 9}},
		}
		var tot observe.QueryStats
		for _, q := range qs {
			tot.WALBytes += q.WALBytes
			tot.SharedBlksDirtied += q.SharedBlksDirtied
		}
		return observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: qs, Totals: tot}}
	})
	rep, err := compare.Runs(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
