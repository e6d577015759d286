package connstr

import (
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TCP keepalive of pgrehearse's connections: a peer that stops answering
// (a host gone, a network cut without a reset) is noticed after about
// KeepAliveIdle + KeepAliveCount*KeepAliveInterval of silence on an idle
// connection, where the operating system's default waits two hours.
// Keepalives are answered by the peer's kernel: they do not notice a
// server process that is stopped but whose host runs (SIGSTOP), which
// only a deadline on the answers does (replay's I/O timeout).
const (
	KeepAliveIdle     = 15 * time.Second
	KeepAliveInterval = 5 * time.Second
	KeepAliveCount    = 4
)

// keepAliveDialer dials with the keepalive above; unix sockets have none.
var keepAliveDialer = &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{
	Enable: true, Idle: KeepAliveIdle, Interval: KeepAliveInterval, Count: KeepAliveCount,
}}

// KeepAlive makes cfg's TCP connections (its cancel requests' too) use
// the keepalive above.
func KeepAlive(cfg *pgconn.Config) {
	cfg.DialFunc = keepAliveDialer.DialContext
}
