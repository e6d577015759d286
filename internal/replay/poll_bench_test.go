//go:build linux

package replay

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"golang.org/x/sys/unix"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// pollSession is one captured session of pollRate: its socket, its
// executions and where it is in them.
type pollSession struct {
	fd       int
	evs      []*event.Event
	next     int
	prepared map[string]bool
	in       []byte // answers read and not yet parsed
}

// pollRate replays each session's executions from memory, in the form
// they were logged in, as pgbench runs its clients: every connection's
// socket polled from one thread (epoll, level-triggered), a statement
// written when the one before it answered. No goroutine parks per
// exchange, so it shows what a Go client pays without Go's netpoller and
// scheduler between the exchanges: the least a poller engine could cost.
func pollRate(b *testing.B, c *pgcluster.Cluster, perSession map[string][]*event.Event) float64 {
	ctx := context.Background()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(ep)
	byFD := map[int]*pollSession{}
	var fds []int
	for _, evs := range perSession {
		conn, _, hfd := rawConn(b, ctx, c)
		// Off Go's netpoller, as the engine's sockets (engineConn.detach):
		// else every answer also wakes the runtime thread that waits in
		// the netpoller's epoll, and the loop pays for that too.
		fd, err := unix.FcntlInt(uintptr(hfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		conn.Close()
		fds = append(fds, fd)
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			b.Fatal(err)
		}
		byFD[fd] = &pollSession{fd: fd, evs: evs, prepared: map[string]bool{}, in: make([]byte, 0, 8192)}
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var out []byte
	params := make([][]byte, 0, 8)
	send := func(s *pollSession) {
		out, params = s.message(b, out[:0], params)
		for len(out) > 0 {
			n, err := unix.Write(s.fd, out)
			if err == unix.EAGAIN {
				continue
			}
			if err != nil {
				b.Fatal(err)
			}
			out = out[n:]
		}
	}
	total, open := 0, 0
	start := time.Now()
	for _, s := range byFD {
		if len(s.evs) > 0 {
			send(s)
			open++
		}
	}
	events := make([]unix.EpollEvent, len(byFD))
	for open > 0 {
		n, err := unix.EpollWait(ep, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range events[:n] {
			s := byFD[int(e.Fd)]
			if cap(s.in)-len(s.in) < 4096 {
				s.in = append(s.in, make([]byte, 4096)...)[:len(s.in)]
			}
			m, err := unix.Read(s.fd, s.in[len(s.in):cap(s.in)])
			if err == unix.EAGAIN {
				continue
			}
			if err != nil || m == 0 {
				b.Fatalf("read: %v (%d bytes)", err, m)
			}
			s.in = s.in[:len(s.in)+m]
			if !s.ready(b) {
				continue
			}
			total++
			s.next++
			if s.next == len(s.evs) {
				open--
				continue
			}
			send(s)
		}
	}
	return float64(total) / time.Since(start).Seconds()
}

// rawConn connects to c's postgres database and takes the socket from
// pgconn: the conn (to keep and close) and its file descriptor.
func rawConn(b *testing.B, ctx context.Context, c *pgcluster.Cluster) (net.Conn, syscall.RawConn, int) {
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	hc, err := conn.Hijack()
	if err != nil {
		b.Fatal(err)
	}
	sc, ok := hc.Conn.(syscall.Conn)
	if !ok {
		b.Fatalf("%T has no file descriptor", hc.Conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var fd int
	raw.Control(func(f uintptr) { fd = int(f) })
	return hc.Conn, raw, fd
}

// message appends the messages of s's next execution to out.
func (s *pollSession) message(b *testing.B, out []byte, params [][]byte) ([]byte, [][]byte) {
	ev := s.evs[s.next]
	var err error
	switch {
	case ev.Kind == event.Statement:
		out, err = (&pgproto3.Query{String: ev.Query}).Encode(out)
	default:
		params = params[:0]
		for _, p := range ev.Params {
			params = append(params, []byte(p.Value))
		}
		name := ev.Name
		if name == "" || !s.prepared[name] {
			out, err = (&pgproto3.Parse{Name: name, Query: ev.Query}).Encode(out)
			if name != "" {
				s.prepared[name] = true
			}
		}
		if err == nil {
			out, err = (&pgproto3.Bind{PreparedStatement: name, Parameters: params}).Encode(out)
		}
		if err == nil {
			out, err = (&pgproto3.Execute{}).Encode(out)
		}
		if err == nil {
			out, err = (&pgproto3.Sync{}).Encode(out)
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	return out, params
}

// ready parses what s read; it reports whether a ReadyForQuery came.
func (s *pollSession) ready(b *testing.B) bool {
	got := false
	for len(s.in) >= 5 {
		n := int(binary.BigEndian.Uint32(s.in[1:5])) + 1
		if len(s.in) < n {
			break
		}
		switch s.in[0] {
		case 'Z':
			got = true
		case 'E':
			b.Fatalf("error answer: %q", s.in[5:n])
		}
		s.in = s.in[:copy(s.in, s.in[n:])]
	}
	return got
}

// rawGoroutineRate is pollRate with Go's model instead of one poll
// thread: a goroutine per session on the same raw socket, writing with
// write(2) and waiting for the answer through Go's netpoller
// (RawConn.Read), with none of pgconn's or pgproto3's reading around it.
// Against pollRate it is the cost of a goroutine per connection; against
// the bare pgconn and wire loops, the cost of the layers above the socket.
func rawGoroutineRate(b *testing.B, c *pgcluster.Cluster, perSession map[string][]*event.Event) float64 {
	ctx := context.Background()
	type conn struct {
		nc  net.Conn
		raw syscall.RawConn
		fd  int
		s   *pollSession
	}
	var conns []conn
	for _, evs := range perSession {
		nc, raw, fd := rawConn(b, ctx, c)
		conns = append(conns, conn{nc, raw, fd, &pollSession{fd: fd, evs: evs, prepared: map[string]bool{}, in: make([]byte, 0, 8192)}})
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, cn := range conns {
		wg.Go(func() {
			defer cn.nc.Close()
			s := cn.s
			var out []byte
			params := make([][]byte, 0, 8)
			for ; s.next < len(s.evs); s.next++ {
				out, params = s.message(b, out[:0], params)
				for len(out) > 0 {
					var n int
					var werr error
					cn.raw.Write(func(fd uintptr) bool {
						n, werr = unix.Write(int(fd), out)
						return werr != unix.EAGAIN
					})
					if werr != nil {
						b.Error(werr)
						return
					}
					out = out[n:]
				}
				for !s.ready(b) {
					if cap(s.in)-len(s.in) < 4096 {
						s.in = append(s.in, make([]byte, 4096)...)[:len(s.in)]
					}
					var m int
					var rerr error
					cn.raw.Read(func(fd uintptr) bool {
						m, rerr = unix.Read(int(fd), s.in[len(s.in):cap(s.in)])
						return rerr != unix.EAGAIN
					})
					if rerr != nil || m == 0 {
						b.Errorf("read: %v (%d bytes)", rerr, m)
						return
					}
					s.in = s.in[:len(s.in)+m]
				}
			}
			total.Add(int64(len(s.evs)))
		})
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}
