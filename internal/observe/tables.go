package observe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Per-table update counters: pg_stat_user_tables' n_tup_upd and
// n_tup_hot_upd, read in every database at the start and at the end of
// the observation, so that the evidence says how many of each table's
// updates were HOT (no index written) over the run, and which indexes
// the updated tables had at its end (which columns they cover decides
// whether an update can be HOT). A comparison of two targets names an
// index on the candidate that stopped HOT updates from these
// (internal/compare's hot.go).

// TableUpdates are a table's updates over the observation.
type TableUpdates struct {
	Database string `json:"database"`
	Schema   string `json:"schema"`
	Name     string `json:"name"`
	// Updates and HOTUpdates are the deltas of n_tup_upd and
	// n_tup_hot_upd over the observation.
	Updates    int64 `json:"n_tup_upd"`
	HOTUpdates int64 `json:"n_tup_hot_upd"`
	// Indexes are the table's indexes at the end of the observation.
	Indexes []TableIndex `json:"indexes"`
}

// TableIndex is an index of an updated table.
type TableIndex struct {
	Name string `json:"name"`
	// Columns are the table's columns the index refers to (key,
	// included, in expressions or in its predicate), by name, sorted:
	// an update that changes one of them cannot be HOT.
	Columns []string `json:"columns"`
	Method  string   `json:"method"`
	// Summarizing: a BRIN index from PostgreSQL 16, which does not stop
	// HOT updates.
	Summarizing bool `json:"summarizing,omitempty"`
}

// maxTableDatabases bounds how many databases the counters are read in.
const maxTableDatabases = 32

// TableFlushWait bounds how long the last read waits for the other
// client backends of the databases to end (a backend flushes its table
// counters at least every second while busy, and when it exits), unless
// Options.Live.
const TableFlushWait = time.Second

type tableKey struct{ db, schema, name string }

type tableCounts struct{ upd, hot int64 }

// tableTracker holds the counters read at the start.
type tableTracker struct {
	start map[tableKey]tableCounts
	err   error
}

// databases are the databases the counters are read in: every one that
// accepts connections, the observer's first.
func (o *Collector) tableDatabases(ctx context.Context) ([]string, error) {
	rows, err := o.conn.Query(ctx, tag+"SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname = current_database() DESC, datname")
	if err != nil {
		return nil, err
	}
	dbs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if len(dbs) > maxTableDatabases {
		dbs = dbs[:maxTableDatabases]
	}
	return dbs, err
}

// readTables reads every database's table counters; with indexes, also
// the indexes of the tables in want (by key).
func (o *Collector) readTables(ctx context.Context, want func(tableKey, tableCounts) bool) (map[tableKey]tableCounts, map[tableKey][]TableIndex, error) {
	dbs, err := o.tableDatabases(ctx)
	if err != nil {
		return nil, nil, err
	}
	counts := map[tableKey]tableCounts{}
	indexes := map[tableKey][]TableIndex{}
	var errs []error
	for _, db := range dbs {
		conn := o.conn
		if db != o.caps.Database {
			c, err := connect(ctx, o.dsn, db)
			if err != nil {
				// Dropped since, or not ours to enter.
				continue
			}
			conn = c
		}
		err := readTablesOf(ctx, conn, db, o.caps.ServerVersionNum, counts, indexes, want)
		if conn != o.conn {
			conn.Close(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", db, err))
		}
	}
	if len(errs) > 0 {
		return counts, indexes, errs[0]
	}
	return counts, indexes, nil
}

func readTablesOf(ctx context.Context, conn *pgx.Conn, db string, version int, counts map[tableKey]tableCounts, indexes map[tableKey][]TableIndex,
	want func(tableKey, tableCounts) bool) error {
	rows, err := conn.Query(ctx, tag+"SELECT relid::bigint, schemaname::text, relname::text, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables")
	if err != nil {
		return err
	}
	var relids []int64
	byRel := map[int64]tableKey{}
	var relid int64
	var k tableKey
	var c tableCounts
	k.db = db
	_, err = pgx.ForEachRow(rows, []any{&relid, &k.schema, &k.name, &c.upd, &c.hot}, func() error {
		counts[k] = c
		if want != nil && want(k, c) {
			relids = append(relids, relid)
			byRel[relid] = k
		}
		return nil
	})
	if err != nil || len(relids) == 0 {
		return err
	}
	rows, err = conn.Query(ctx, tag+`SELECT x.indrelid::bigint, i.relname::text, am.amname::text,
	array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = x.indrelid AND a.attnum > 0 AND NOT a.attisdropped
		AND (a.attnum = ANY (x.indkey::int2[]) OR a.attnum IN (SELECT d.refobjsubid FROM pg_depend d
			WHERE d.classid = 'pg_class'::regclass AND d.objid = x.indexrelid AND d.refclassid = 'pg_class'::regclass
			AND d.refobjid = x.indrelid AND d.refobjsubid > 0))
		ORDER BY 1)
	FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam
	WHERE x.indrelid = ANY ($1) ORDER BY 2`, relids)
	if err != nil {
		return err
	}
	var ix TableIndex
	_, err = pgx.ForEachRow(rows, []any{&relid, &ix.Name, &ix.Method, &ix.Columns}, func() error {
		ix.Summarizing = ix.Method == "brin" && version >= 160000
		key := byRel[relid]
		indexes[key] = append(indexes[key], TableIndex{Name: ix.Name, Method: ix.Method, Columns: slices.Clone(ix.Columns), Summarizing: ix.Summarizing})
		return nil
	})
	return err
}

// startTables reads the counters at the start.
func (o *Collector) startTables(ctx context.Context) {
	t := &tableTracker{}
	o.tables = t
	err := o.timed(0, nil, func() error {
		var err error
		t.start, _, err = o.readTables(ctx, nil)
		return err
	})
	if err != nil {
		t.err = err
	}
}

// waitBackends waits, up to TableFlushWait, until no other client
// backend is connected, so that the counters the replay's sessions kept
// are flushed when they are read. It returns how many times it looked.
func (o *Collector) waitBackends(ctx context.Context) (looks int) {
	if o.opts.Live {
		return 0
	}
	deadline := time.Now().Add(TableFlushWait)
	for time.Now().Before(deadline) {
		var n int64
		looks++
		err := o.conn.QueryRow(ctx, tag+"SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datid IS NOT NULL "+
			"AND coalesce(application_name, '') <> $1 AND backend_type = 'client backend'", ApplicationName).Scan(&n)
		if err != nil || n == 0 {
			return looks
		}
		time.Sleep(50 * time.Millisecond)
	}
	return looks
}

// stopTables reads the counters at the end and builds the evidence's
// tables: those with updates over the observation.
func (o *Collector) stopTables(ctx context.Context) ([]TableUpdates, error) {
	t := o.tables
	if t == nil {
		return nil, nil
	}
	if t.err != nil {
		return nil, t.err
	}
	o.flushLooks = o.waitBackends(ctx)
	delta := func(k tableKey, c tableCounts) tableCounts {
		s := t.start[k]
		if c.upd < s.upd || c.hot < s.hot {
			// Reset since: counted from the reset.
			return c
		}
		return tableCounts{c.upd - s.upd, c.hot - s.hot}
	}
	var counts map[tableKey]tableCounts
	var indexes map[tableKey][]TableIndex
	err := o.timed(0, nil, func() error {
		var err error
		counts, indexes, err = o.readTables(ctx, func(k tableKey, c tableCounts) bool { return delta(k, c).upd > 0 })
		return err
	})
	var out []TableUpdates
	for k, c := range counts {
		d := delta(k, c)
		if d.upd <= 0 {
			continue
		}
		ix := indexes[k]
		if ix == nil {
			ix = []TableIndex{}
		}
		out = append(out, TableUpdates{Database: k.db, Schema: k.schema, Name: k.name, Updates: d.upd, HOTUpdates: d.hot, Indexes: ix})
	}
	slices.SortFunc(out, func(a, b TableUpdates) int {
		return cmp.Or(cmp.Compare(b.Updates, a.Updates), cmp.Compare(a.Database, b.Database), cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Name, b.Name))
	})
	if out == nil {
		out = []TableUpdates{}
	}
	return out, err
}
