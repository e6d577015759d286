package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// ApplicationName is the observer connection's application_name.
const ApplicationName = event.OwnApplicationPrefix + "observe"

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

	// PGSS is ExtInstalled (readable here), ExtNotPreloaded (created but
	// not in shared_preload_libraries), ExtNotCreated (preloaded, no
	// CREATE EXTENSION in any database the observer could reach),
	// ExtUnavailable (not on the server) or ExtUnreadable.
	PGSS         ExtensionState `json:"pg_stat_statements"`
	PGSSVersion  string         `json:"pg_stat_statements_version,omitempty"`
	PGSSDatabase string         `json:"pg_stat_statements_database,omitempty"`
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
	// database: ExtInstalled (loaded and created: readable),
	// ExtNotCreated (in shared_preload_libraries, no CREATE EXTENSION
	// here), ExtNotPreloaded (created, not loaded), ExtAvailable
	// (packaged, neither), ExtMissing (not on the server) or
	// ExtUnreadable.
	WaitSampling        ExtensionState `json:"pg_wait_sampling"`
	WaitSamplingVersion string         `json:"pg_wait_sampling_version,omitempty"`
	// WaitSource is where the wait events come from; WaitSourceReason
	// says why.
	WaitSource       WaitSource `json:"wait_source"`
	WaitSourceReason string     `json:"wait_source_reason"`

	// schema of pg_stat_statements, quoted; its view's columns.
	pgssSchema  string
	pgssColumns map[string]bool

	pgssPreloaded bool
	pws           pwsSettings
}

// ExtensionStatus is what the observer found of an extension it can use.
type ExtensionStatus string

// Extension statuses. pg_stat_statements is ExtUnavailable when the
// server does not have it and pg_wait_sampling ExtMissing: the two words
// are in the evidence JSON (docs/evidence-json.md) and stay as they were.
const (
	ExtInstalled    ExtensionStatus = "installed"     // loaded and created: readable
	ExtNotPreloaded ExtensionStatus = "not_preloaded" // created, not in shared_preload_libraries
	ExtNotCreated   ExtensionStatus = "not_created"   // preloaded, no CREATE EXTENSION where it was looked for
	ExtAvailable    ExtensionStatus = "available"     // packaged on the server, neither preloaded nor created
	ExtUnavailable  ExtensionStatus = "unavailable"   // pg_stat_statements: not usable on the server
	ExtMissing      ExtensionStatus = "missing"       // pg_wait_sampling: not on the server
	ExtUnreadable   ExtensionStatus = "unreadable"    // installed, but reading it fails: see ExtensionState.Err
)

// ExtensionState is an extension's status and, when it is unreadable, why.
// Its text form, and so its JSON, is the status, or "unreadable: " and the
// error.
type ExtensionState struct {
	Status ExtensionStatus
	Err    string
}

// Is reports whether the state has status st.
func (s ExtensionState) Is(st ExtensionStatus) bool { return s.Status == st }

func (s ExtensionState) String() string {
	if s.Status == ExtUnreadable && s.Err != "" {
		return string(ExtUnreadable) + ": " + s.Err
	}
	return string(s.Status)
}

// MarshalText writes String.
func (s ExtensionState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (s *ExtensionState) UnmarshalText(b []byte) error {
	text := string(b)
	if why, ok := strings.CutPrefix(text, string(ExtUnreadable)+": "); ok {
		*s = ExtensionState{Status: ExtUnreadable, Err: why}
		return nil
	}
	*s = ExtensionState{Status: ExtensionStatus(text)}
	return nil
}

func unreadable(err error) ExtensionState {
	return ExtensionState{Status: ExtUnreadable, Err: err.Error()}
}

// WaitSource is where wait events come from.
type WaitSource string

// Wait sources.
const (
	// WaitsFromPGWaitSampling: the server's own sampling, read as
	// pg_wait_sampling profile deltas.
	WaitsFromPGWaitSampling WaitSource = "pg_wait_sampling"
	// WaitsFromActivity: pg_stat_activity, polled by the observer.
	WaitsFromActivity WaitSource = "pg_stat_activity"
)

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
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	connstr.KeepAlive(&cfg.Config)
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
	// A SET cut by the end of ctx (a Stop during a reconnection) closes
	// the connection: not a connection to hand back.
	if conn.IsClosed() {
		return nil, fmt.Errorf("observe: connect: the connection closed while it was set up: %w", ctx.Err())
	}
	return conn, nil
}

// probe finds what the server allows. When pg_stat_statements is not
// created in the connected database it looks for it in the others and, if
// one has it, returns a connection to that one instead (pg_stat_statements
// covers every database of the cluster from any of them).
func probe(ctx context.Context, conn *pgx.Conn, dsn string) (*pgx.Conn, *Capabilities, error) {
	c := &Capabilities{WaitSource: WaitsFromActivity}
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
	c.WaitSampling = ExtensionState{Status: ext["pg_wait_sampling"]}
	switch {
	case ext["pg_stat_statements"] == ExtInstalled:
	case ext["pg_stat_statements"] == ExtAvailable && preloaded:
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
			c.WaitSampling = ExtensionState{Status: ext["pg_wait_sampling"]}
		}
	}
	switch ext["pg_stat_statements"] {
	case ExtInstalled:
		c.PGSS.Status = ExtInstalled
		c.PGSSDatabase = c.Database
		if !preloaded {
			c.PGSS.Status = ExtNotPreloaded
		}
	case ExtAvailable:
		c.PGSS.Status = ExtNotCreated
		if !preloaded {
			c.PGSS.Status = ExtUnavailable
		}
	default:
		c.PGSS.Status = ExtUnavailable
	}
	if !c.PGSS.Is(ExtInstalled) {
		return conn, c, nil
	}
	return conn, c, probePGSSView(ctx, conn, c)
}

// probePGSSView fills in what reading pg_stat_statements in conn's
// database needs: its schema, version and columns, whether
// pg_stat_statements_info exists, and the settings the evidence reports.
// It sets c.PGSS to ExtUnreadable when the view cannot be read (a library
// of another version); other errors are returned.
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
		c.PGSS = unreadable(err)
	}
	return nil
}

// extensions returns ExtInstalled or ExtAvailable by extension name;
// pg_wait_sampling is ExtMissing when the server does not have it.
func extensions(ctx context.Context, conn *pgx.Conn) (map[string]ExtensionStatus, error) {
	rows, err := conn.Query(ctx, tag+`SELECT name, installed_version IS NOT NULL FROM pg_available_extensions
		WHERE name IN ('pg_stat_statements', 'pg_wait_sampling')`)
	if err != nil {
		return nil, fmt.Errorf("observe: extensions: %w", err)
	}
	out := map[string]ExtensionStatus{"pg_wait_sampling": ExtMissing}
	var name string
	var inst bool
	_, err = pgx.ForEachRow(rows, []any{&name, &inst}, func() error {
		out[name] = ExtAvailable
		if inst {
			out[name] = ExtInstalled
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
