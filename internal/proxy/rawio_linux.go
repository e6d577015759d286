package proxy

import (
	"io"
	"net"
	"os"
	"syscall"

	"github.com/pgrehearse/pgrehearse/internal/rawio"
)

// The relay's reads and writes on TCP and Unix socket connections, on
// Linux, go through the connections' syscall.RawConn rather than their
// Read and Write, as raw system calls (package rawio, which says why).
//
// Reads still go on until one fails with EAGAIN, as Go's own do: after a
// read that did not fill the buffer, the peer's end of stream or an error
// may be pending without another edge from the poller to announce it.

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
		n, e := rawio.SendAll(int(fd), b[done:])
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
		n, e := rawio.Recv(int(fd), b)
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
