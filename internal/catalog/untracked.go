package catalog

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// ErrNotSuperuser is Untracked's answer for a role that is not a
// superuser: its statements stay tracked.
var ErrNotSuperuser = errors.New("the role is not a superuser")

// Untracked keeps the statements of conn, one of pgrehearse's own, out of
// pg_stat_statements (pg_stat_statements.track = none for the session)
// where the role may set it (a superuser): its catalog reads and EXPLAINs
// are not the workload, and a finding that reads pg_stat_statements must
// not take them for it. For another role it returns ErrNotSuperuser, and
// sends nothing that would fail (a failed SET is an ERROR in the server's
// log). It returns nil when the statements are now untracked, and why
// not otherwise, for a caller that must say so.
func Untracked(ctx context.Context, conn *pgx.Conn) error {
	// The server reports is_superuser when the session starts (a
	// ParameterStatus, PostgreSQL 13 and on): no query of the tool's own
	// to land in pg_stat_statements before the SET. A pooler may not pass
	// it on: then ask.
	var super bool
	switch conn.PgConn().ParameterStatus("is_superuser") {
	case "on":
		super = true
	case "off":
	default:
		if err := conn.QueryRow(ctx, "SELECT current_setting('is_superuser') = 'on'").Scan(&super); err != nil {
			return err
		}
	}
	if !super {
		return ErrNotSuperuser
	}
	_, err := conn.Exec(ctx, "SET pg_stat_statements.track = none", pgx.QueryExecModeSimpleProtocol)
	return err
}
