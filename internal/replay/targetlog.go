package replay

import (
	"sync"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/replay/connlog"
)

// connRecord is one connection the replay opened, written by the session
// that owns it (sent and order), read once the replay is over.
type connRecord struct {
	pid      uint32
	from, to int64 // unix seconds around the connection's start
	sent     int64 // executions sent on it
	order    uint64
}

// connLog collects the connections of a replay.
type connLog struct {
	mu    sync.Mutex
	conns []*connRecord
}

func (c *connLog) add(rec *connRecord) {
	c.mu.Lock()
	c.conns = append(c.conns, rec)
	c.mu.Unlock()
}

// chain adds a fingerprint to an order hash (connlog.Chain).
func chain(h uint64, fp string) uint64 { return connlog.Chain(h, fp) }

// newConnRecord notes a connection opened between begin and end.
func newConnRecord(pid uint32, begin, end time.Time) *connRecord {
	return &connRecord{pid: pid, from: begin.Unix(), to: end.Unix()}
}

// Connections lists the connections the replay opened and what it sent on
// each, for package replay/targetlog to find them in the target's log.
// Call it once Run has returned.
func (r *Replayer) Connections() []connlog.Conn {
	r.conns.mu.Lock()
	defer r.conns.mu.Unlock()
	out := make([]connlog.Conn, len(r.conns.conns))
	for i, c := range r.conns.conns {
		out[i] = connlog.Conn{PID: c.pid, From: c.from, To: c.to, Sent: c.sent, Order: c.order}
	}
	return out
}
