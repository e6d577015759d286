package reset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// ErrCannotRestart is SetServer's error when the setting needs a restart
// of the server and the reset is no Restarter.
var ErrCannotRestart = errors.New("the setting needs a restart of the server, which this reset cannot make")

// SetServer sets a setting of dsn's server for a round, after its reset:
// alter, the ALTER SYSTEM SET of setting, then a reload of the
// configuration, waited for until new sessions have it; with restart, a
// restart of the server by rs (a Restarter, else ErrCannotRestart)
// instead of the reload. undo puts postgresql.auto.conf back as it was
// (the server's own line for the setting, or none) and reloads (restarts)
// again. When the reload fails after the ALTER SYSTEM, SetServer puts the
// setting back before it returns the error.
func SetServer(ctx context.Context, dsn string, rs Resetter, setting, alter string, restart bool) (undo func(context.Context) error, err error) {
	var restartFn func(context.Context) error
	if restart {
		r, ok := rs.(Restarter)
		if !ok {
			return nil, ErrCannotRestart
		}
		restartFn = r.Restart
	}
	conn, err := settingConn(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The server's own line in postgresql.auto.conf, if any, is what
	// the undo writes back.
	var prev *string
	err = conn.QueryRow(ctx, `SELECT setting FROM pg_file_settings
		WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`, setting).Scan(&prev)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	back := "ALTER SYSTEM RESET " + pgx.Identifier{setting}.Sanitize()
	if prev != nil {
		back = "ALTER SYSTEM SET " + pgx.Identifier{setting}.Sanitize() + " = '" + strings.ReplaceAll(*prev, "'", "''") + "'"
	}
	undo = func(ctx context.Context) error {
		conn, err := settingConn(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		_, err = reload(ctx, conn, dsn, back, restartFn)
		return err
	}
	if altered, err := reload(ctx, conn, dsn, alter, restartFn); err != nil {
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

// settingConn connects to dsn's own database, named as pgrehearse's own
// session: the fix's, as a round applies it.
func settingConn(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "fix"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connstr.SafeError(err)
	}
	return conn, nil
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
		c, err := settingConn(ctx, dsn)
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
