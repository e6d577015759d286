package observe

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Check says, before a run, what the server lacks for the observer's
// evidence to be whole, each with what to do: pg_stat_statements
// preloaded and created (its per-query deltas), and the login's
// pg_read_all_stats (other users' query texts, ids and wait events). Each
// only thins the evidence: a run goes on without it. It returns an error
// when the server cannot be asked.
func Check(ctx context.Context, dsn string) ([]string, error) {
	conn, err := connect(ctx, dsn, "")
	if err != nil {
		return nil, err
	}
	var user string
	if err := conn.QueryRow(ctx, tag+"SELECT current_user").Scan(&user); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	conn, c, err := probe(ctx, conn, dsn)
	defer conn.Close(context.Background())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		// shared_preload_libraries is hidden from it: the observer
		// cannot start at all.
		return []string{fmt.Sprintf("the login %q may not read the server's settings (shared_preload_libraries), so the observer cannot start: "+
			"GRANT pg_monitor TO %s (pg_read_all_settings and pg_read_all_stats)", user, pgx.Identifier{user}.Sanitize())}, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	switch c.PGSS.Status {
	case ExtNotPreloaded:
		out = append(out, "pg_stat_statements is created but not preloaded: add it to shared_preload_libraries and restart the server")
	case ExtNotCreated:
		out = append(out, fmt.Sprintf("pg_stat_statements is preloaded but not created: CREATE EXTENSION pg_stat_statements (in %s, or any database)", c.Database))
	case ExtUnavailable:
		out = append(out, "pg_stat_statements is neither preloaded nor created: add it to shared_preload_libraries, restart, then CREATE EXTENSION pg_stat_statements")
	}
	if !c.ReadAllStats {
		out = append(out, fmt.Sprintf("the login %q does not read other users' statistics: GRANT pg_read_all_stats TO %s", c.User, pgx.Identifier{c.User}.Sanitize()))
	}
	return out, nil
}
