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
// records it at its start: per table, its rows and size, for every
// database the role can connect to (not the templates): counted
// (count(*), each under opts.StatementTimeout, all within count.Budget)
// for each table of at most count.Below bytes (pg_relation_size),
// estimated for the larger ones and for those whose count failed or
// found the budget spent (StartTable.CountError); count.Below 0 counts
// none. Then, last, so that it is as close as can be to the recording's
// start, the server's clock and WAL position, its version and system
// identifier. The role needs pg_monitor (pg_current_wal_lsn,
// pg_control_system and the statistics of every table), and to count,
// SELECT on the tables (pg_read_all_data); a database it cannot read is
// recorded with the error, and the rest goes on. Every query is
// read-only, under opts.StatementTimeout.
func ReadStartState(ctx context.Context, dsn string, opts Options, count StartCount) (*capture.StartState, error) {
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
	st := &capture.StartState{CountBelow: max(count.Below, 0)}
	cnt := newCounter(timeout, count.Budget)
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
		if err == nil {
			err = countStartTables(ctx, c, cnt, db.Tables, st.CountBelow)
		}
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
	var written map[[2]string]int64
	if st.CountBelow > 0 {
		// The rows themselves, in the monitoring connection's database,
		// in one snapshot read just before the start's position. A
		// failure leaves no digest: the replay then infers. The writes
		// are read before the snapshot, and again after the position
		// (digestWrites).
		if written = tableWrites(ctx, conn, timeout, true); written != nil {
			if d, err := DigestTables(ctx, conn, st.CountBelow, nil); err == nil {
				st.Digests = d
			} else if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
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
	if st.Digests != nil {
		if err := digestWrites(ctx, conn, timeout, st.Digests, written); err != nil {
			return nil, err
		}
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

// DigestWritesSettle is how long after reading the start's position the
// capture waits before it reads the tables' writes again
// (capture.TableDigest.Written): a server process reports its
// statistics at most once a second (PostgreSQL 15 and later; every
// half second before), so that the writes committed just before the
// position have reached them.
const DigestWritesSettle = 1100 * time.Millisecond

// digestWrites sets each digest's Written: the table's rows inserted,
// updated and deleted from before (read before the digests' snapshot)
// to now, DigestWritesSettle after the start's position was read. A
// table written in between may differ on a copy at the position from
// its digest without the copy being wrong. A digested table the
// statistics do not list then (dropped, or the statistics unread) gets
// -1: a difference that cannot be told from a write is not a proof.
func digestWrites(ctx context.Context, conn *pgx.Conn, timeout time.Duration, d *capture.TableDigests, before map[[2]string]int64) error {
	select {
	case <-time.After(DigestWritesSettle):
	case <-ctx.Done():
		return ctx.Err()
	}
	after := tableWrites(ctx, conn, timeout, true)
	for i := range d.Tables {
		t := &d.Tables[i]
		k := [2]string{t.Schema, t.Name}
		a, ok := after[k]
		if !ok && t.NotDigested == "" {
			// A table dropped since, or statistics unread: unproven.
			t.Written = -1
			continue
		}
		if a > before[k] {
			t.Written = a - before[k]
		}
	}
	return nil
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

// StartCount bounds the counts of a start state: the tables of at most
// Below bytes (pg_relation_size) are counted, all the counts within
// Budget (0: unbounded); the tables left when it is spent are estimated,
// and say so.
type StartCount struct {
	Below  int64
	Budget time.Duration
}

// counter counts tables' rows, each count under a statement timeout and
// all within a budget.
type counter struct {
	timeout, budget time.Duration
	deadline        time.Time // zero: no budget
}

func newCounter(timeout, budget time.Duration) *counter {
	c := &counter{timeout: timeout, budget: budget}
	if budget > 0 {
		c.deadline = time.Now().Add(budget)
	}
	return c
}

// budgetSpent is a count not made because the counts took their budget.
type budgetSpent struct{ budget time.Duration }

func (e *budgetSpent) Error() string {
	return fmt.Sprintf("not counted: the counts took their budget of %v", e.budget)
}

// count is count(*) of a table in a read-only transaction, under the
// statement timeout or what is left of the budget if less.
func (c *counter) count(ctx context.Context, conn *pgx.Conn, schema, name string) (int64, error) {
	timeout := c.timeout
	if !c.deadline.IsZero() {
		left := time.Until(c.deadline)
		// statement_timeout is in milliseconds, and 0 is none.
		if left < time.Millisecond {
			return 0, &budgetSpent{c.budget}
		}
		timeout = min(timeout, left)
	}
	return countRows(ctx, conn, timeout, schema, name)
}

// countMessage says why a count failed: the server's words, or the
// budget spent.
func countMessage(err error) string {
	var b *budgetSpent
	if errors.As(err, &b) {
		return b.Error()
	}
	return connectMessage(err)
}

// countStartTables counts the rows of each table of at most below bytes,
// each count in its own read-only transaction (cnt). A count that fails
// (a timeout, a table the role may not read, the budget spent) leaves the
// estimate and says why; only ctx ending is an error.
func countStartTables(ctx context.Context, conn *pgx.Conn, cnt *counter, tables []capture.StartTable, below int64) error {
	if below <= 0 {
		return nil
	}
	before := tableWrites(ctx, conn, cnt.timeout, false)
	for i := range tables {
		t := &tables[i]
		if below <= 0 || t.Bytes > below {
			continue
		}
		n, err := cnt.count(ctx, conn, t.Schema, t.Name)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t.CountError = countMessage(err)
			continue
		}
		t.Rows, t.RowsFrom = n, capture.RowsCounted
	}
	after := tableWrites(ctx, conn, cnt.timeout, false)
	for i := range tables {
		t := &tables[i]
		k := [2]string{t.Schema, t.Name}
		b, okb := before[k]
		a, oka := after[k]
		if t.RowsFrom == capture.RowsCounted && okb && oka && a > b {
			t.CountDrift = a - b
		}
	}
	return nil
}

// tableWrites is each table's rows inserted and deleted so far, and
// with updates its rows updated too, as the cumulative statistics tell
// (nil when they cannot be read): read before and after the counts, the
// difference is how far a count may be from the table at the end of the
// counts; read before and after the digests, the tables whose rows
// changed meanwhile.
func tableWrites(ctx context.Context, conn *pgx.Conn, timeout time.Duration, updates bool) map[[2]string]int64 {
	out := map[[2]string]int64{}
	q := "SELECT schemaname, relname, n_tup_ins + n_tup_del FROM pg_stat_user_tables"
	if updates {
		q = "SELECT schemaname, relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables"
	}
	err := readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k [2]string
			var n int64
			if err := rows.Scan(&k[0], &k[1], &n); err != nil {
				return err
			}
			out[k] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil
	}
	return out
}

// countRows is count(*) of a table, in a read-only transaction under
// timeout.
func countRows(ctx context.Context, conn *pgx.Conn, timeout time.Duration, schema, name string) (int64, error) {
	var n int64
	err := readOnly(ctx, conn, timeout, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT count(*) FROM "+QuoteIdent(schema)+"."+QuoteIdent(name)).Scan(&n)
	})
	return n, err
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

// CountedStartTolerance is how far a count on the target may be from the
// start's count: the counts are exact, but read table by table just
// before the WAL position, so a table written meanwhile may be a few
// rows apart from a copy at that position.
var CountedStartTolerance = StartTolerance{Share: 0.01, Rows: 10}

// DefaultCountBelow is the size (pg_relation_size) up to which a capture
// counts a table's rows at its start rather than estimating them.
const DefaultCountBelow = 1 << 30

// CountBelow is the size (pg_relation_size) under which a target's table
// that was never analyzed is counted (count(*)) rather than left
// unchecked: a scan of a few megabytes before a replay is cheap.
const CountBelow = 8 << 20

// StartCheck is what a target holds against the state a capture started
// from.
type StartCheck struct {
	// Tolerance applies where either side's rows are estimated;
	// Counted where both were counted.
	Tolerance, Counted StartTolerance
	// CountBelow is the start's limit of the counts
	// (capture.StartState.CountBelow): the target counts the tables the
	// start counted when they are within it there too.
	CountBelow int64
	Databases  []StartDatabaseCheck
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
	// Uncounted are the tables the start counted that the target did
	// not (TableDiff.CountError says why): their estimates were
	// compared.
	Uncounted []TableDiff
	// Error says why the target's database could not be read (it does
	// not exist there, it refused the connection); nothing was compared.
	Error string
}

// TableDiff is a table's estimated rows at the start and on the target.
type TableDiff struct {
	Schema, Name string
	// Start and Target are the estimated rows, -1 when unknown; Target
	// is -1 too for a table missing on the target (Missing).
	Start, Target         int64
	StartFrom, TargetFrom capture.RowSource
	Missing               bool
	// Drift is the start's CountDrift, added to the counts' tolerance.
	Drift int64
	// CountError says why a table the start counted was not counted on
	// the target (larger than the limit there, the count timed out):
	// its estimate was compared instead.
	CountError string
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
// reaches, connecting to each as dsn's user. A table the start counted
// is counted on the target too, when it is within the start's limit
// there (start.CountBelow), and compared within CountedStartTolerance;
// the others by the target's estimates (pg_class.reltuples; it never
// runs ANALYZE), within tol, a table never analyzed there counted only
// when it is smaller than CountBelow. All its counts are made within
// countBudget (0: unbounded): a table left when it is spent is compared
// by its estimate, and says so. Its statements are kept out of pg_stat_statements where the role may
// (see Untracked). Only a bad dsn or ctx ending is an error; a database
// that cannot be read is recorded in the check.
func CheckStartState(ctx context.Context, dsn string, start *capture.StartState, databases map[string]string, tol StartTolerance, countBudget time.Duration, opts Options) (*StartCheck, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = StartStateApplication
	timeout := opts.StatementTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	check := &StartCheck{Tolerance: tol, Counted: CountedStartTolerance, CountBelow: start.CountBelow}
	cnt := newCounter(timeout, countBudget)
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
		err = compareTables(ctx, conn, timeout, cnt, db.Tables, check, &dc)
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

func compareTables(ctx context.Context, conn *pgx.Conn, timeout time.Duration, cnt *counter, start []capture.StartTable, check *StartCheck, dc *StartDatabaseCheck) error {
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
		d := TableDiff{Schema: s.Schema, Name: s.Name, Start: s.Rows, StartFrom: s.RowsFrom, Target: -1}
		t, ok := now[key{s.Schema, s.Name}]
		if !ok {
			d.Missing = true
			dc.Differ = append(dc.Differ, d)
			continue
		}
		if err := targetRows(ctx, conn, cnt, check.CountBelow, t, &d); err != nil {
			return err
		}
		if d.CountError != "" {
			dc.Uncounted = append(dc.Uncounted, d)
		}
		tol := check.Tolerance
		if d.StartFrom == capture.RowsCounted && d.TargetFrom == capture.RowsCounted {
			// The rows written in the table while the start counted
			// may be in the copy or not.
			tol = check.Counted
			tol.Rows += s.CountDrift
			d.Drift = s.CountDrift
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

// targetRows reads the target's rows of table t into d: counted when the
// start counted it and it is within the start's limit (below) on the
// target too; otherwise the target's reltuples, or a count of a small
// table never analyzed there (the cumulative statistics are not carried
// by a copy). A count that fails leaves the estimate, and says why in
// d.CountError; only ctx ending is an error.
func targetRows(ctx context.Context, conn *pgx.Conn, cnt *counter, below int64, t capture.StartTable, d *TableDiff) error {
	if t.RowsFrom == capture.RowsReltuples {
		d.Target, d.TargetFrom = t.Rows, t.RowsFrom
	}
	count := t.RowsFrom != capture.RowsReltuples && t.Bytes < CountBelow
	if d.StartFrom == capture.RowsCounted {
		if t.Bytes <= below {
			count = true
		} else {
			d.CountError = fmt.Sprintf("larger than the limit of the counts on the target (%d bytes)", t.Bytes)
		}
	}
	if !count {
		return nil
	}
	n, err := cnt.count(ctx, conn, t.Schema, t.Name)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.StartFrom == capture.RowsCounted {
			d.CountError = countMessage(err)
		}
		return nil
	}
	d.Target, d.TargetFrom = n, capture.RowsCounted
	return nil
}
