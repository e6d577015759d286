package catalog

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Untracked keeps the statements of conn, one of pgrehearse's own, out of
// pg_stat_statements (pg_stat_statements.track = none for the session)
// where the role may set it (a superuser): its catalog reads and EXPLAINs
// are not the workload, and a finding that reads pg_stat_statements must
// not take them for it. For another role it does nothing, and sends
// nothing that would fail (a failed SET is an ERROR in the server's log).
// It reports whether the statements are now untracked.
func Untracked(ctx context.Context, conn *pgx.Conn) bool {
	var super bool
	if err := conn.QueryRow(ctx, "SELECT current_setting('is_superuser') = 'on'").Scan(&super); err != nil || !super {
		return false
	}
	_, err := conn.Exec(ctx, "SET pg_stat_statements.track = none", pgx.QueryExecModeSimpleProtocol)
	return err == nil
}
