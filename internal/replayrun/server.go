package replayrun

import (
	"context"
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// Server is what a target says of itself before a replay: which server
// it is, however its DSN spells the address, and how many connections
// it has room for.
type Server struct {
	// SystemID is pg_control_system()'s system_identifier ("" when the
	// login may not read it): the same for every copy of one cluster,
	// clones restored from one base backup included.
	SystemID string
	// Port is the port the server listens on (its setting), Started
	// when its postmaster started; DataDir its data directory ("" when
	// the login may not read it).
	Port    int
	Started time.Time
	DataDir string

	// MaxConnections, SuperuserReserved and Reserved (PostgreSQL 16's
	// reserved_connections, 0 before) are the server's settings;
	// InUse counts the client connections open when it was asked, the
	// asking one left out.
	MaxConnections    int
	SuperuserReserved int
	Reserved          int
	InUse             int
}

// FreeSlots is how many more connections of roles that are neither
// superusers nor members of pg_use_reserved_connections the server
// accepts: max_connections less the reserved slots and those in use.
func (s *Server) FreeSlots() int {
	return max(0, s.MaxConnections-s.SuperuserReserved-s.Reserved-s.InUse)
}

// SameServer reports whether a and b are one server reached twice: the
// same port and postmaster start time, and the same system identifier
// and data directory where both could be read. The system identifier
// alone is not enough: a control and a candidate restored from one base
// backup share it, and are two servers.
func SameServer(a, b *Server) bool {
	switch {
	case a == nil || b == nil:
		return false
	case a.Port != b.Port || !a.Started.Equal(b.Started):
		return false
	case a.SystemID != "" && b.SystemID != "" && a.SystemID != b.SystemID:
		return false
	case a.DataDir != "" && b.DataDir != "" && a.DataDir != b.DataDir:
		return false
	}
	return true
}

// AskServer connects to dsn as its own login and asks the server what
// it is and how many connections it has free. What the login may not
// read (the system identifier, the data directory) is left empty.
func AskServer(ctx context.Context, dsn string) (*Server, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "preflight"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connstr.SafeError(err)
	}
	defer conn.Close(context.Background())
	// Its questions are not the workload: kept out of the target's
	// pg_stat_statements where the login may (a superuser), as the
	// pre-flight's other reads are.
	_ = catalog.Untracked(ctx, conn)
	s := &Server{}
	// reserved_connections is PostgreSQL 16's; missing before (NULL).
	err = conn.QueryRow(ctx, `SELECT current_setting('port')::int, pg_postmaster_start_time(),
		current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int,
		coalesce(current_setting('reserved_connections', true), '0')::int,
		(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())::int`).
		Scan(&s.Port, &s.Started, &s.MaxConnections, &s.SuperuserReserved, &s.Reserved, &s.InUse)
	if err != nil {
		return nil, fmt.Errorf("ask the server what it is: %w", err)
	}
	// Readable by superusers and pg_read_all_settings / pg_monitor only:
	// without them the port and start time decide.
	var id, dir *string
	if conn.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&id) == nil && id != nil {
		s.SystemID = *id
	}
	if conn.QueryRow(ctx, `SELECT current_setting('data_directory', true)`).Scan(&dir) == nil && dir != nil {
		s.DataDir = *dir
	}
	return s, nil
}
