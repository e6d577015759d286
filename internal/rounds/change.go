package rounds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/reset"
)

// ApplyChange applies f after a round's reset onto dsn's server: its SQL
// in the round's copy of each of its databases (each copy once; "" is
// the DSN's own database); a setting for the server (fixes.SetServer)
// is set once, by ALTER SYSTEM and a reload (a restart by rs when
// f.Restart), and undo puts it back as it was. Batched INSERTs change
// the replay, not the server: nothing is run for them.
func ApplyChange(ctx context.Context, dsn string, rs reset.Resetter, at Place, f fixes.Fix) (undo func(context.Context) error, err error) {
	if f.Kind == fixes.SetServer {
		var restart func(context.Context) error
		if f.Restart {
			r, ok := rs.(reset.Restarter)
			if !ok {
				return nil, errors.New("the setting needs a restart of the server, which this reset cannot make")
			}
			restart = r.Restart
		}
		return setServer(ctx, dsn, f, restart)
	}
	var done []string
	for _, db := range f.Databases {
		db = copyOf(db, at)
		if slices.Contains(done, db) {
			continue
		}
		done = append(done, db)
		conn, err := fixConn(ctx, dsn, db)
		if err != nil {
			return nil, err
		}
		var name string
		if err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err == nil {
			_, err = conn.Exec(ctx, f.SQLIn(name))
		}
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// fixConn connects to database db of dsn's server ("": the DSN's own),
// named as pgrehearse's own session.
func fixConn(ctx context.Context, dsn, db string) (*pgx.Conn, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	if db != "" {
		cfg.Database = db
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "fix"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connstr.SafeError(err)
	}
	return conn, nil
}

// setServer sets f's setting for the server (ALTER SYSTEM, a reload, or
// restart when not nil) and waits until new sessions have it. undo puts
// postgresql.auto.conf back as it was, the candidate's own value of the
// setting or none, and reloads (restarts) again.
func setServer(ctx context.Context, dsn string, f fixes.Fix, restart func(context.Context) error) (undo func(context.Context) error, err error) {
	conn, err := fixConn(ctx, dsn, "")
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The candidate's own line in postgresql.auto.conf, if any, is what
	// the undo writes back.
	var prev *string
	err = conn.QueryRow(ctx, `SELECT setting FROM pg_file_settings
		WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`, f.Setting).Scan(&prev)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	back := "ALTER SYSTEM RESET " + pgx.Identifier{f.Setting}.Sanitize()
	if prev != nil {
		back = "ALTER SYSTEM SET " + pgx.Identifier{f.Setting}.Sanitize() + " = '" + strings.ReplaceAll(*prev, "'", "''") + "'"
	}
	undo = func(ctx context.Context) error {
		conn, err := fixConn(ctx, dsn, "")
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		_, err = reload(ctx, conn, dsn, back, restart)
		return err
	}
	if altered, err := reload(ctx, conn, dsn, f.SQL, restart); err != nil {
		// The ALTER SYSTEM written, the reload failed: put it back
		// all the same.
		if !altered {
			return nil, err
		}
		if uerr := undo(context.WithoutCancel(ctx)); uerr != nil {
			err = errors.Join(err, fmt.Errorf("putting the server's setting back: %w", uerr))
		}
		return nil, err
	}
	return undo, nil
}

// reload runs an ALTER SYSTEM on conn, reloads the server's
// configuration, and waits until a new session of dsn has loaded it
// (pg_conf_load_time later than before): the postmaster reloads on its
// own time, and a round's session forked before would not have it.
// altered says whether the ALTER SYSTEM was run. With restart, the
// server is restarted instead (conn is then ended).
func reload(ctx context.Context, conn *pgx.Conn, dsn, alter string, restart func(context.Context) error) (altered bool, err error) {
	var before time.Time
	if err := conn.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&before); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, alter); err != nil {
		return false, err
	}
	if restart != nil {
		return true, restart(ctx)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return true, err
	}
	deadline := time.Now().Add(reloadTimeout)
	for {
		c, err := fixConn(ctx, dsn, "")
		if err != nil {
			return true, err
		}
		var at time.Time
		err = c.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&at)
		c.Close(context.WithoutCancel(ctx))
		switch {
		case err != nil:
			return true, err
		case at.After(before):
			return true, nil
		case time.Now().After(deadline):
			return true, fmt.Errorf("the server did not reload its configuration within %v", reloadTimeout)
		}
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// reloadTimeout bounds the wait for a reload, which takes the postmaster
// milliseconds.
const reloadTimeout = 30 * time.Second

// copyOf is the round's copy of database db (as the target names it, or
// as the logs do), else db itself.
func copyOf(db string, at Place) string {
	if c, ok := at.Reset.Databases[db]; ok {
		return c
	}
	if c, ok := at.DatabaseMap[db]; ok {
		return c
	}
	return db
}
