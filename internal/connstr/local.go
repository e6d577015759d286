package connstr

import (
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsLocal reports whether the server of connString is on this machine:
// every host it lists is a unix socket or a loopback address. A string
// with several hosts may connect to any of them (the first that answers,
// or the one target_session_attrs picks), so one remote host makes it not
// local. A string that does not parse is not claimed local.
//
// Callers use the answer to read the server's CPU from /proc or to warn
// that client and server share the CPU: a remote server taken for a local
// one would be measured wrong, so in doubt the answer is no.
func IsLocal(connString string) bool {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return false
	}
	if !IsLocalHost(cfg.Host) {
		return false
	}
	for _, fb := range cfg.Fallbacks {
		if !IsLocalHost(fb.Host) {
			return false
		}
	}
	return true
}

// IsLocalHost reports whether one host of a parsed connection string is
// this machine: a unix socket directory (an absolute path), an abstract
// unix socket ("@name", as libpq writes it), "localhost", or a loopback
// address (all of 127.0.0.0/8, and ::1). Other names are not resolved.
func IsLocalHost(host string) bool {
	if strings.HasPrefix(host, "/") || strings.HasPrefix(host, "@") || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
