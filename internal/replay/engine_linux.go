//go:build linux

package replay

import (
	"io"
	"iter"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/rawio"
	"golang.org/x/sys/unix"
)

// The engine runs the sessions of a replay as coroutines of one
// goroutine, which waits for all their connections with one epoll, as
// pgbench runs its clients from one thread with one poll(). A session's
// code is the same as on a goroutine of its own (session.run); where it
// would wait, it parks instead (task.park) and the engine resumes it:
//
//   - for an answer, or room to write, on its connection: engineConn, the
//     net.Conn under pgconn, parks on EAGAIN inside an exchange
//     (wire.go) and the engine resumes it on the socket's epoll event;
//   - for its queue (queue.pop): the dispatcher's push wakes it;
//   - for its statement's time, paced (task.sleepUntil): the loop's
//     timerfd, set to the earliest deadline before it sleeps;
//   - for anything else that blocks (a sync wait, the start barrier,
//     connecting, closing): session.block runs it on a goroutine of its
//     own and the session parks until it returned.
//
// Why: with a goroutine per session, every exchange parks its goroutine
// until Go's netpoller sees the answer: a read that finds nothing, the
// scheduler, epoll_wait and futex wake-ups, per statement. Measured on
// pgbench's statements (bench/replay.sh, docs/performance.md), that model
// costs 1.6-1.7x pgbench's client CPU per statement with the server on a
// CPU of its own, and a one-thread epoll loop 1.05-1.1x. A coroutine
// switch (iter.Pull) goes past the scheduler.
//
// Paced replays (speed > 0) run on it too: a session waiting for its
// statement's time parks with a deadline (task.sleepUntil), and the loop
// wakes at the earliest one through a timerfd in the same epoll. With a
// goroutine a session, each statement took a timer's wake-up, the
// precise waker's and the answer's through Go's netpoller: 9.3-9.4
// voluntary context switches a statement on bench/ctlinflate.sh's
// server, against pgbench's 1.65, and a round trip 0.05-0.1 ms longer
// outside the server's work. On the engine, waiting on the netpoller with
// raw calls for the rest (pollable), 1.8.

// engine is one replay's loop; see above.
type engine struct {
	ep, efd int
	// ep on Go's netpoller, where the loop waits when it has nothing to
	// run (wait); epc nil where the runtime would not take it.
	epf *os.File
	epc syscall.RawConn
	// epcRead is wait's callback for epc, made once (pollable): a
	// closure made at each wait would be allocated at each. It polls
	// waitEvents into waitN. The loop's.
	epcRead    func(fd uintptr) bool
	waitEvents []unix.EpollEvent
	waitN      int
	tfd        int // a timerfd on CLOCK_MONOTONIC, for the tasks' timed waits

	timers deadlines[*task] // the tasks' timed waits (under mu)
	armed  time.Time        // when tfd fires next; zero when disarmed (the loop's)

	mu       sync.Mutex
	ready    []*task // woken, to resume
	spare    []*task
	sleeping bool // the loop is in (or about to enter) a blocking epoll_wait
	signaled bool // and the eventfd was written since
	closing  bool // no task will be started any more
	conns    map[int32]*engineConn
	slot     int32
	tasks    map[*task]struct{}

	cur      atomic.Pointer[task] // the task running, nil between tasks
	blocking atomic.Int64         // goroutines of session.block running
	detached atomic.Int64         // sockets taken off Go's netpoller
	done     chan struct{}        // closed when the loop returned
}

// task is one session's coroutine.
type task struct {
	e      *engine
	f      func(*task) // until the loop makes the coroutine
	resume func() (struct{}, bool)
	yield  func(struct{}) bool
	queued bool // in e.ready (under e.mu)
}

// newEngine returns a running engine, or nil when the system gives none.
func newEngine() *engine {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		return nil
	}
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		unix.Close(efd)
		return nil
	}
	for _, w := range []struct{ fd, key int }{{efd, keyEventfd}, {tfd, keyTimerfd}} {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, w.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.key)}); err != nil {
			unix.Close(ep)
			unix.Close(efd)
			unix.Close(tfd)
			return nil
		}
	}
	e := &engine{ep: ep, efd: efd, tfd: tfd, conns: map[int32]*engineConn{}, tasks: map[*task]struct{}{}, done: make(chan struct{})}
	e.pollable()
	go e.loop()
	return e
}

// The keys of the engine's own descriptors in its epoll events (a
// session's socket's is its slot, from 1).
const (
	keyEventfd = -1
	keyTimerfd = -2
)

// onLoop reports whether t is the task the engine's loop is running: the
// caller is t's own coroutine, which may park, and not a goroutine of
// session.block's.
func (t *task) onLoop() bool { return t != nil && t.e.cur.Load() == t }

// sleepUntil parks t until at, and reports whether the time came before
// done was closed (the stop wakes every task: wakeAll). Only t's own
// coroutine calls it (onLoop). A deadline left behind by a stop wakes the
// task once more for nothing, which a parked task allows.
func (t *task) sleepUntil(at time.Time, done <-chan struct{}) bool {
	for {
		if isDone(done) {
			return false
		}
		if !time.Now().Before(at) {
			return true
		}
		e := t.e
		e.mu.Lock()
		e.timers.push(at, t)
		e.mu.Unlock()
		t.park()
	}
}

// dueTimers queues the tasks whose deadline came; e.mu is held.
func (e *engine) dueTimers() {
	if _, ok := e.timers.next(); !ok {
		return
	}
	now := time.Now()
	for {
		t, ok := e.timers.popDue(now)
		if !ok {
			return
		}
		if !t.queued {
			t.queued = true
			e.ready = append(e.ready, t)
		}
	}
}

// armTimer sets the timerfd to the earliest deadline before the loop
// sleeps, unless it is set for it already; e.mu is held.
func (e *engine) armTimer() {
	at, ok := e.timers.next()
	if !ok {
		return
	}
	if !e.armed.IsZero() && !at.Before(e.armed) {
		return
	}
	e.armed = at
	d := max(time.Until(at), time.Microsecond)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	rawio.TimerfdSettime(e.tfd, &spec)
}

// pollable puts the engine's epoll on Go's netpoller, so that the loop
// waits there (wait) rather than in a blocking epoll_wait of its own.
//
// Why: a blocking epoll_wait made through syscall.Syscall keeps the
// loop's P in the system-call state, and when the process was idle,
// entering it wakes the runtime's monitor (sysmon), which then polls
// every 20 µs; the loop, woken, has to find a P again, often on another
// thread. Parked on the netpoller, the goroutine holds no P and an idle
// thread waits in the runtime's own epoll. On bench/ctlinflate.sh's
// paced replay (perf record -e sched:sched_switch, sched_wakeup) sysmon's
// sleeps were 62% of the replayer's context switches, the loop ran on
// four threads in turn, and 55-57% of the wake-ups came from
// entersyscall. Parking alone left 4.9 voluntary switches a statement (the
// polls after the wake-up entered system calls too); with every call the
// loop makes that cannot block made raw (package rawio), 1.8, against
// 5.0 before and pgbench's 1.7, and the server's time per call of the
// replayed statements came down 8-12% (paired), to the application's
// (docs/performance.md).
func (e *engine) pollable() {
	if err := unix.SetNonblock(e.ep, true); err != nil {
		return
	}
	// The file owns the descriptor from here (its finalizer would close
	// it): closeEpoll closes it.
	e.epf = os.NewFile(uintptr(e.ep), "replay-engine-epoll")
	rc, err := e.epf.SyscallConn()
	if err != nil {
		return
	}
	// A descriptor the netpoller refused fails its first wait, which
	// then falls back to the blocking one.
	e.epc = rc
	e.epcRead = func(fd uintptr) bool {
		e.waitN = rawio.EpollWaitNow(int(fd), e.waitEvents)
		return e.waitN != 0
	}
}

// wait is epoll_wait on the engine's epoll: timeout 0 polls, -1 waits,
// parked on Go's netpoller where the epoll is on it (pollable).
func (e *engine) wait(events []unix.EpollEvent, timeout int) (int, error) {
	if timeout == 0 {
		return rawio.EpollWaitNow(e.ep, events), nil
	}
	if e.epc == nil {
		return unix.EpollWait(e.ep, events, timeout)
	}
	e.waitEvents = events
	err := e.epc.Read(e.epcRead)
	n := e.waitN
	e.waitEvents, e.waitN = nil, 0
	if err != nil {
		// The netpoller gave the descriptor up: wait as before.
		e.epc = nil
		return unix.EpollWait(e.ep, events, timeout)
	}
	return n, nil
}

// closeEpoll closes the engine's epoll, through its os.File where it has
// one (which the netpoller also forgets).
func (e *engine) closeEpoll() {
	if e.epf != nil {
		e.epf.Close()
		return
	}
	unix.Close(e.ep)
}

// start runs f as a new task. Any goroutine.
func (e *engine) start(f func(t *task)) {
	t := &task{e: e, f: f}
	e.mu.Lock()
	e.tasks[t] = struct{}{}
	e.mu.Unlock()
	e.wake(t)
}

// close says no task will be started any more: the loop returns once the
// last one ended. It waits for that.
func (e *engine) close() {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	e.wake(nil)
	<-e.done
}

// wake has the loop resume t (nil: only look again). Any goroutine; a
// task woken when it was not parked, or for something else than it waits
// for, looks again and parks again.
func (e *engine) wake(t *task) {
	e.mu.Lock()
	if t != nil && !t.queued {
		t.queued = true
		e.ready = append(e.ready, t)
	}
	signal := e.sleeping && !e.signaled
	if signal {
		e.signaled = true
	}
	e.mu.Unlock()
	if signal {
		var one = [8]byte{1}
		rawio.Write(e.efd, one[:])
	}
}

// wakeAll wakes every task: the replay was told to stop.
func (e *engine) wakeAll() {
	e.mu.Lock()
	for t := range e.tasks {
		if !t.queued {
			t.queued = true
			e.ready = append(e.ready, t)
		}
	}
	signal := e.sleeping && !e.signaled
	e.signaled = e.signaled || signal
	e.mu.Unlock()
	if signal {
		var one = [8]byte{1}
		rawio.Write(e.efd, one[:])
	}
}

// step resumes t until it parks or ends.
func (e *engine) step(t *task) {
	if t.resume == nil {
		// Made on the loop's goroutine, whose thread it is locked to:
		// a coroutine runs locked as the goroutine that made it.
		f := t.f
		t.f = nil
		t.resume, _ = iter.Pull(func(yield func(struct{}) bool) {
			t.yield = yield
			f(t)
		})
	}
	e.cur.Store(t)
	_, alive := t.resume()
	e.cur.Store(nil)
	if !alive {
		e.mu.Lock()
		delete(e.tasks, t)
		e.mu.Unlock()
	}
}

func (e *engine) loop() {
	defer close(e.done)
	defer unix.Close(e.tfd)
	defer unix.Close(e.efd)
	defer e.closeEpoll()
	events := make([]unix.EpollEvent, 256)
	for {
		e.mu.Lock()
		e.dueTimers()
		run := e.ready
		e.ready = e.spare[:0]
		for _, t := range run {
			t.queued = false
		}
		if len(run) == 0 && e.closing && len(e.tasks) == 0 {
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		for i, t := range run {
			e.step(t)
			run[i] = nil
		}
		e.spare = run
		timeout := 0
		if len(run) == 0 {
			if e.blocking.Load() > 0 {
				// A goroutine of blocking work may have been woken
				// by what ran (a commit a sync wait waited for):
				// with one CPU it runs before the loop sleeps.
				runtime.Gosched()
			}
			e.mu.Lock()
			if len(e.ready) > 0 || (e.closing && len(e.tasks) == 0) || e.timers.due(time.Now()) {
				// Woken, closed or due since the top of the loop.
				e.mu.Unlock()
				continue
			}
			e.armTimer()
			e.sleeping = true
			e.mu.Unlock()
			timeout = -1
		}
		n, err := e.wait(events, timeout)
		if timeout < 0 {
			e.mu.Lock()
			e.sleeping, e.signaled = false, false
			e.mu.Unlock()
		}
		if err != nil && err != unix.EINTR {
			panic("replay engine: epoll_wait: " + err.Error())
		}
		for _, ev := range events[:max(n, 0)] {
			switch ev.Fd {
			case keyEventfd:
				var buf [8]byte
				rawio.Read(e.efd, buf[:])
				continue
			case keyTimerfd:
				var buf [8]byte
				rawio.Read(e.tfd, buf[:])
				e.mu.Lock()
				e.armed = time.Time{}
				e.mu.Unlock()
				continue
			}
			e.mu.Lock()
			c := e.conns[ev.Fd]
			e.mu.Unlock()
			if c == nil {
				continue
			}
			bad := ev.Events&(unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0
			if ev.Events&unix.EPOLLIN != 0 || bad {
				c.rdy = true
			}
			if ev.Events&unix.EPOLLOUT != 0 || bad {
				c.wrdy = true
			}
			if w := c.waiter; w != nil && ((c.waitOut && c.wrdy) || (!c.waitOut && c.rdy)) {
				c.waiter = nil
				e.step(w)
			}
		}
	}
}

// sockRecv and sockSend are one read and one write of a session's
// non-blocking socket, as raw system calls (package rawio says why).
func sockRecv(fd int, p []byte) (int, error) {
	n, e := rawio.Recv(fd, p)
	if e != 0 {
		return 0, e
	}
	return n, nil
}

func sockSend(fd int, p []byte) (int, error) {
	n, e := rawio.Send(fd, p)
	if e != 0 {
		return 0, e
	}
	return n, nil
}

// park gives the engine back the CPU until the task is woken.
func (t *task) park() { t.yield(struct{}{}) }

// engineConn is a session's socket under pgconn, when the session runs on
// the engine. Inside an exchange (mine set, on the task's coroutine) a
// read or write that would wait parks the task until epoll says the
// socket is ready; anywhere else (connecting, pgconn's own calls, a
// goroutine of blocking work) it is the plain net.Conn.
//
// pgconn reads the socket from a goroutine of its own only after its
// slow-write timer fired, which its own calls (Connect, Prepare,
// Deallocate, Close) arm and the replay's exchange (wire.go) does not.
// Such a read can outlive the call that started it; the replay ends it
// after each of those calls (detachConn, resynced) but Close, whose read
// the descriptor's lock (fdMu) keeps from a closed descriptor. parked also checks that the engine is running the
// socket's own session, so that a read from any other goroutine takes
// the plain path.
type engineConn struct {
	net.Conn
	e    *engine
	fd   int
	t    *task        // the session's, whose coroutine parks
	slot atomic.Int32 // in e.conns once attached; 0 before
	mine atomic.Bool

	// The engine's and the task's, which never run at once.
	rdy, wrdy  bool  // an epoll event said readable, writable
	waiter     *task // parked for this socket
	waitOut    bool  // for room to write, not for an answer
	afterWrite bool  // nothing read since the last write
	outArmed   bool  // epoll also watches for room to write

	deadline atomic.Int64 // UnixNano; 0 none
	dmu      sync.Mutex
	dtimer   *time.Timer

	// After detach: the socket is a duplicate of the one Go's
	// netpoller followed, which it no longer does; its addresses, kept.
	detached      bool
	local, remote net.Addr
	closed        atomic.Bool
	// Held (read) by each plain read and write while it uses the
	// descriptor, which Close closes only under it: a read pgconn left
	// waiting on a goroutine of its own (its slow-write timer, as in
	// Close's own Terminate) must not go on with a number the process
	// may have given another session's socket meanwhile.
	fdMu    sync.RWMutex
	plainIn atomic.Int32 // plain reads and writes under way
}

// detach takes the socket from Go's netpoller, once connected: every
// answer to any session would otherwise also wake an idle thread of the
// runtime waiting in the netpoller's own epoll (any goroutine waiting on
// the network makes one wait there), only to find nothing to do. The
// socket is duplicated and the original closed, which removes it from
// the netpoller; the duplicate keeps the connection open. From then on a
// read or write outside an exchange on the engine waits with poll(2).
// The session's goroutine calls it, before the connection is used.
func (c *engineConn) detach() error {
	fd, err := unix.FcntlInt(uintptr(c.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	c.local, c.remote = c.Conn.LocalAddr(), c.Conn.RemoteAddr()
	c.Conn.Close()
	c.fd, c.detached = fd, true
	c.e.detached.Add(1)
	return nil
}

func (c *engineConn) LocalAddr() net.Addr {
	if c.detached {
		return c.local
	}
	return c.Conn.LocalAddr()
}

func (c *engineConn) RemoteAddr() net.Addr {
	if c.detached {
		return c.remote
	}
	return c.Conn.RemoteAddr()
}

// pollWait waits with poll(2) until the socket is ready for events, for
// at most 100 ms or until the deadline: the caller looks again.
func (c *engineConn) pollWait(events int16) {
	wait := 100 * time.Millisecond
	if d := c.deadline.Load(); d != 0 {
		wait = min(wait, time.Until(time.Unix(0, d)))
	}
	if wait <= 0 {
		return
	}
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: events}}
	unix.Poll(fds, int(wait.Milliseconds())+1)
}

// usePlain holds the descriptor for a plain read or write, false when
// Close has closed it.
func (c *engineConn) usePlain() bool {
	c.fdMu.RLock()
	if c.closed.Load() {
		c.fdMu.RUnlock()
		return false
	}
	c.plainIn.Add(1)
	return true
}

func (c *engineConn) donePlain() {
	c.plainIn.Add(-1)
	c.fdMu.RUnlock()
}

// plainRead is Read outside an exchange on the engine, once detached.
func (c *engineConn) plainRead(p []byte) (int, error) {
	if !c.usePlain() {
		return 0, net.ErrClosed
	}
	defer c.donePlain()
	for {
		if c.closed.Load() {
			return 0, net.ErrClosed
		}
		if err := c.expired("read"); err != nil {
			return 0, err
		}
		n, err := sockRecv(c.fd, p)
		switch {
		case err == unix.EAGAIN:
			c.pollWait(unix.POLLIN)
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, c.opError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// plainWrite is Write outside an exchange on the engine, once detached.
func (c *engineConn) plainWrite(p []byte) (int, error) {
	if !c.usePlain() {
		return 0, net.ErrClosed
	}
	defer c.donePlain()
	written := 0
	for written < len(p) {
		if c.closed.Load() {
			return written, net.ErrClosed
		}
		if err := c.expired("write"); err != nil {
			return written, err
		}
		n, err := sockSend(c.fd, p[written:])
		if n > 0 {
			written += n
		}
		switch {
		case err == unix.EAGAIN:
			c.pollWait(unix.POLLOUT)
		case err == unix.EINTR:
		case err != nil:
			return written, c.opError("write", err)
		}
	}
	return written, nil
}

// wrapConn puts conn, t's session's, under the engine when it is a socket
// with a file descriptor, else returns it as is.
func (e *engine) wrapConn(conn net.Conn, t *task) net.Conn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return conn
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return conn
	}
	fd := -1
	if raw.Control(func(f uintptr) { fd = int(f) }) != nil || fd < 0 {
		return conn
	}
	return &engineConn{Conn: conn, e: e, fd: fd, t: t}
}

// What epoll watches a socket for. Room to write is watched only while a
// write waits for it (watchOut): on a unix socket every read the server
// makes of a statement is an EPOLLOUT edge, which would wake the engine
// a second time for every statement (measured: 1.7 sleeps of the engine
// per statement with it, against one answer each).
const (
	epollIn  = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET
	epollOut = epollIn | unix.EPOLLOUT
)

// watchOut has epoll watch the socket for room to write too, or no
// longer. Modifying the watch re-evaluates the socket, so room that came
// before still gives its event.
func (c *engineConn) watchOut(on bool) error {
	ev := uint32(epollIn)
	if on {
		ev = epollOut
	}
	if err := unix.EpollCtl(c.e.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: ev, Fd: c.slot.Load()}); err != nil {
		return c.opError("epoll_ctl", err)
	}
	c.outArmed = on
	return nil
}

// attach registers the socket with the engine's epoll.
func (c *engineConn) attach() error {
	e := c.e
	e.mu.Lock()
	e.slot++
	slot := e.slot
	e.conns[slot] = c
	e.mu.Unlock()
	c.rdy, c.wrdy = true, true // unknown: try first
	err := unix.EpollCtl(e.ep, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: epollIn, Fd: slot})
	if err != nil {
		e.mu.Lock()
		delete(e.conns, slot)
		e.mu.Unlock()
		return err
	}
	c.slot.Store(slot)
	return nil
}

// parked reports whether this call runs on the task's coroutine inside an
// exchange, attaching the socket the first time; false: be a plain
// net.Conn.
func (c *engineConn) parked() bool {
	if !c.mine.Load() {
		return false
	}
	if c.e.cur.Load() != c.t {
		return false
	}
	return c.slot.Load() != 0 || c.attach() == nil
}

// wait parks the task until the socket is ready for what it waits for,
// the deadline passes or something else woke it.
func (c *engineConn) wait(out bool) {
	c.waiter, c.waitOut = c.t, out
	c.t.park()
	c.waiter = nil
}

// expired returns the error of a deadline passed, nil if none.
func (c *engineConn) expired(op string) error {
	if d := c.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
		return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
	}
	return nil
}

func (c *engineConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, err)}
}

func (c *engineConn) Read(p []byte) (int, error) {
	if c.detached && c.closed.Load() {
		return 0, net.ErrClosed
	}
	if !c.parked() {
		if c.detached {
			return c.plainRead(p)
		}
		return c.Conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if err := c.expired("read"); err != nil {
			return 0, err
		}
		if c.afterWrite && !c.rdy {
			// The answer to what was just written will come with an
			// event of its own: no read that finds nothing first.
			c.afterWrite = false
			c.wait(false)
			continue
		}
		c.afterWrite = false
		n, err := sockRecv(c.fd, p)
		switch {
		case err == unix.EAGAIN:
			c.rdy = false
			c.wait(false)
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, c.opError("read", err)
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *engineConn) Write(p []byte) (int, error) {
	if c.detached && c.closed.Load() {
		return 0, net.ErrClosed
	}
	if !c.parked() {
		if c.detached {
			return c.plainWrite(p)
		}
		return c.Conn.Write(p)
	}
	written := 0
	for written < len(p) {
		if err := c.expired("write"); err != nil {
			return written, err
		}
		if written == 0 {
			// Before the bytes go: the answer's epoll event comes
			// after this, and Read waits for it.
			c.rdy = false
		}
		n, err := sockSend(c.fd, p[written:])
		if n > 0 {
			written += n
		}
		switch {
		case err == unix.EAGAIN:
			c.wrdy = false
			if err := c.watchOut(true); err != nil {
				return written, err
			}
			c.wait(true)
		case err == unix.EINTR:
		case err != nil:
			return written, c.opError("write", err)
		}
	}
	if c.outArmed {
		if err := c.watchOut(false); err != nil {
			return written, err
		}
	}
	c.afterWrite = true
	return written, nil
}

// SetDeadline also wakes the task parked on the socket when the deadline
// is past, or when it passes: the I/O watch and the stop cut a silent
// target's connections so.
func (c *engineConn) SetDeadline(t time.Time) error {
	c.setDeadline(t)
	if c.detached {
		return nil
	}
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline and SetWriteDeadline set both: pgconn sets neither.
func (c *engineConn) SetReadDeadline(t time.Time) error { return c.SetDeadline(t) }

func (c *engineConn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }

func (c *engineConn) setDeadline(t time.Time) {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.dtimer != nil {
		c.dtimer.Stop()
		c.dtimer = nil
	}
	if t.IsZero() {
		c.deadline.Store(0)
		return
	}
	c.deadline.Store(t.UnixNano())
	if d := time.Until(t); d <= 0 {
		c.e.wake(c.t)
	} else {
		c.dtimer = time.AfterFunc(d, func() { c.e.wake(c.t) })
	}
}

func (c *engineConn) Close() error {
	if c.closed.Swap(true) {
		return net.ErrClosed
	}
	c.dmu.Lock()
	if c.dtimer != nil {
		c.dtimer.Stop()
		c.dtimer = nil
	}
	c.dmu.Unlock()
	if slot := c.slot.Swap(0); slot != 0 {
		e := c.e
		unix.EpollCtl(e.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
		e.mu.Lock()
		delete(e.conns, slot)
		e.mu.Unlock()
	}
	if c.detached {
		// Shut down first: a plain read or write waiting in poll(2)
		// wakes, sees closed and lets the descriptor go.
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
		c.fdMu.Lock()
		defer c.fdMu.Unlock()
		return unix.Close(c.fd)
	}
	return c.Conn.Close()
}
