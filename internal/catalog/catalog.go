package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Catalog is a snapshot of what the findings read from one database.
type Catalog struct {
	// Database is the database connected to; ServerVersion is
	// server_version_num (150004 for 15.4).
	Database      string
	ServerVersion int
	Tables        []*Table

	// PGSS holds pg_stat_statements, or is nil when the extension is
	// not installed in this database (PGSSReason says why).
	PGSS       *PGSS
	PGSSReason string

	// HypoPG says whether hypothetical indexes can verify a suggestion:
	// "installed" (the extension exists in this database), "available"
	// (packaged on the server, not created here) or "missing".
	HypoPG string

	// SharedPreload is shared_preload_libraries.
	SharedPreload string
}

// Table is a table or partitioned table, with its planner statistics.
type Table struct {
	Schema, Name string
	// Pages and Tuples are pg_class.relpages and reltuples: estimates
	// that VACUUM and ANALYZE refresh; Tuples is -1 for a table never
	// analyzed (PostgreSQL 14 and later).
	Pages  int64
	Tuples float64
	// Inserts is pg_stat_user_tables.n_tup_ins since the last reset.
	Inserts int64
	// SizePages is the table's size on disk in pages
	// (pg_relation_size), which, unlike Pages, a schema restored by
	// pg_upgrade before PostgreSQL 18 does not leave at 0.
	SizePages int64
	// ColumnStats: pg_stats has rows for its columns (what ANALYZE
	// writes, and PostgreSQL 18's pg_upgrade carries over); Analyzed:
	// pg_stat_user_tables knows an ANALYZE of it (cumulative statistics,
	// which pg_upgrade does not carry over). Readable: the user may
	// SELECT it, without which pg_stats shows none of its rows.
	ColumnStats, Analyzed, Readable bool
	// UnbuiltStatistics are its extended statistics (CREATE
	// STATISTICS) that ANALYZE has not computed since they were made:
	// pg_upgrade does not carry them over.
	UnbuiltStatistics []string
	Columns           []Column
	Indexes           []Index
}

// QualifiedName is schema.name, quoted where needed.
func (t *Table) QualifiedName() string { return QuoteIdent(t.Schema) + "." + QuoteIdent(t.Name) }

// Column returns the column called name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// Column is a table column.
type Column struct {
	Name string
	Type string // format_type: "uuid", "bigint", "character varying(64)"
	// Default is the default expression ("gen_random_uuid()"), or "".
	Default  string
	Identity bool
}

// Index is an index of a table.
type Index struct {
	Name       string
	Primary    bool
	Unique     bool
	Partial    bool // has a predicate (pg_index.indpred)
	Expression bool // has an expression column (pg_index.indexprs)
	Method     string
	// Columns are the key columns in order; "" stands for an expression.
	Columns []string
	Def     string // pg_get_indexdef
}

// Options bound the queries Load sends.
type Options struct {
	// StatementTimeout bounds each query; 0 means 30 s.
	StatementTimeout time.Duration
}

// Load reads the catalog of the database conn is connected to.
func Load(ctx context.Context, conn *pgx.Conn, opts Options) (*Catalog, error) {
	timeout := opts.StatementTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	c := &Catalog{}
	err := readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT current_database(), current_setting('server_version_num')::int, current_setting('shared_preload_libraries')").
			Scan(&c.Database, &c.ServerVersion, &c.SharedPreload); err != nil {
			return fmt.Errorf("server version: %w", err)
		}
		if err := loadTables(ctx, tx, c); err != nil {
			return err
		}
		return loadExtensions(ctx, tx, c)
	})
	if err != nil {
		return nil, err
	}
	if c.PGSS != nil {
		// A separate transaction: a pg_stat_statements that is
		// installed but not preloaded fails its query, which must not
		// lose the tables.
		if err := readOnly(ctx, conn, timeout, func(tx pgx.Tx) error { return loadPGSS(ctx, tx, c.PGSS) }); err != nil {
			c.PGSSReason = "pg_stat_statements cannot be read: " + err.Error()
			c.PGSS = nil
		}
	}
	return c, nil
}

// readOnly runs f in a read-only transaction with a statement timeout, and
// rolls it back.
func readOnly(ctx context.Context, conn *pgx.Conn, timeout time.Duration, f func(pgx.Tx) error) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", timeout.Milliseconds())); err != nil {
		return err
	}
	return f(tx)
}

const tablesQuery = `
SELECT c.oid, n.nspname, c.relname, c.relpages, c.reltuples, coalesce(s.n_tup_ins, 0),
       pg_relation_size(c.oid) / current_setting('block_size')::int,
       EXISTS (SELECT 1 FROM pg_stats ps WHERE ps.schemaname = n.nspname AND ps.tablename = c.relname),
       coalesce(s.last_analyze, s.last_autoanalyze) IS NOT NULL,
       has_table_privilege(c.oid, 'SELECT'),
       coalesce((SELECT array_agg(e.stxname::text ORDER BY e.stxname) FROM pg_statistic_ext e
                 WHERE e.stxrelid = c.oid AND NOT EXISTS (SELECT 1 FROM pg_stats_ext se
                   WHERE se.statistics_schemaname = n.nspname AND se.statistics_name = e.stxname)), '{}')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%'
ORDER BY n.nspname, c.relname`

const columnsQuery = `
SELECT a.attrelid, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
       coalesce(pg_get_expr(d.adbin, d.adrelid), ''), a.attidentity <> ''
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%'
ORDER BY a.attrelid, a.attnum`

const indexesQuery = `
SELECT i.indrelid, ic.relname, i.indisprimary, i.indisunique, i.indpred IS NOT NULL,
       i.indexprs IS NOT NULL, am.amname, i.indkey::int2[], i.indnkeyatts, pg_get_indexdef(i.indexrelid)
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_am am ON am.oid = ic.relam
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%'
ORDER BY i.indrelid, ic.relname`

func loadTables(ctx context.Context, tx pgx.Tx, c *Catalog) error {
	byOID := map[uint32]*Table{}
	rows, err := tx.Query(ctx, tablesQuery)
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	for rows.Next() {
		var oid uint32
		t := &Table{}
		var tuples float32
		if err := rows.Scan(&oid, &t.Schema, &t.Name, &t.Pages, &tuples, &t.Inserts,
			&t.SizePages, &t.ColumnStats, &t.Analyzed, &t.Readable, &t.UnbuiltStatistics); err != nil {
			return fmt.Errorf("tables: %w", err)
		}
		t.Tuples = float64(tuples)
		byOID[oid] = t
		c.Tables = append(c.Tables, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	attnames := map[uint32]map[int16]string{}
	rows, err = tx.Query(ctx, columnsQuery)
	if err != nil {
		return fmt.Errorf("columns: %w", err)
	}
	for rows.Next() {
		var oid uint32
		var num int16
		var col Column
		if err := rows.Scan(&oid, &num, &col.Name, &col.Type, &col.Default, &col.Identity); err != nil {
			return fmt.Errorf("columns: %w", err)
		}
		if t := byOID[oid]; t != nil {
			t.Columns = append(t.Columns, col)
			if attnames[oid] == nil {
				attnames[oid] = map[int16]string{}
			}
			attnames[oid][num] = col.Name
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("columns: %w", err)
	}
	rows, err = tx.Query(ctx, indexesQuery)
	if err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	for rows.Next() {
		var oid uint32
		var ix Index
		var keys []int16
		var nkey int16
		if err := rows.Scan(&oid, &ix.Name, &ix.Primary, &ix.Unique, &ix.Partial, &ix.Expression,
			&ix.Method, &keys, &nkey, &ix.Def); err != nil {
			return fmt.Errorf("indexes: %w", err)
		}
		t := byOID[oid]
		if t == nil {
			continue
		}
		for i, k := range keys {
			if i >= int(nkey) {
				break // INCLUDE columns are not keys
			}
			ix.Columns = append(ix.Columns, attnames[oid][k]) // 0: an expression, ""
		}
		t.Indexes = append(t.Indexes, ix)
	}
	return rows.Err()
}

func loadExtensions(ctx context.Context, tx pgx.Tx, c *Catalog) error {
	installed := map[string]bool{}
	available := map[string]bool{}
	rows, err := tx.Query(ctx, `SELECT name, installed_version IS NOT NULL FROM pg_available_extensions
		WHERE name IN ('pg_stat_statements', 'hypopg')`)
	if err != nil {
		return fmt.Errorf("extensions: %w", err)
	}
	for rows.Next() {
		var name string
		var inst bool
		if err := rows.Scan(&name, &inst); err != nil {
			return fmt.Errorf("extensions: %w", err)
		}
		available[name] = true
		installed[name] = inst
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("extensions: %w", err)
	}
	switch {
	case installed["hypopg"]:
		c.HypoPG = "installed"
	case available["hypopg"]:
		c.HypoPG = "available"
	default:
		c.HypoPG = "missing"
	}
	switch {
	case installed["pg_stat_statements"]:
		c.PGSS = &PGSS{}
	case available["pg_stat_statements"]:
		c.PGSSReason = "pg_stat_statements is not installed in database " + c.Database + " (CREATE EXTENSION pg_stat_statements)"
	default:
		c.PGSSReason = "pg_stat_statements is not available on the server"
	}
	return nil
}

// PGSS is what pg_stat_statements holds, for every database.
type PGSS struct {
	// TrackPlanning is pg_stat_statements.track_planning; when it is
	// off, PlanMS is 0 in every row whatever planning cost.
	TrackPlanning bool
	// HasPlanColumns is false before pg_stat_statements 1.8
	// (PostgreSQL 13), which has no planning figures at all.
	HasPlanColumns bool
	Rows           []PGSSRow
}

// PGSSRow is one pg_stat_statements entry.
type PGSSRow struct {
	QueryID  int64
	Database string
	Query    string
	Calls    int64
	Plans    int64
	ExecMS   float64
	PlanMS   float64
}

func loadPGSS(ctx context.Context, tx pgx.Tx, p *PGSS) error {
	var tp, extversion string
	if err := tx.QueryRow(ctx, `SELECT coalesce(current_setting('pg_stat_statements.track_planning', true), ''),
		(SELECT extversion FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&tp, &extversion); err != nil {
		return err
	}
	// The columns are the extension's, not the server's: an extension
	// created on an older server and carried over by pg_upgrade keeps its
	// version (and its view) until ALTER EXTENSION ... UPDATE, so a
	// PostgreSQL 13 or later server may still show 1.7's total_time.
	p.HasPlanColumns = extVersionAtLeast(extversion, 1, 8)
	p.TrackPlanning = p.HasPlanColumns && tp == "on"
	q := `SELECT s.queryid, coalesce(d.datname, ''), s.query, s.calls, 0::bigint, s.total_time, 0::float8
		FROM pg_stat_statements s LEFT JOIN pg_database d ON d.oid = s.dbid`
	if p.HasPlanColumns {
		q = `SELECT s.queryid, coalesce(d.datname, ''), s.query, s.calls, s.plans, s.total_exec_time, s.total_plan_time
		FROM pg_stat_statements s LEFT JOIN pg_database d ON d.oid = s.dbid`
	}
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return err
	}
	for rows.Next() {
		var r PGSSRow
		var qid *int64
		var query *string
		if err := rows.Scan(&qid, &r.Database, &query, &r.Calls, &r.Plans, &r.ExecMS, &r.PlanMS); err != nil {
			return err
		}
		if qid == nil || query == nil {
			continue // another user's entry, hidden from this role
		}
		r.QueryID, r.Query = *qid, *query
		p.Rows = append(p.Rows, r)
	}
	return rows.Err()
}

// extVersionAtLeast reports whether an extension version such as "1.10"
// is major.minor or later; numerically, so "1.10" is after "1.8".
func extVersionAtLeast(v string, major, minor int) bool {
	a, b, _ := strings.Cut(v, ".")
	ma, err1 := strconv.Atoi(a)
	mi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// Table returns the table called name ("t" or "schema.t", as written in a
// query), or nil. An unqualified name is looked up in public first, then
// in any schema when only one has it.
func (c *Catalog) Table(schema, name string) *Table {
	if c == nil {
		return nil
	}
	var found []*Table
	for _, t := range c.Tables {
		if t.Name != name {
			continue
		}
		if schema != "" {
			if t.Schema == schema {
				return t
			}
			continue
		}
		if t.Schema == "public" {
			return t
		}
		found = append(found, t)
	}
	if len(found) == 1 {
		return found[0]
	}
	return nil
}

// QuoteIdent quotes an identifier when it needs it.
func QuoteIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// ErrNotReadOnly is returned by Explain for EXPLAIN ANALYZE of anything but
// a plain SELECT.
var ErrNotReadOnly = errors.New("EXPLAIN ANALYZE refused: not a plain SELECT")
