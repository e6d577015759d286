//go:build linux

package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/pgrehearse/pgrehearse/internal/rawio"
	"golang.org/x/sys/unix"
)

// The event loop relays the sessions whose two legs are plain TCP or Unix
// sockets (no TLS) from one goroutine, as PgBouncer relays every
// connection from its one thread: one epoll instance of the loop's own,
// level-triggered, says which sockets have bytes; the loop reads each
// once and forwards what it read with one write, all in one pass.
//
// Why: with two goroutines per session, each relayed burst cost the
// goroutine's wake-up by Go's scheduler and a second read that fails with
// EAGAIN (Go's poller is edge-triggered: a read that stopped short is not
// proof of the end of the socket's bytes). Level-triggered, one read is
// enough: what it left is reported again.
//
// The loop does not block in epoll_wait itself: a goroutine blocked in a
// system call hands its thread's scheduler slot (P) to another thread,
// which wakes threads and the runtime's monitor (rawio_linux.go). It asks
// its epoll instance without waiting (timeout 0), and when nothing is
// ready it parks on that instance's descriptor in Go's own poller, where
// an epoll descriptor is readable while events are pending: one thread
// sleeps in one epoll_wait for the sockets of the loop and every other
// connection of the process (TLS legs, the listener, the admin
// interface), and the recorder's goroutines run on it when the loop
// yields.
//
// The loop takes its sockets off Go's poller (enter), which would wake
// for each of their events too, and hands the session's goroutine new
// connections of the same sockets when it gives the session back.
//
// The loop only relays. Anything that needs waiting hands the session
// back to its goroutine, which goes on as the goroutine path does (two
// pumps, blocking writes): a write the peer's socket cannot take
// (EAGAIN; the rest is kept in the pump's pending and written first),
// a source that ended or failed, a length out of range, a refusal, and a
// close from elsewhere (link.close: a drain's end, Serve stopping).
// The session is not taken back into the loop afterwards.

// loopEvents is how many events one epoll_wait takes.
const loopEvents = 128

// evLoop is one event loop; see above.
type evLoop struct {
	ep, efd int
	file    *os.File // ep in Go's poller: the loop parks on it
	wait    syscall.RawConn
	events  []unix.EpollEvent

	mu       sync.Mutex
	incoming []*loopSess
	evict    []*loopSess
	signaled bool // efd written since the loop last read it
	closing  bool
	exited   bool // efd is closed

	// The loop goroutine's only.
	slots   []*loopSess
	free    []int32
	freed   []int32 // slots handed back in this pass, free after it
	stopped bool
	done    chan struct{}
}

// loopSess is one session in a loop.
type loopSess struct {
	l    *evLoop
	slot int32
	legs [2]loopLeg // client, server
	back chan struct{}
	gone bool // handed back; the loop goroutine's
}

// loopLeg is one connection of a session in a loop, and the pump that
// reads it.
type loopLeg struct {
	fd  int // the loop's own descriptor of the socket
	in  *pump
	out *loopWriter // what in writes to: the other leg's socket
	// conn is the connection handed back (handBack), nil when its
	// descriptor could not be made one again.
	conn net.Conn
}

// loopWriter writes a pump's output without waiting: what the socket
// cannot take goes to the pump's pending, and so does everything after
// it, which hands the session back after the pump's pass.
type loopWriter struct {
	fd int
	p  *pump
}

func (w *loopWriter) Write(b []byte) (int, error) {
	if len(w.p.pending) > 0 {
		w.p.pending = append(w.p.pending, b...)
		return len(b), nil
	}
	done, e := rawio.SendAll(w.fd, b)
	switch e {
	case 0:
	case syscall.EAGAIN:
		w.p.pending = append(w.p.pending, b[done:]...)
	default:
		return done, os.NewSyscallError("write", e)
	}
	return len(b), nil
}

// newLoops starts n event loops, or none when the system gives none.
func newLoops(n int) []*evLoop {
	var loops []*evLoop
	for range n {
		l, err := newLoop()
		if err != nil {
			break
		}
		loops = append(loops, l)
		go l.run()
	}
	return loops
}

func newLoop() (*evLoop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		return nil, err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}); err != nil {
		unix.Close(ep)
		unix.Close(efd)
		return nil, err
	}
	// Non-blocking, so that os.NewFile puts it in Go's poller.
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		unix.Close(efd)
		return nil, err
	}
	file := os.NewFile(uintptr(ep), "epoll")
	wait, err := file.SyscallConn()
	if err != nil {
		file.Close()
		unix.Close(efd)
		return nil, err
	}
	return &evLoop{ep: ep, efd: efd, file: file, wait: wait, events: make([]unix.EpollEvent, loopEvents), done: make(chan struct{})}, nil
}

// enter hands the session's relay to the loop, which hands it back
// through the returned channel; nil when a leg is not a raw socket.
//
// The loop takes the sockets off Go's poller, which would otherwise wake
// for every event the loop handles too: it keeps a duplicate of each
// descriptor and closes the connections (Go deregisters a descriptor
// when it closes it; the socket stays open through the duplicate). The
// session's goroutine gets new connections of them back (handedBack).
func (l *evLoop) enter(s *session, fromClient, fromServer *pump) *loopSess {
	cfd, err := dupSocket(s.client)
	if err != nil {
		return nil
	}
	sfd, err := dupSocket(s.server)
	if err != nil {
		unix.Close(cfd)
		return nil
	}
	ls := &loopSess{l: l, back: make(chan struct{})}
	ls.legs[0] = loopLeg{fd: cfd, in: fromClient, out: &loopWriter{fd: sfd, p: fromClient}}
	ls.legs[1] = loopLeg{fd: sfd, in: fromServer, out: &loopWriter{fd: cfd, p: fromServer}}
	fromClient.dst, fromServer.dst = ls.legs[0].out, ls.legs[1].out
	s.client.Close()
	s.server.Close()
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		ls.gone = true
		ls.reconnect()
		close(ls.back)
		return ls
	}
	l.incoming = append(l.incoming, ls)
	l.signalLocked()
	l.mu.Unlock()
	return ls
}

// dupSocket returns a duplicate of c's descriptor, non-blocking, when c is
// a plain TCP or Unix socket.
func dupSocket(c net.Conn) (int, error) {
	rc := rawConn(c)
	if rc == nil {
		return -1, errors.New("not a raw socket")
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	return fd, derr
}

// conns returns the connections handed back, the old ones where a
// descriptor could not become one (closed: the pumps end the session).
func (ls *loopSess) conns(client, server net.Conn) (net.Conn, net.Conn) {
	if c := ls.legs[0].conn; c != nil {
		client = c
	}
	if c := ls.legs[1].conn; c != nil {
		server = c
	}
	return client, server
}

// reconnect makes connections of the session's descriptors again, for
// its goroutine: a descriptor that cannot become one is closed, and its
// leg's connection left nil (the session's goroutine ends the session).
func (ls *loopSess) reconnect() {
	for i := range ls.legs {
		leg := &ls.legs[i]
		f := os.NewFile(uintptr(leg.fd), "socket")
		c, err := net.FileConn(f) // a duplicate of its own, in Go's poller
		f.Close()
		if err == nil {
			leg.conn = c
		}
		leg.fd = -1
	}
}

// leave asks the loop to hand the session back (its connections are
// closing); it may have already.
func (ls *loopSess) leave() {
	l := ls.l
	l.mu.Lock()
	l.evict = append(l.evict, ls)
	l.signalLocked()
	l.mu.Unlock()
}

// stop ends the loop once its sessions are handed back, and waits for it.
func (l *evLoop) stop() {
	l.mu.Lock()
	l.closing = true
	l.signalLocked()
	l.mu.Unlock()
	<-l.done
}

func (l *evLoop) signalLocked() {
	if !l.signaled && !l.exited {
		l.signaled = true
		one := [8]byte{1}
		unix.Write(l.efd, one[:])
	}
}

func (l *evLoop) run() {
	defer close(l.done)
	defer func() {
		l.mu.Lock()
		l.exited = true
		unix.Close(l.efd)
		l.mu.Unlock()
		l.file.Close()
	}()
	n := 0
	wait := func(uintptr) bool {
		// Parked only after a poll found nothing: Go's poller
		// reports the epoll descriptor edge-triggered, and it forgets
		// an edge that came before this Read.
		n = rawio.EpollWaitNow(l.ep, l.events)
		return n > 0
	}
	for !l.stopped {
		if err := l.wait.Read(wait); err != nil {
			return
		}
		l.serve(l.events[:n])
		l.free = append(l.free, l.freed...)
		l.freed = l.freed[:0]
		// Let the recorder's goroutines and the connections on the
		// goroutine path have their turn.
		runtime.Gosched()
	}
}

func (l *evLoop) serve(events []unix.EpollEvent) {
	for i := range events {
		ev := &events[i]
		if ev.Fd == -1 {
			l.control()
			continue
		}
		slot, leg := ev.Fd>>1, ev.Fd&1
		if int(slot) >= len(l.slots) {
			continue
		}
		ls := l.slots[slot]
		if ls == nil || ls.gone {
			continue
		}
		l.readable(ls, &ls.legs[leg])
	}
}

// control takes the sessions entering and leaving.
func (l *evLoop) control() {
	var buf [8]byte
	unix.Read(l.efd, buf[:])
	l.mu.Lock()
	l.signaled = false
	incoming, evict, closing := l.incoming, l.evict, l.closing
	l.incoming, l.evict = nil, nil
	l.mu.Unlock()
	for _, ls := range incoming {
		l.register(ls)
	}
	for _, ls := range evict {
		if !ls.gone {
			l.handBack(ls)
		}
	}
	if closing {
		for _, ls := range l.slots {
			if ls != nil && !ls.gone {
				l.handBack(ls)
			}
		}
		l.stopped = true
	}
}

func (l *evLoop) register(ls *loopSess) {
	if ls.gone {
		// Left before it entered: its connections closed.
		return
	}
	if k := len(l.free); k > 0 {
		ls.slot = l.free[k-1]
		l.free = l.free[:k-1]
	} else {
		ls.slot = int32(len(l.slots))
		l.slots = append(l.slots, nil)
	}
	l.slots[ls.slot] = ls
	for i := range ls.legs {
		if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, ls.legs[i].fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: ls.slot<<1 | int32(i)}); err != nil {
			l.handBack(ls)
			return
		}
	}
}

// readable reads leg's socket once and relays what came.
func (l *evLoop) readable(ls *loopSess, leg *loopLeg) {
	p := leg.in
	b := p.target()
	n, e := rawio.Recv(leg.fd, b)
	var rerr error
	switch {
	case e == syscall.EAGAIN:
		return
	case e != 0:
		n, rerr = 0, os.NewSyscallError("read", e)
	case n == 0:
		rerr = io.EOF
	}
	if err := p.feed(n, rerr); err != nil {
		p.stopped = err
		l.handBack(ls)
		return
	}
	if len(p.pending) > 0 {
		l.handBack(ls)
	}
}

// handBack takes the session out of the loop and wakes its goroutine.
func (l *evLoop) handBack(ls *loopSess) {
	ls.gone = true
	for i := range ls.legs {
		unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, ls.legs[i].fd, nil)
	}
	if int(ls.slot) < len(l.slots) && l.slots[ls.slot] == ls {
		l.slots[ls.slot] = nil
		l.freed = append(l.freed, ls.slot)
	}
	ls.reconnect()
	close(ls.back)
}
