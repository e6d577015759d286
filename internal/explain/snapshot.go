package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Snapshot is what a server's planner works with, read once per database:
// its version, its settings, and the indexes and statistics of the
// relations the plans touch.
type Snapshot struct {
	// Version is server_version_num (150004 for 15.4); VersionText is
	// server_version.
	Version     int    `json:"version"`
	VersionText string `json:"version_text"`
	Database    string `json:"database"`
	// Settings are the planner and resource settings by name.
	Settings map[string]Setting `json:"settings"`
	// HypoPG: the hypopg extension is installed in the database, so a
	// missing index can be checked hypothetically.
	HypoPG bool `json:"hypopg,omitempty"`
	// Relations are those loaded with LoadRelations, by name as plans
	// name them (without schema).
	Relations map[string]*Relation `json:"relations"`
}

// Setting is one server setting as this connection sees it.
type Setting struct {
	// Value is current_setting(): the setting with its unit as a person
	// writes it ("64MB", "1.1", "on").
	Value string `json:"value"`
	// Raw and Unit are pg_settings.setting and unit ("65536", "kB"):
	// what two servers' values are compared by.
	Raw     string `json:"raw"`
	Unit    string `json:"unit,omitempty"`
	Source  string `json:"source,omitempty"`
	Context string `json:"context,omitempty"`
}

// Relation is a table (or materialized view, partitioned table) and what
// the planner knows of it.
type Relation struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// Pages and Tuples are pg_class.relpages and reltuples; Tuples is
	// -1 when the relation was never vacuumed or analyzed.
	Pages  int64   `json:"pages"`
	Tuples float64 `json:"tuples"`
	// LastAnalyze is the later of last_analyze and last_autoanalyze,
	// nil when the statistics collector knows of none.
	LastAnalyze     *time.Time `json:"last_analyze,omitempty"`
	ModSinceAnalyze int64      `json:"mod_since_analyze"`
	// Updates and HOTUpdates are pg_stat_all_tables.n_tup_upd and
	// n_tup_hot_upd when the snapshot read them: rows updated since the
	// statistics were reset (or the database made), and of them those
	// updated HOT (no index written).
	Updates    int64 `json:"n_tup_upd"`
	HOTUpdates int64 `json:"n_tup_hot_upd"`
	// ColumnStats: pg_stats has rows for its columns (what ANALYZE
	// writes); false means the planner guesses every selectivity.
	ColumnStats bool      `json:"column_stats"`
	Indexes     []Index   `json:"indexes"`
	ExtStats    []ExtStat `json:"extended_statistics,omitempty"`
	// StatisticsTargets are the per-column statistics targets set
	// explicitly (ALTER TABLE ... ALTER COLUMN ... SET STATISTICS), by
	// column: pg_attribute.attstattarget where it is not the default
	// (-1, or NULL from PostgreSQL 17). A column absent has the
	// default, default_statistics_target.
	StatisticsTargets map[string]int `json:"statistics_targets,omitempty"`
}

// DefaultTarget stands for a column's default statistics target
// (default_statistics_target) in StatisticsTarget, as ALTER TABLE ...
// SET STATISTICS -1 sets it.
const DefaultTarget = -1

// StatisticsTarget is column's statistics target, DefaultTarget when
// none is set.
func (r *Relation) StatisticsTarget(column string) int {
	if n, ok := r.StatisticsTargets[column]; ok {
		return n
	}
	return DefaultTarget
}

// ExtStat returns r's extended statistics object called name, or nil.
func (r *Relation) ExtStat(name string) *ExtStat {
	for i := range r.ExtStats {
		if r.ExtStats[i].Name == name {
			return &r.ExtStats[i]
		}
	}
	return nil
}

// NeverAnalyzed reports whether the planner has no statistics of r: no
// column statistics, and no analyze known.
func (r *Relation) NeverAnalyzed() bool {
	return !r.ColumnStats && r.LastAnalyze == nil
}

// Index returns r's index called name, or nil.
func (r *Relation) Index(name string) *Index {
	for i := range r.Indexes {
		if r.Indexes[i].Name == name {
			return &r.Indexes[i]
		}
	}
	return nil
}

// Index is an index and whether the planner may use it.
type Index struct {
	Name string `json:"name"`
	// Def is pg_get_indexdef.
	Def string `json:"def"`
	// Valid is pg_index.indisvalid: false after a failed CREATE INDEX
	// CONCURRENTLY, and then the planner ignores it.
	Valid bool `json:"valid"`
	// Columns are the table's columns the index references, in the
	// table's order: its key and INCLUDE columns (pg_index.indkey), and
	// those its expressions and its predicate use (pg_depend). An
	// update that changes one of them cannot be HOT, whether the index
	// is valid or not (a CREATE INDEX CONCURRENTLY under way counts).
	Columns []string `json:"columns,omitempty"`
	// Summarizing: a BRIN index on PostgreSQL 16 or later, which does
	// not stop HOT updates.
	Summarizing bool `json:"summarizing,omitempty"`
}

// Covers reports whether an update that changes column col cannot be
// HOT because of ix.
func (ix *Index) Covers(col string) bool {
	return !ix.Summarizing && slices.Contains(ix.Columns, col)
}

// Shape is Def without the index's own name, to find the same index
// under another name.
func (ix *Index) Shape() string {
	return strings.Replace(ix.Def, " INDEX "+ix.Name+" ON ", " INDEX ON ", 1)
}

// ExtStat is an extended statistics object (CREATE STATISTICS).
type ExtStat struct {
	// Schema is the object's own schema, which need not be its
	// table's.
	Schema string   `json:"schema,omitempty"`
	Name   string   `json:"name"`
	Kinds  []string `json:"kinds"`
	// Def is pg_get_statisticsobjdef: the CREATE STATISTICS that makes
	// it (its name schema-qualified, its table as the snapshot's
	// session's search path names it).
	Def string `json:"def,omitempty"`
	// Built: ANALYZE has computed it.
	Built bool `json:"built"`
}

// settingsQuery reads the pg_settings categories of a snapshot, with the
// few settings of other categories that change plans or their cost, and
// those that change the WAL a statement writes (walSettings). The
// settings of "Resource Usage / Asynchronous Behavior" (up to 17) are
// named, since 18 moved them to "I/O" and "Worker Processes": by their
// category, a 13 or 17 control would have them and an 18 candidate not,
// and their differences would go unseen.
const settingsQuery = `
SELECT name, current_setting(name), setting, coalesce(unit, ''), source, context
FROM pg_settings
WHERE category LIKE 'Query Tuning%'
   OR category LIKE 'Resource Usage / Memory%'
   OR category LIKE 'Resource Usage / Asynchronous%'
   OR name IN ('jit_provider', 'track_io_timing', 'max_connections', 'server_version',
               'backend_flush_after', 'effective_io_concurrency', 'maintenance_io_concurrency', 'io_combine_limit',
               'max_worker_processes', 'max_parallel_workers', 'max_parallel_workers_per_gather',
               'max_parallel_maintenance_workers', 'parallel_leader_participation', 'old_snapshot_threshold',
               'data_checksums', 'wal_log_hints', 'full_page_writes')
ORDER BY name`

// LoadSnapshot reads the server's version and settings; relations are
// read later, with LoadRelations, once the plans say which.
func LoadSnapshot(ctx context.Context, conn *pgx.Conn, timeout time.Duration) (*Snapshot, error) {
	s := &Snapshot{Settings: map[string]Setting{}, Relations: map[string]*Relation{}}
	err := readOnly(ctx, conn, timeout, 0, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('server_version'), current_database(), "+
			"EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'hypopg')").
			Scan(&s.Version, &s.VersionText, &s.Database, &s.HypoPG); err != nil {
			return fmt.Errorf("server version: %w", err)
		}
		rows, err := tx.Query(ctx, settingsQuery)
		if err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		for rows.Next() {
			var name string
			var st Setting
			if err := rows.Scan(&name, &st.Value, &st.Raw, &st.Unit, &st.Source, &st.Context); err != nil {
				return fmt.Errorf("settings: %w", err)
			}
			s.Settings[name] = st
		}
		return rows.Err()
	})
	return s, err
}

const relationsQuery = `
SELECT c.oid, n.nspname, c.relname, c.relpages, c.reltuples::float8,
       greatest(s.last_analyze, s.last_autoanalyze),
       coalesce(s.n_mod_since_analyze, 0),
       coalesce(s.n_tup_upd, 0), coalesce(s.n_tup_hot_upd, 0),
       EXISTS (SELECT 1 FROM pg_stats ps WHERE ps.schemaname = n.nspname AND ps.tablename = c.relname),
       pg_table_is_visible(c.oid)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
WHERE c.relname = ANY($1) AND c.relkind IN ('r', 'p', 'm', 'f')
ORDER BY pg_table_is_visible(c.oid) DESC, n.nspname`

// indexesQuery reads the indexes of relations. The columns an index
// references are those of indkey (key and INCLUDE columns; 0 stands for
// an expression), and those its expressions and predicate use: index_create
// records each as a dependency of the index on the column (refobjsubid).
// Summarizing: BRIN from PostgreSQL 16, whose indexes no longer stop HOT.
const indexesQuery = `
SELECT i.indrelid, ic.relname, pg_get_indexdef(i.indexrelid), i.indisvalid,
       ARRAY(SELECT a.attname::text FROM pg_attribute a
             WHERE a.attrelid = i.indrelid AND a.attnum > 0 AND NOT a.attisdropped
               AND (a.attnum = ANY (i.indkey::int2[])
                    OR EXISTS (SELECT 1 FROM pg_depend d
                               WHERE d.classid = 'pg_class'::regclass AND d.objid = i.indexrelid
                                 AND d.refclassid = 'pg_class'::regclass AND d.refobjid = i.indrelid
                                 AND d.refobjsubid = a.attnum))
             ORDER BY a.attnum),
       am.amname = 'brin' AND current_setting('server_version_num')::int >= 160000
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_am am ON am.oid = ic.relam
WHERE i.indrelid = ANY($1)
ORDER BY ic.relname`

const extStatsQuery = `
SELECT s.stxrelid, n.nspname, s.stxname, s.stxkind::text[], pg_get_statisticsobjdef(s.oid),
       EXISTS (SELECT 1 FROM pg_stats_ext e WHERE e.statistics_schemaname = n.nspname AND e.statistics_name = s.stxname)
FROM pg_statistic_ext s
JOIN pg_namespace n ON n.oid = s.stxnamespace
WHERE s.stxrelid = ANY($1)
ORDER BY s.stxname`

// LoadRelations reads the relations called names (as plans name them,
// without schema) that the snapshot lacks. Of several relations of one
// name in different schemas, the one visible on the search path wins.
func (s *Snapshot) LoadRelations(ctx context.Context, conn *pgx.Conn, timeout time.Duration, names []string) error {
	var want []string
	for _, n := range names {
		if _, ok := s.Relations[n]; !ok && !slices.Contains(want, n) {
			want = append(want, n)
		}
	}
	if len(want) == 0 {
		return nil
	}
	return readOnly(ctx, conn, timeout, 0, func(tx pgx.Tx) error {
		byOID := map[uint32]*Relation{}
		var oids []uint32
		rows, err := tx.Query(ctx, relationsQuery, want)
		if err != nil {
			return fmt.Errorf("relations: %w", err)
		}
		for rows.Next() {
			var oid uint32
			r := &Relation{}
			var visible bool
			if err := rows.Scan(&oid, &r.Schema, &r.Name, &r.Pages, &r.Tuples, &r.LastAnalyze, &r.ModSinceAnalyze,
				&r.Updates, &r.HOTUpdates, &r.ColumnStats, &visible); err != nil {
				return fmt.Errorf("relations: %w", err)
			}
			if _, seen := s.Relations[r.Name]; seen {
				continue // the visible one came first
			}
			s.Relations[r.Name] = r
			byOID[oid] = r
			oids = append(oids, oid)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("relations: %w", err)
		}
		for _, n := range want {
			if _, ok := s.Relations[n]; !ok {
				s.Relations[n] = nil // absent here: remembered, not asked again
			}
		}
		if len(oids) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, indexesQuery, oids)
		if err != nil {
			return fmt.Errorf("indexes: %w", err)
		}
		for rows.Next() {
			var oid uint32
			var ix Index
			if err := rows.Scan(&oid, &ix.Name, &ix.Def, &ix.Valid, &ix.Columns, &ix.Summarizing); err != nil {
				return fmt.Errorf("indexes: %w", err)
			}
			if r := byOID[oid]; r != nil {
				r.Indexes = append(r.Indexes, ix)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("indexes: %w", err)
		}
		rows, err = tx.Query(ctx, extStatsQuery, oids)
		if err != nil {
			return fmt.Errorf("extended statistics: %w", err)
		}
		for rows.Next() {
			var oid uint32
			var es ExtStat
			if err := rows.Scan(&oid, &es.Schema, &es.Name, &es.Kinds, &es.Def, &es.Built); err != nil {
				return fmt.Errorf("extended statistics: %w", err)
			}
			if r := byOID[oid]; r != nil {
				r.ExtStats = append(r.ExtStats, es)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("extended statistics: %w", err)
		}
		return loadTargets(ctx, tx, oids, byOID)
	})
}

// targetsQuery reads the columns whose statistics target is set: up to
// 16 attstattarget is -1 by default, from 17 NULL (and NULL >= 0 is
// not true).
const targetsQuery = `
SELECT attrelid, attname, attstattarget::int
FROM pg_attribute
WHERE attrelid = ANY($1) AND attnum > 0 AND NOT attisdropped AND attstattarget >= 0
ORDER BY attrelid, attnum`

// loadTargets reads the relations' statistics targets set by column.
func loadTargets(ctx context.Context, tx pgx.Tx, oids []uint32, byOID map[uint32]*Relation) error {
	rows, err := tx.Query(ctx, targetsQuery, oids)
	if err != nil {
		return fmt.Errorf("statistics targets: %w", err)
	}
	for rows.Next() {
		var oid uint32
		var col string
		var n int
		if err := rows.Scan(&oid, &col, &n); err != nil {
			return fmt.Errorf("statistics targets: %w", err)
		}
		if r := byOID[oid]; r != nil {
			if r.StatisticsTargets == nil {
				r.StatisticsTargets = map[string]int{}
			}
			r.StatisticsTargets[col] = n
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("statistics targets: %w", err)
	}
	return nil
}

// readOnly runs f in a read-only transaction with statement_timeout and
// lock_timeout (0: 1 s), and rolls it back whatever happens.
func readOnly(ctx context.Context, conn *pgx.Conn, timeout, lockTimeout time.Duration, f func(pgx.Tx) error) error {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if lockTimeout <= 0 {
		lockTimeout = time.Second
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d; SET LOCAL lock_timeout = %d",
		timeout.Milliseconds(), lockTimeout.Milliseconds()), pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	return f(tx)
}
