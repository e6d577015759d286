package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ApplicationName is the observer connection's application_name.
const ApplicationName = "pgrehearse-observe"

// tag starts every statement the observer sends, so that its own entries
// are recognized in pg_stat_statements.
const tag = "/* pgrehearse-observe */ "

// Capabilities is what the server lets the observer see.
type Capabilities struct {
	ServerVersion    string `json:"server_version"`
	ServerVersionNum int    `json:"server_version_num"`
	// Database is the database the observer is connected to: the
	// target's, or another one holding pg_stat_statements.
	Database string `json:"database"`
	User     string `json:"user"`
	// ReadAllStats: superuser or a member of pg_read_all_stats. Without
	// it other users' query texts, query ids and wait events are hidden.
	ReadAllStats bool `json:"read_all_stats"`

	// PGSS is "installed" (readable here), "not_preloaded" (created but
	// not in shared_preload_libraries), "not_created" (preloaded, no
	// CREATE EXTENSION in any database the observer could reach),
	// "unavailable" (not on the server) or "unreadable".
	PGSS         string `json:"pg_stat_statements"`
	PGSSVersion  string `json:"pg_stat_statements_version,omitempty"`
	PGSSDatabase string `json:"pg_stat_statements_database,omitempty"`
	// TrackPlanning is pg_stat_statements.track_planning.
	TrackPlanning bool `json:"track_planning"`
	// PGSSMax is pg_stat_statements.max, the number of entries kept
	// before the least used are evicted.
	PGSSMax int `json:"pg_stat_statements_max,omitempty"`
	// PGSSInfo: pg_stat_statements_info exists (1.9, PostgreSQL 14),
	// which is how resets and evictions are detected.
	PGSSInfo bool `json:"pg_stat_statements_info"`
	// ComputeQueryID is compute_query_id ("" before PostgreSQL 14, which
	// has no pg_stat_activity.query_id).
	ComputeQueryID string `json:"compute_query_id,omitempty"`

	// WaitSampling is the pg_wait_sampling extension in the observer's
	// database: "installed" (loaded and created: readable), "not_created"
	// (in shared_preload_libraries, no CREATE EXTENSION here),
	// "not_preloaded" (created, not loaded), "available" (packaged,
	// neither), "missing" (not on the server) or "unreadable: ...".
	WaitSampling        string `json:"pg_wait_sampling"`
	WaitSamplingVersion string `json:"pg_wait_sampling_version,omitempty"`
	// WaitSource is where the wait events come from: "pg_wait_sampling"
	// or "pg_stat_activity"; WaitSourceReason says why.
	WaitSource       string `json:"wait_source"`
	WaitSourceReason string `json:"wait_source_reason"`

	// schema of pg_stat_statements, quoted; its view's columns.
	pgssSchema  string
	pgssColumns map[string]bool

	pgssPreloaded bool
	pws           pwsSettings
}

// pwsSettings are pg_wait_sampling's, read at the start.
type pwsSettings struct {
	preloaded      bool   // in shared_preload_libraries
	schema         string // quoted
	periodMS       int    // pg_wait_sampling.profile_period
	profilePID     bool   // pg_wait_sampling.profile_pid
	profileQueries bool   // pg_wait_sampling.profile_queries
	// sampleCPU: pg_wait_sampling.sample_cpu (from 1.1.5) is on, so a
	// backend waiting on nothing is sampled too. 1.1.4 samples waits
	// only.
	sampleCPU bool
}

// connect opens the observer's connection to dsn. A DSN without a
// database that exists (replay's --target names none: each session picks
// its own) falls back to "postgres".
func connect(ctx context.Context, dsn, database string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	cfg.RuntimeParams["application_name"] = ApplicationName
	// A monitoring connection must never hold locks or run long.
	cfg.RuntimeParams["statement_timeout"] = "5s"
	cfg.RuntimeParams["lock_timeout"] = "1s"
	// The simple protocol: no prepared statements piling up, and the
	// texts in pg_stat_statements are the observer's own.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	if database != "" {
		cfg.Database = database
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	var pgErr *pgconn.PgError
	if database == "" && errors.As(err, &pgErr) && pgErr.Code == "3D000" && cfg.Database != "postgres" {
		cfg.Database = "postgres"
		conn, err = pgx.ConnectConfig(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("observe: connect: %w", err)
	}
	// Keep the observer's statements out of the server's log, which a
	// replay may read back (--target-log) and a DBA reads anyway. Only
	// a superuser may; others' statements are told apart by
	// application_name.
	for _, set := range []string{"SET log_min_duration_statement = -1", "SET log_statement = 'none'", "SET log_duration = off"} {
		if _, err := conn.Exec(ctx, tag+set); err != nil {
			break
		}
	}
	return conn, nil
}

// probe finds what the server allows. When pg_stat_statements is not
// created in the connected database it looks for it in the others and, if
// one has it, returns a connection to that one instead (pg_stat_statements
// covers every database of the cluster from any of them).
func probe(ctx context.Context, conn *pgx.Conn, dsn string) (*pgx.Conn, *Capabilities, error) {
	c := &Capabilities{WaitSource: "pg_stat_activity"}
	var preload string
	err := conn.QueryRow(ctx, tag+`SELECT current_setting('server_version'), current_setting('server_version_num')::int,
		current_database(), current_user,
		(SELECT rolsuper FROM pg_roles WHERE rolname = current_user) OR pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER'),
		current_setting('shared_preload_libraries'), coalesce(current_setting('compute_query_id', true), '')`).
		Scan(&c.ServerVersion, &c.ServerVersionNum, &c.Database, &c.User, &c.ReadAllStats, &preload, &c.ComputeQueryID)
	if err != nil {
		return conn, nil, fmt.Errorf("observe: server settings: %w", err)
	}
	isPreloaded := func(lib string) bool {
		return slices.ContainsFunc(strings.Split(preload, ","), func(s string) bool {
			return strings.Trim(strings.TrimSpace(s), `"`) == lib
		})
	}
	preloaded := isPreloaded("pg_stat_statements")
	c.pws.preloaded = isPreloaded("pg_wait_sampling")
	c.pgssPreloaded = preloaded

	ext, err := extensions(ctx, conn)
	if err != nil {
		return conn, nil, err
	}
	c.WaitSampling = ext["pg_wait_sampling"]
	switch {
	case ext["pg_stat_statements"] == "installed":
	case ext["pg_stat_statements"] == "available" && preloaded:
		// Preloaded but created elsewhere, perhaps: try the other
		// databases, one connection at a time.
		if other := findPGSS(ctx, conn, dsn); other != nil {
			conn.Close(ctx)
			conn = other
			if err := conn.QueryRow(ctx, tag+"SELECT current_database()").Scan(&c.Database); err != nil {
				return conn, nil, fmt.Errorf("observe: %w", err)
			}
			ext, err = extensions(ctx, conn)
			if err != nil {
				return conn, nil, err
			}
			c.WaitSampling = ext["pg_wait_sampling"]
		}
	}
	switch ext["pg_stat_statements"] {
	case "installed":
		c.PGSS = "installed"
		c.PGSSDatabase = c.Database
		if !preloaded {
			c.PGSS = "not_preloaded"
		}
	case "available":
		c.PGSS = "not_created"
		if !preloaded {
			c.PGSS = "unavailable"
		}
	default:
		c.PGSS = "unavailable"
	}
	if c.PGSS != "installed" {
		return conn, c, nil
	}
	return conn, c, probePGSSView(ctx, conn, c)
}

// probePGSSView fills in what reading pg_stat_statements in conn's
// database needs: its schema, version and columns, whether
// pg_stat_statements_info exists, and the settings the evidence reports.
// It sets c.PGSS to "unreadable: ..." when the view cannot be read (a
// library of another version); other errors are returned.
func probePGSSView(ctx context.Context, conn *pgx.Conn, c *Capabilities) error {
	err := conn.QueryRow(ctx, tag+`SELECT quote_ident(n.nspname), e.extversion,
		coalesce(current_setting('pg_stat_statements.track_planning', true), '') = 'on',
		coalesce(current_setting('pg_stat_statements.max', true), '0')::int
		FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_stat_statements'`).
		Scan(&c.pgssSchema, &c.PGSSVersion, &c.TrackPlanning, &c.PGSSMax)
	if err != nil {
		return fmt.Errorf("observe: pg_stat_statements: %w", err)
	}
	rows, err := conn.Query(ctx, tag+`SELECT attname FROM pg_attribute
		WHERE attrelid = (quote_ident($1) || '.pg_stat_statements')::regclass AND attnum > 0 AND NOT attisdropped`,
		strings.Trim(c.pgssSchema, `"`))
	if err != nil {
		return fmt.Errorf("observe: pg_stat_statements columns: %w", err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("observe: pg_stat_statements columns: %w", err)
	}
	c.pgssColumns = map[string]bool{}
	for _, col := range cols {
		c.pgssColumns[col] = true
	}
	err = conn.QueryRow(ctx, tag+`SELECT to_regclass($1) IS NOT NULL`, c.pgssSchema+".pg_stat_statements_info").Scan(&c.PGSSInfo)
	if err != nil {
		return fmt.Errorf("observe: pg_stat_statements_info: %w", err)
	}
	// Installed and preloaded can still fail to read (a library of
	// another version): find out now rather than at every snapshot.
	if _, err := conn.Exec(ctx, tag+"SELECT 1 FROM "+c.pgssSchema+".pg_stat_statements(false) LIMIT 1"); err != nil {
		c.PGSS = "unreadable: " + err.Error()
	}
	return nil
}

// extensions returns "installed", "available" or "" by extension name.
func extensions(ctx context.Context, conn *pgx.Conn) (map[string]string, error) {
	rows, err := conn.Query(ctx, tag+`SELECT name, installed_version IS NOT NULL FROM pg_available_extensions
		WHERE name IN ('pg_stat_statements', 'pg_wait_sampling')`)
	if err != nil {
		return nil, fmt.Errorf("observe: extensions: %w", err)
	}
	out := map[string]string{"pg_wait_sampling": "missing"}
	var name string
	var inst bool
	_, err = pgx.ForEachRow(rows, []any{&name, &inst}, func() error {
		out[name] = "available"
		if inst {
			out[name] = "installed"
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("observe: extensions: %w", err)
	}
	return out, nil
}

// maxProbe bounds how many other databases findPGSS tries.
const maxProbe = 20

// findPGSS returns a connection to another database of the cluster that
// has pg_stat_statements created, or nil.
func findPGSS(ctx context.Context, conn *pgx.Conn, dsn string) *pgx.Conn {
	rows, err := conn.Query(ctx, tag+`SELECT datname FROM pg_database
		WHERE datallowconn AND NOT datistemplate AND datname <> current_database()
		ORDER BY datname <> 'postgres', datname LIMIT $1`, maxProbe)
	if err != nil {
		return nil
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil
	}
	for _, db := range names {
		other, err := connect(ctx, dsn, db)
		if err != nil {
			continue
		}
		var ok bool
		err = other.QueryRow(ctx, tag+`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&ok)
		if err == nil && ok {
			return other
		}
		other.Close(ctx)
	}
	return nil
}
