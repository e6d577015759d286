package rounds

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/reset"
)

// ApplyChange applies f after a round's reset onto dsn's server: its SQL
// in the round's copy of each of its databases (each copy once; "" is
// the DSN's own database); a setting for the server (fixes.SetServer)
// is set once by the reset's package, which owns the target's server
// (reset.SetServer: ALTER SYSTEM and a reload, a restart by rs when
// f.Restart), and undo puts it back as it was. Batched INSERTs change
// the replay, not the server: nothing is run for them.
func ApplyChange(ctx context.Context, dsn string, rs reset.Resetter, at Place, f fixes.Fix) (undo func(context.Context) error, err error) {
	if f.Kind == fixes.SetServer {
		// The reset owns the target's server: it sets, reloads or
		// restarts, and puts back.
		return reset.SetServer(ctx, dsn, rs, f.Setting, f.SQL, f.Restart)
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
