package replay

import (
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// targetLocal reports whether the target's first host is this machine: a
// unix socket or a loopback address. Then the replayer's own CPU is taken
// from the server it measures.
func targetLocal(dsn string) bool {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return false
	}
	host := cfg.Host
	if strings.HasPrefix(host, "/") || strings.HasPrefix(host, "@") || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
