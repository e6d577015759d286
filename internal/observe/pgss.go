package observe

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// entryKey is a pg_stat_statements entry's identity.
type entryKey struct {
	userid, dbid uint32
	queryid      int64
	toplevel     bool
}

// queryKey is what deltas are summed by before fingerprinting: a query id
// in a database, over its users. Query ids hash relation oids, so the same
// id in two databases may be two different queries.
type queryKey struct {
	dbid    uint32
	queryid int64
}

// counters are the cumulative figures of an entry, or a delta of them.
type counters struct {
	calls, plans, rows    int64
	execMS, planMS        float64
	blksHit, blksRead     int64
	tempRead, tempWritten int64
	blksDirtied           int64
	blksWritten           int64
	walRecords, walFPI    int64
	walBytes              float64
}

func (c *counters) add(o counters) {
	c.calls += o.calls
	c.plans += o.plans
	c.rows += o.rows
	c.execMS += o.execMS
	c.planMS += o.planMS
	c.blksHit += o.blksHit
	c.blksRead += o.blksRead
	c.tempRead += o.tempRead
	c.tempWritten += o.tempWritten
	c.blksDirtied += o.blksDirtied
	c.blksWritten += o.blksWritten
	c.walRecords += o.walRecords
	c.walFPI += o.walFPI
	c.walBytes += o.walBytes
}

func (c counters) sub(o counters) counters {
	return counters{
		calls: c.calls - o.calls, plans: c.plans - o.plans, rows: c.rows - o.rows,
		execMS: c.execMS - o.execMS, planMS: c.planMS - o.planMS,
		blksHit: c.blksHit - o.blksHit, blksRead: c.blksRead - o.blksRead,
		tempRead: c.tempRead - o.tempRead, tempWritten: c.tempWritten - o.tempWritten,
		blksDirtied: c.blksDirtied - o.blksDirtied, blksWritten: c.blksWritten - o.blksWritten,
		walRecords: c.walRecords - o.walRecords, walFPI: c.walFPI - o.walFPI,
		walBytes: c.walBytes - o.walBytes,
	}
}

type entry struct {
	counters
	// since is stats_since (PostgreSQL 17), "" before.
	since string
}

type pgssSnapshot struct {
	at         time.Time
	entries    map[entryKey]entry
	dealloc    int64
	statsReset string // pg_stat_statements_info.stats_reset, "" without it
}

// pgssTracker sums pg_stat_statements deltas snapshot to snapshot.
type pgssTracker struct {
	caps      *Capabilities
	snapQuery string
	infoQuery string

	prev  *pgssSnapshot
	acc   map[queryKey]*counters
	texts map[queryKey]string
	// restarted marks queries whose entry restarted from zero during
	// the run: their delta misses what ran before the restart.
	restarted map[queryKey]bool

	snapshots int
	// queries counts the statements sent, each its own transaction.
	queries int64
	resets  []string // stats_reset of each reset seen
	evicted int64    // dealloc increments
	// entryRestarts counts entries that restarted without a reset:
	// evicted and re-created, or reset one by one.
	entryRestarts int
	intervals     []Interval

	// window is acc at the window's snapshot (Collector.Mark), with
	// the queries restarted by then; nil until it is taken.
	window          map[queryKey]counters
	windowRestarted map[queryKey]bool
	windowAt        time.Time
}

// markWindow keeps the deltas summed so far as the window's.
func (t *pgssTracker) markWindow() {
	t.window = make(map[queryKey]counters, len(t.acc))
	for k, c := range t.acc {
		t.window[k] = *c
	}
	t.windowRestarted = maps.Clone(t.restarted)
	if t.prev != nil {
		t.windowAt = t.prev.at
	}
}

func newPGSSTracker(c *Capabilities) *pgssTracker {
	col := func(name, expr, missing string) string {
		if c.pgssColumns[name] {
			return expr
		}
		return missing
	}
	exec := "total_exec_time"
	if !c.pgssColumns[exec] {
		exec = "total_time" // before 1.8
	}
	q := tag + "SELECT userid, dbid, queryid, " + col("toplevel", "toplevel", "true") + ", calls, " +
		col("plans", "plans", "0::bigint") + ", " + exec + ", " + col("total_plan_time", "total_plan_time", "0::float8") +
		", rows, shared_blks_hit, shared_blks_read, temp_blks_read, temp_blks_written, " +
		col("shared_blks_dirtied", "shared_blks_dirtied", "0::bigint") + ", " + col("shared_blks_written", "shared_blks_written", "0::bigint") + ", " +
		col("wal_records", "wal_records", "0::bigint") + ", " + col("wal_fpi", "wal_fpi", "0::bigint") + ", " +
		col("wal_bytes", "wal_bytes::float8", "0::float8") + ", " + col("stats_since", "stats_since::text", "''") +
		" FROM " + c.pgssSchema + ".pg_stat_statements(false) WHERE queryid IS NOT NULL"
	t := &pgssTracker{caps: c, snapQuery: q, acc: map[queryKey]*counters{}, texts: map[queryKey]string{}, restarted: map[queryKey]bool{}}
	if c.PGSSInfo {
		t.infoQuery = tag + "SELECT dealloc, coalesce(stats_reset::text, '') FROM " + c.pgssSchema + ".pg_stat_statements_info"
	}
	return t
}

func (t *pgssTracker) read(ctx context.Context, conn *pgx.Conn, now time.Time) (*pgssSnapshot, error) {
	s := &pgssSnapshot{at: now, entries: map[entryKey]entry{}}
	// Info first: a reset between the two reads then shows as counters
	// that went down, which restart detection also catches.
	if t.infoQuery != "" {
		t.queries++
		if err := conn.QueryRow(ctx, t.infoQuery).Scan(&s.dealloc, &s.statsReset); err != nil {
			return nil, fmt.Errorf("pg_stat_statements_info: %w", err)
		}
	}
	t.queries++
	rows, err := conn.Query(ctx, t.snapQuery)
	if err != nil {
		return nil, fmt.Errorf("pg_stat_statements: %w", err)
	}
	var k entryKey
	var e entry
	_, err = pgx.ForEachRow(rows, []any{&k.userid, &k.dbid, &k.queryid, &k.toplevel, &e.calls, &e.plans, &e.execMS, &e.planMS,
		&e.rows, &e.blksHit, &e.blksRead, &e.tempRead, &e.tempWritten,
		&e.blksDirtied, &e.blksWritten, &e.walRecords, &e.walFPI, &e.walBytes, &e.since}, func() error {
		s.entries[k] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pg_stat_statements: %w", err)
	}
	return s, nil
}

// fetchTexts reads the texts of the queries not seen before. Only those:
// reading texts reads pg_stat_statements' whole query file.
func (t *pgssTracker) fetchTexts(ctx context.Context, conn *pgx.Conn, s *pgssSnapshot) error {
	var ids []int64
	seen := map[int64]bool{}
	for k := range s.entries {
		qk := queryKey{k.dbid, k.queryid}
		if _, ok := t.texts[qk]; !ok && !seen[k.queryid] {
			seen[k.queryid] = true
			ids = append(ids, k.queryid)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return t.readTexts(ctx, conn, ids, func(qk queryKey, text string) { t.texts[qk] = text })
}

// readTexts reads the texts of query ids, calling each with every
// database's.
func (t *pgssTracker) readTexts(ctx context.Context, conn *pgx.Conn, ids []int64, each func(queryKey, string)) error {
	t.queries++
	rows, err := conn.Query(ctx, tag+"SELECT dbid, queryid, query FROM "+t.caps.pgssSchema+
		".pg_stat_statements(true) WHERE queryid = ANY($1) AND query IS NOT NULL", ids)
	if err != nil {
		return fmt.Errorf("pg_stat_statements texts: %w", err)
	}
	var qk queryKey
	var text string
	_, err = pgx.ForEachRow(rows, []any{&qk.dbid, &qk.queryid, &text}, func() error {
		each(qk, text)
		return nil
	})
	if err != nil {
		return fmt.Errorf("pg_stat_statements texts: %w", err)
	}
	return nil
}

// own reports whether a query is the observer's.
func (t *pgssTracker) own(qk queryKey) bool {
	return strings.Contains(t.texts[qk], "pgrehearse-observe")
}

// snapshot reads pg_stat_statements and adds the deltas since the last
// snapshot. The first snapshot is the baseline.
func (t *pgssTracker) snapshot(ctx context.Context, conn *pgx.Conn, now time.Time) error {
	s, err := t.read(ctx, conn, now)
	if err != nil {
		return err
	}
	if err := t.fetchTexts(ctx, conn, s); err != nil {
		return err
	}
	t.snapshots++
	prev := t.prev
	t.prev = s
	if prev == nil {
		return nil
	}
	iv := Interval{Start: prev.at.UTC().Format(TimeLayout), End: s.at.UTC().Format(TimeLayout)}
	reset := t.infoQuery != "" && s.statsReset != prev.statsReset
	if reset {
		// A full reset also zeroes dealloc.
		iv.Reset = true
		t.resets = append(t.resets, s.statsReset)
		iv.Evicted = s.dealloc
	} else {
		iv.Evicted = max(s.dealloc-prev.dealloc, 0)
	}
	t.evicted += iv.Evicted
	if reset || iv.Evicted > 0 {
		// What ran between the last snapshot and the reset or the
		// eviction is lost: mark every query that may have lost some.
		for k := range prev.entries {
			if _, still := s.entries[k]; reset || !still {
				if qk := (queryKey{k.dbid, k.queryid}); k.toplevel && !t.own(qk) {
					t.restarted[qk] = true
				}
			}
		}
	}
	for k, cur := range s.entries {
		if !k.toplevel {
			// Statements run inside functions: their time is
			// already in the calling statement's.
			continue
		}
		qk := queryKey{k.dbid, k.queryid}
		if t.own(qk) {
			continue
		}
		p, ok := prev.entries[k]
		var d counters
		switch {
		case reset || !ok:
			// Created (or re-created) since the last snapshot, or
			// everything restarted: all of it is new.
			d = cur.counters
		case cur.calls < p.calls || cur.plans < p.plans || cur.since != p.since:
			d = cur.counters
			t.restarted[qk] = true
			t.entryRestarts++
			iv.Restarted++
		default:
			d = cur.counters.sub(p.counters)
		}
		if d.calls == 0 && d.plans == 0 {
			continue
		}
		a := t.acc[qk]
		if a == nil {
			a = &counters{}
			t.acc[qk] = a
		}
		a.add(d)
		iv.Calls += d.calls
		iv.ExecMS += d.execMS
		iv.PlanMS += d.planMS
	}
	iv.ExecMS, iv.PlanMS = round3(iv.ExecMS), round3(iv.PlanMS)
	t.intervals = append(t.intervals, iv)
	return nil
}
