package proxy

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// The relay's reads and writes on TCP and Unix socket connections, on
// Linux, go through the connections' syscall.RawConn rather than their
// Read and Write, as raw system calls: non-blocking reads and writes cannot block, and a raw
// call does not tell the scheduler it might (entersyscall). That telling
// is what wakes the runtime's monitor thread (sysmon) each time the
// process turns from idle to busy, a futex wake-up and a run of 20 µs
// timer sleeps per burst of traffic: as much CPU as the relaying itself
// at a few thousand round trips a second (docs/performance.md).
//
// Reads still go on until one fails with EAGAIN, as Go's own do: after a
// read that did not fill the buffer, the peer's end of stream or an error
// may be pending without another edge from the poller to announce it.

// sockSend and sockRecv are the relay's one write and one read of a
// socket, as send and recv (sendto and recvfrom without an address)
// rather than write and read: the same bytes, without the file layer's
// work that a socket does not need (the file position's lock, the size
// checks, the file-change notification). MSG_NOSIGNAL gives EPIPE for a
// peer gone instead of a SIGPIPE the runtime would have to ignore.
func sockSend(fd int, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), syscall.MSG_NOSIGNAL, 0, 0)
	return int(n), e
}

// sendAll sends b until all of it went, the socket's buffer is full
// (EAGAIN) or the send failed, again after EINTR. It returns how many
// bytes went and the error that stopped it, 0 when all went.
func sendAll(fd int, b []byte) (int, syscall.Errno) {
	done := 0
	for done < len(b) {
		n, e := sockSend(fd, b[done:])
		switch e {
		case 0:
			done += n
		case syscall.EINTR:
		default:
			return done, e
		}
	}
	return done, 0
}

// sockRecv reads once, again after EINTR.
func sockRecv(fd int, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// rawConn returns c's RawConn when the relay can read it raw: a TCP or
// Unix socket connection (TLS keeps its own Read).
func rawConn(c io.Reader) syscall.RawConn {
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// rawWriter writes to a connection through its RawConn.
type rawWriter struct{ rc syscall.RawConn }

// asRawWriter returns w's raw writer when rawConn takes w, else w.
func asRawWriter(w io.Writer) io.Writer {
	if rc := rawConn(asReader(w)); rc != nil {
		return rawWriter{rc}
	}
	return w
}

func asReader(w io.Writer) io.Reader {
	r, _ := w.(io.Reader)
	return r
}

func (w rawWriter) Write(b []byte) (int, error) {
	done := 0
	var werr error
	err := w.rc.Write(func(fd uintptr) bool {
		n, e := sendAll(int(fd), b[done:])
		done += n
		switch e {
		case 0:
		case syscall.EAGAIN:
			return false // the socket's buffer is full: wait until it drains
		default:
			werr = os.NewSyscallError("write", e)
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return done, err
}

// runRaw is run's loop on a connection read raw: one read per call of
// the RawConn's Read, so that a Close between two is seen.
func (p *pump) runRaw(rc syscall.RawConn) error {
	p.dst = asRawWriter(p.dst)
	var stop error
	read := func(fd uintptr) bool {
		b := p.target()
		var rerr error
		n, e := sockRecv(int(fd), b)
		switch {
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			n, rerr = 0, os.NewSyscallError("read", e)
		case n == 0:
			rerr = io.EOF
		}
		stop = p.feed(n, rerr)
		return true
	}
	for {
		if err := rc.Read(read); err != nil {
			return err
		}
		if stop != nil {
			return stop
		}
	}
}
