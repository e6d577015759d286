package catalog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// startTablesQuery reads each table's estimated rows and size. reltuples
// is -1 for a table never analyzed or vacuumed on PostgreSQL 14 and
// later; before 14 it is 0 with relpages 0, which a table with pages on
// disk cannot truly have, so that case is unknown too. Partitioned
// parents hold no rows of their own and are left out: their partitions
// are tables.
const startTablesQuery = `
SELECT n.nspname, c.relname,
       CASE WHEN c.reltuples < 0 OR (c.relpages = 0 AND pg_relation_size(c.oid) > 0) THEN -1
            ELSE c.reltuples::bigint END,
       coalesce(s.n_live_tup, 0), s.relid IS NOT NULL, pg_relation_size(c.oid)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relkind = 'r'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%'
  AND n.nspname NOT LIKE 'pg\_temp%'
ORDER BY n.nspname, c.relname`

// StartStateApplication is the application_name of the connections that
// ReadStartState and CheckStartState open: pgrehearse's own, which an
// analysis of the server's log leaves out of the workload.
const StartStateApplication = event.OwnApplicationPrefix + "start-state"

// ReadStartState reads the state of the server dsn reaches, as a capture
// records it at its start: per table, the estimated rows and size, for
// every database the role can connect to (not the templates); then, last,
// so that it is as close as can be to the recording's start, the server's
// clock and WAL position, its version and system identifier. The role
// needs pg_monitor (pg_current_wal_lsn, pg_control_system and the
// statistics of every table); a database it cannot read is recorded with
// the error, and the rest goes on. Every query is read-only, under
// opts.StatementTimeout.
func ReadStartState(ctx context.Context, dsn string, opts Options) (*capture.StartState, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = StartStateApplication
	timeout := opts.StatementTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connstr.SafeError(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var names []string
	err = readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT datname FROM pg_database
			WHERE datallowconn AND NOT datistemplate AND has_database_privilege(datname, 'CONNECT')
			ORDER BY datname`)
		if err != nil {
			return err
		}
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("databases: %w", err)
	}
	st := &capture.StartState{}
	for _, name := range names {
		db := capture.StartDatabase{Name: name}
		c := conn
		if name != conn.Config().Database {
			dc := cfg.Copy()
			dc.Database = name
			if c, err = pgx.ConnectConfig(ctx, dc); err != nil {
				db.Error = connstr.SafeError(err).Error()
				st.Databases = append(st.Databases, db)
				continue
			}
		}
		db.Tables, err = readStartTables(ctx, c, timeout)
		if c != conn {
			c.Close(context.WithoutCancel(ctx))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			db.Error = err.Error()
		}
		st.Databases = append(st.Databases, db)
	}
	err = readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp(), pg_is_in_recovery(),
			CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END::text,
			current_setting('server_version'), current_setting('server_version_num')::int`).
			Scan(&st.Time, &st.Standby, &st.LSN, &st.ServerVersion, &st.ServerVersionNum); err != nil {
			return err
		}
		st.Time = st.Time.UTC()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("WAL position: %w", err)
	}
	// A role without the right to pg_control_system still records the
	// rest: the identifier only tells a physical copy from another.
	_ = readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, "SELECT system_identifier FROM pg_control_system()").Scan(&id); err != nil {
			return err
		}
		st.SystemIdentifier = strconv.FormatUint(uint64(id), 10)
		return nil
	})
	return st, nil
}

func readStartTables(ctx context.Context, conn *pgx.Conn, timeout time.Duration) ([]capture.StartTable, error) {
	var out []capture.StartTable
	err := readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, startTablesQuery)
		if err != nil {
			return err
		}
		for rows.Next() {
			var t capture.StartTable
			var live int64
			var hasStats bool
			if err := rows.Scan(&t.Schema, &t.Name, &t.Rows, &live, &hasStats, &t.Bytes); err != nil {
				return err
			}
			switch {
			case t.Rows >= 0:
				t.RowsFrom = capture.RowsReltuples
			case hasStats && (live > 0 || t.Bytes == 0):
				t.Rows, t.RowsFrom = live, capture.RowsLiveTuples
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	return out, nil
}

// StartTolerance is how far a target's estimated rows may be from the
// start's before the table is said to differ: by more than Share of the
// start's rows and by more than Rows. Estimates move with every ANALYZE
// (a sample of 30,000 rows by default), so a copy of the very same data
// may read a few percent apart; a table of a few hundred rows differs by
// little whatever its share.
type StartTolerance struct {
	Share float64
	Rows  int64
}

// DefaultStartTolerance: 10%, and at least 1,000 rows.
var DefaultStartTolerance = StartTolerance{Share: 0.10, Rows: 1000}

// CountBelow is the size (pg_relation_size) under which a target's table
// that was never analyzed is counted (count(*)) rather than left
// unchecked: a scan of a few megabytes before a replay is cheap.
const CountBelow = 8 << 20

// StartCheck is what a target holds against the state a capture started
// from.
type StartCheck struct {
	Tolerance StartTolerance
	Databases []StartDatabaseCheck
}

// StartDatabaseCheck is one database's tables compared.
type StartDatabaseCheck struct {
	// Name is the database at the start; Target is its name on the
	// target (after a database map).
	Name, Target string
	// Compared counts the tables whose rows were compared, those within
	// the tolerance included.
	Compared int
	// Differ are the tables beyond the tolerance and those missing on
	// the target; Unchecked those whose rows are unknown on one side.
	Differ    []TableDiff
	Unchecked []TableDiff
	// Error says why the target's database could not be read (it does
	// not exist there, it refused the connection); nothing was compared.
	Error string
}

// TableDiff is a table's estimated rows at the start and on the target.
type TableDiff struct {
	Schema, Name string
	// Start and Target are the estimated rows, -1 when unknown; Target
	// is -1 too for a table missing on the target (Missing).
	Start, Target int64
	TargetFrom    capture.RowSource
	Missing       bool
}

// Differs reports whether the target is not the starting state, as far
// as the check could tell: a table beyond the tolerance or missing, or a
// database that could not be read.
func (c *StartCheck) Differs() bool {
	if c == nil {
		return false
	}
	for _, d := range c.Databases {
		if len(d.Differ) > 0 || d.Error != "" {
			return true
		}
	}
	return false
}

// Beyond reports whether target is further from start than t allows.
func (t StartTolerance) Beyond(start, target int64) bool {
	d := math.Abs(float64(target - start))
	return d > t.Share*float64(start) && d > float64(t.Rows)
}

// CheckStartState compares the tables of the databases given (each name
// at the start to its name on the target) with the target that dsn
// reaches, connecting to each as dsn's user. It reads the target's
// estimates (pg_class.reltuples; it never runs ANALYZE) and counts a
// table never analyzed there only when it is smaller than CountBelow.
// Its statements are kept out of pg_stat_statements where the role may
// (see Untracked). Only a bad dsn or ctx ending is an error; a database
// that cannot be read is recorded in the check.
func CheckStartState(ctx context.Context, dsn string, start *capture.StartState, databases map[string]string, tol StartTolerance, opts Options) (*StartCheck, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = StartStateApplication
	timeout := opts.StatementTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	check := &StartCheck{Tolerance: tol}
	for _, db := range start.Databases {
		target, ok := databases[db.Name]
		if !ok || db.Error != "" {
			continue
		}
		dc := StartDatabaseCheck{Name: db.Name, Target: target}
		c := cfg.Copy()
		if target != "" {
			c.Database = target
		}
		conn, err := pgx.ConnectConfig(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			dc.Error = connectMessage(err)
			check.Databases = append(check.Databases, dc)
			continue
		}
		_ = Untracked(ctx, conn)
		err = compareTables(ctx, conn, timeout, db.Tables, tol, &dc)
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			dc.Error = err.Error()
		}
		check.Databases = append(check.Databases, dc)
	}
	return check, nil
}

// connectMessage is the server's words for a refused connection, or the
// error without the connection string.
func connectMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return connstr.SafeError(err).Error()
}

func compareTables(ctx context.Context, conn *pgx.Conn, timeout time.Duration, start []capture.StartTable, tol StartTolerance, dc *StartDatabaseCheck) error {
	type key struct{ schema, name string }
	now := map[key]capture.StartTable{}
	tables, err := readStartTables(ctx, conn, timeout)
	if err != nil {
		return err
	}
	for _, t := range tables {
		now[key{t.Schema, t.Name}] = t
	}
	for _, s := range start {
		d := TableDiff{Schema: s.Schema, Name: s.Name, Start: s.Rows, Target: -1}
		t, ok := now[key{s.Schema, s.Name}]
		if !ok {
			d.Missing = true
			dc.Differ = append(dc.Differ, d)
			continue
		}
		// The cumulative statistics are not carried by a copy: on the
		// target only reltuples, or a count of a small table.
		if t.RowsFrom == capture.RowsReltuples {
			d.Target, d.TargetFrom = t.Rows, t.RowsFrom
		} else if t.Bytes < CountBelow {
			err := readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, "SELECT count(*) FROM "+QuoteIdent(s.Schema)+"."+QuoteIdent(s.Name)).Scan(&d.Target)
			})
			if err != nil {
				d.Target = -1
			} else {
				d.TargetFrom = capture.RowsCounted
			}
		}
		switch {
		case d.Start < 0 || d.Target < 0:
			dc.Unchecked = append(dc.Unchecked, d)
		case tol.Beyond(d.Start, d.Target):
			dc.Compared++
			dc.Differ = append(dc.Differ, d)
		default:
			dc.Compared++
		}
	}
	return nil
}
