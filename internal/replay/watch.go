package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The I/O watch: a statement that gets no answer is either slow on the
// target (a long query, a lock wait), or its connection, or the whole
// target, has gone silent (a stopped server process, a hung host, a
// network cut without a reset, which TCP keepalives do not notice while
// the peer's kernel answers them). Rather than a deadline per statement,
// which a long statement would trip, one goroutine looks every
// ioCheckEvery for statements in flight past their allowance (the I/O
// timeout plus twice their logged duration) and asks the target, on a new
// connection, whether their backends are working:
//   - the target does not answer within ioProbeTimeout: it is silent, and
//     the replay stops early, its result incomplete, naming the silent
//     connection (targetSilent);
//   - the backend is active: the statement is slow, and is given another
//     I/O timeout;
//   - the backend is gone or idle: that connection is silent, and is cut
//     (its statement counted as lost, the session reconnects).
const (
	ioCheckEvery   = 500 * time.Millisecond
	ioProbeTimeout = 4 * time.Second
)

// liveSet holds the sessions with an open connection, for the I/O watch.
type liveSet struct {
	mu sync.Mutex
	m  map[*session]liveConn
}

type liveConn struct {
	pid uint32
	nc  net.Conn
}

func (l *liveSet) add(s *session) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[*session]liveConn{}
	}
	l.m[s] = liveConn{pid: s.conn.PID(), nc: s.conn.Conn()}
	l.mu.Unlock()
}

func (l *liveSet) remove(s *session) {
	l.mu.Lock()
	delete(l.m, s)
	l.mu.Unlock()
}

// lateConn is the connection of a session whose statement is overdue,
// with that statement's allowance (busyUntil): a session whose busyUntil
// differs later has moved on to another statement.
type lateConn struct {
	liveConn
	until int64
}

// overdue returns the sessions whose statement in flight is past its
// allowance at now.
func (l *liveSet) overdue(now int64) map[*session]lateConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out map[*session]lateConn
	for s, c := range l.m {
		if until := s.busyUntil.Load(); until != 0 && now > until {
			if out == nil {
				out = map[*session]lateConn{}
			}
			out[s] = lateConn{c, until}
		}
	}
	return out
}

// watchIO runs the I/O watch until ctx ends, or the target is found
// silent.
func (r *Replayer) watchIO(ctx context.Context) {
	t := time.NewTicker(ioCheckEvery)
	defer t.Stop()
	for !r.silent.Load() {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if late := r.live.overdue(now.UnixNano()); len(late) > 0 {
				r.probe(ctx, late)
			}
		}
	}
}

// probe asks the target about the backends of sessions overdue.
func (r *Replayer) probe(ctx context.Context, late map[*session]lateConn) {
	var first *session
	pids := make([]string, 0, len(late))
	for s, c := range late {
		if first == nil {
			first = s
		}
		pids = append(pids, strconv.FormatUint(uint64(c.pid), 10))
	}
	ctx, cancel := context.WithTimeout(ctx, ioProbeTimeout)
	defer cancel()
	conn, err := r.quietConn(ctx, first.user, first.db)
	var res *pgconn.Result
	if err == nil {
		defer conn.Close(context.Background())
		res = conn.ExecParams(ctx, "SELECT pid, state FROM pg_stat_activity WHERE pid = ANY($1::int[])",
			[][]byte{[]byte("{" + strings.Join(pids, ",") + "}")}, nil, nil, nil).Read()
		err = res.Err
	}
	if err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.targetSilent(first, late[first].liveConn, err)
		}
		return
	}
	// A backend of another user shows no state to a user without
	// pg_read_all_stats: it may be working, and is left alone.
	working := map[string]bool{}
	for _, row := range res.Rows {
		if len(row) == 2 && (row[1] == nil || string(row[1]) == "active") {
			working[string(row[0])] = true
		}
	}
	next := time.Now().Add(r.opts.IOTimeout).UnixNano()
	for s, c := range late {
		if s.busyUntil.Load() != c.until {
			// Answered meanwhile; maybe the session sent its next
			// statement, which the probe's read of the backend's
			// state may not have seen: not to be cut.
			continue
		}
		if working[strconv.FormatUint(uint64(c.pid), 10)] {
			// Slow, not silent: the server is working on it.
			s.busyUntil.CompareAndSwap(c.until, next)
			continue
		}
		// The server is not working on it: the connection is silent.
		r.c.silentConns.Add(1)
		c.nc.SetDeadline(time.Unix(1, 0))
	}
}

// targetSilent stops the replay early: a statement got no answer within
// the I/O timeout, and the target did not answer a new connection either.
func (r *Replayer) targetSilent(s *session, c liveConn, err error) {
	r.goneOnce.Do(func() {
		msg := fmt.Sprintf("the target stopped answering: the connection of session %s (backend pid %d, user %q, database %q) "+
			"had no answer for %v (the I/O timeout) and a new connection got none within %v (%v); "+
			"the target is taken for frozen (a stopped server, a hung host, a network cut), so the replay stopped early",
			s.id, c.pid, s.user, s.db, r.opts.IOTimeout, ioProbeTimeout, err)
		r.gone.Store(&msg)
		r.silent.Store(true)
		r.abort()
		r.cancelHard()
	})
}
