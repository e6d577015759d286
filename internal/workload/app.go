package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// SQLSTATEs the application provokes on purpose.
const (
	codeSyntax          = "42601"
	codeUniqueViolation = "23505"
	codeDivisionByZero  = "22012"
	codeAborted         = "25P02" // in_failed_sql_transaction
	codeNoDatabase      = "3D000" // invalid_catalog_name
)

// LongValue is the ~10 kB parameter the application binds, so that tests
// can check it comes out of the log whole.
var LongValue = strings.Repeat("0123456789abcdef", 640)

// OddValues are the values the application inserts as accounts.note with a
// named prepared statement, account ids 1 to len(OddValues) in order. A nil
// entry is SQL NULL.
var OddValues = []*string{
	ptr("it's"),
	ptr(`she said ''hi'' and "bye"`),
	ptr("line one\nline two\n\tindented\r\nwindows line"),
	nil,
	ptr("NULL"),
	ptr(LongValue),
	ptr("naïve café — ✓ 日本語 🐘"),
	ptr(""),
	ptr(`back\slash, $1, a; semicolon and -- not a comment`),
}

func ptr(s string) *string { return &s }

// schema is one query string of two statements over several lines, with
// tabs and comments, as an application's migration would send it.
const schema = `-- accounts of the application
CREATE TABLE accounts (
	id	integer PRIMARY KEY,
	name	text NOT NULL,
	note	text,		/* the odd values */
	balance	numeric(12,2) NOT NULL DEFAULT 0
);
CREATE TABLE notes (
	id		serial PRIMARY KEY,
	account_id	integer REFERENCES accounts (id),
	body		text
)`

const insertAccount = `INSERT INTO accounts (id, name, note)
	VALUES ($1, $2, $3)`

// app sends the application's statements and counts them.
type app struct {
	ctx context.Context
	c   *pgcluster.Cluster
	sum AppSummary
}

func runApp(ctx context.Context, c *pgcluster.Cluster) (AppSummary, error) {
	a := &app{ctx: ctx, c: c}
	steps := []func() error{a.main, a.failures, a.otherSessions, a.churn}
	for _, step := range steps {
		if err := step(); err != nil {
			return a.sum, err
		}
	}
	return a.sum, nil
}

// main creates the schema and fills it with the odd values as the
// application role, with each protocol and in transactions.
func (a *app) main() error {
	conn, err := a.connect(AppDatabase, AppRole)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	if err := a.query(conn, schema); err != nil {
		return err
	}
	if err := a.prepare(conn, "insert_account", insertAccount); err != nil {
		return err
	}
	for i, note := range OddValues {
		id := strconv.Itoa(i + 1)
		if err := a.execPrepared(conn, "insert_account", text(id), text("account "+id), nullable(note)); err != nil {
			return err
		}
	}
	// A name that needs every kind of quoting, on the unnamed statement.
	if err := a.execParams(conn, insertAccount, text("100"), text("Zoë \"Z\" O'Brien\t日本"), nil); err != nil {
		return err
	}

	const find = `SELECT id, name
FROM accounts
WHERE note = $1
	OR (note IS NULL AND $2::boolean)`
	for _, args := range [][][]byte{{text("it's"), text("true")}, {text("NULL"), text("false")}, {nil, nil}} {
		if err := a.execParams(conn, find, args...); err != nil {
			return err
		}
	}

	// A transaction that commits, with the extended protocol inside.
	if err := a.queries(conn, "BEGIN"); err != nil {
		return err
	}
	const move = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	if err := a.execParams(conn, move, text("10.50"), text("1")); err != nil {
		return err
	}
	if err := a.execParams(conn, move, text("-10.50"), text("2")); err != nil {
		return err
	}
	if err := a.queries(conn, "COMMIT"); err != nil {
		return err
	}

	// A transaction that rolls back.
	if err := a.queries(conn, "BEGIN", "DELETE FROM accounts WHERE id = 3", "ROLLBACK"); err != nil {
		return err
	}

	// Several statements in one query string, a dollar-quoted body with
	// semicolons, comments, and SQL-level PREPARE/EXECUTE.
	return a.queries(conn,
		"SELECT 1; SELECT 2",
		"DO $$\nBEGIN\n\tPERFORM 1; PERFORM 2;\nEND\n$$",
		"/* a block comment\n   over two lines */\nSELECT count(*) -- a trailing comment\nFROM accounts",
		"PREPARE by_id (integer) AS SELECT name FROM accounts WHERE id = $1",
		"EXECUTE by_id(7)",
		"DEALLOCATE by_id",
	)
}

// failures sends statements that fail, each with a known SQLSTATE.
func (a *app) failures() error {
	conn, err := a.connect(AppDatabase, AppRole)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	if err := a.queryFails(conn, "SELEC 1", codeSyntax); err != nil {
		return err
	}
	if err := a.queryFails(conn, "SELECT 1/0", codeDivisionByZero); err != nil {
		return err
	}
	// The first statement of the string runs, the second fails, the
	// third is never run.
	if err := a.queryFails(conn, "SELECT 1; SELECT 1/0; SELECT 3", codeDivisionByZero); err != nil {
		return err
	}
	// Fails in Parse, before any execution.
	if err := a.execParamsFails(conn, "SELEC $1", codeSyntax, text("x")); err != nil {
		return err
	}
	// Fails in Execute.
	if err := a.execParamsFails(conn, "SELECT $1::integer / $2::integer", codeDivisionByZero, text("1"), text("0")); err != nil {
		return err
	}
	if err := a.prepare(conn, "insert_account", insertAccount); err != nil {
		return err
	}
	if err := a.execPreparedFails(conn, "insert_account", codeUniqueViolation, text("1"), text("duplicate"), nil); err != nil {
		return err
	}

	// An error inside a transaction: what follows until ROLLBACK is
	// refused, with either protocol.
	if err := a.queries(conn, "BEGIN", "INSERT INTO notes (account_id, body) VALUES (1, 'lost')"); err != nil {
		return err
	}
	if err := a.queryFails(conn, "SELECT 1/0", codeDivisionByZero); err != nil {
		return err
	}
	if err := a.queryFails(conn, "SELECT 1", codeAborted); err != nil {
		return err
	}
	if err := a.execParamsFails(conn, "SELECT $1::text", codeAborted, text("x")); err != nil {
		return err
	}
	return a.queries(conn, "ROLLBACK")
}

// otherSessions uses the superuser in both databases, and tries a database
// that does not exist.
func (a *app) otherSessions() error {
	conn, err := a.connect(PgbenchDatabase, a.c.User())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := a.execParams(conn, "SELECT abalance FROM pgbench_accounts WHERE aid = $1", text("42")); err != nil {
		return err
	}
	// A statement slower than the others, for the analysis to single out.
	if err := a.queries(conn, "SELECT pg_sleep(0.05)"); err != nil {
		return err
	}

	conn2, err := a.connect(AppDatabase, a.c.User())
	if err != nil {
		return err
	}
	defer conn2.Close(context.Background())
	if err := a.queries(conn2, "SELECT count(*) FROM notes"); err != nil {
		return err
	}

	_, err = a.connect("no_such_database", AppRole)
	return a.expect("connect to no_such_database", err, codeNoDatabase, &a.sum.FailedConnections)
}

// churn opens and closes short sessions, as a client without a pool does.
func (a *app) churn() error {
	for i := 1; i <= 5; i++ {
		conn, err := a.connect(AppDatabase, AppRole)
		if err != nil {
			return err
		}
		// Not the query of PREPARE by_id: pg_stat_statements would
		// merge the two under whichever text it saw first.
		err = a.execParams(conn, "SELECT name, balance FROM accounts WHERE id = $1", text(strconv.Itoa(i)))
		conn.Close(context.Background())
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *app) connect(db, role string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(a.c.DSN(db))
	if err != nil {
		return nil, err
	}
	cfg.User = role
	cfg.RuntimeParams["application_name"] = AppName
	conn, err := pgconn.ConnectConfig(a.ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.sum.Sessions++
	if !slices.Contains(a.sum.Roles, role) {
		a.sum.Roles = append(a.sum.Roles, role)
	}
	if !slices.Contains(a.sum.Databases, db) {
		a.sum.Databases = append(a.sum.Databases, db)
	}
	return conn, nil
}

// query sends one query string with the simple protocol.
func (a *app) query(conn *pgconn.PgConn, sql string) error {
	a.sum.Queries++
	if _, err := conn.Exec(a.ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("%q: %w", sql, err)
	}
	return nil
}

func (a *app) queries(conn *pgconn.PgConn, sqls ...string) error {
	for _, sql := range sqls {
		if err := a.query(conn, sql); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) queryFails(conn *pgconn.PgConn, sql, code string) error {
	a.sum.Queries++
	_, err := conn.Exec(a.ctx, sql).ReadAll()
	return a.expect(sql, err, code, nil)
}

// execParams runs sql as the unnamed statement with text parameters; a nil
// parameter is NULL.
func (a *app) execParams(conn *pgconn.PgConn, sql string, args ...[]byte) error {
	a.sum.Executions++
	if _, err := conn.ExecParams(a.ctx, sql, args, nil, nil, nil).Close(); err != nil {
		return fmt.Errorf("%q: %w", sql, err)
	}
	return nil
}

func (a *app) execParamsFails(conn *pgconn.PgConn, sql, code string, args ...[]byte) error {
	a.sum.Executions++
	_, err := conn.ExecParams(a.ctx, sql, args, nil, nil, nil).Close()
	return a.expect(sql, err, code, nil)
}

func (a *app) prepare(conn *pgconn.PgConn, name, sql string) error {
	a.sum.Prepares++
	if _, err := conn.Prepare(a.ctx, name, sql, nil); err != nil {
		return fmt.Errorf("prepare %s: %w", name, err)
	}
	return nil
}

func (a *app) execPrepared(conn *pgconn.PgConn, name string, args ...[]byte) error {
	a.sum.Executions++
	if _, err := conn.ExecPrepared(a.ctx, name, args, nil, nil).Close(); err != nil {
		return fmt.Errorf("execute %s: %w", name, err)
	}
	return nil
}

func (a *app) execPreparedFails(conn *pgconn.PgConn, name, code string, args ...[]byte) error {
	a.sum.Executions++
	_, err := conn.ExecPrepared(a.ctx, name, args, nil, nil).Close()
	return a.expect("execute "+name, err, code, nil)
}

// expect checks that err is a server error with SQLSTATE code and counts
// it; extra, if not nil, is one more counter to increment.
func (a *app) expect(what string, err error, code string, extra *int) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		return fmt.Errorf("%q: got error %v, want SQLSTATE %s", what, err, code)
	}
	a.sum.Failed++
	a.sum.SQLStates = append(a.sum.SQLStates, code)
	if extra != nil {
		*extra++
	}
	return nil
}

// text is a text-format parameter; unlike []byte(s) it is never nil, so
// the empty string is not sent as NULL.
func text(s string) []byte {
	b := make([]byte, len(s))
	copy(b, s)
	return b
}

func nullable(s *string) []byte {
	if s == nil {
		return nil
	}
	return text(*s)
}
