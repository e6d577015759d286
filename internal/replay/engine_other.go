//go:build !linux

package replay

import (
	"net"
	"sync/atomic"
)

// Elsewhere than on Linux there is no engine (engine_linux.go): every
// session runs on a goroutine of its own, at every speed.
type engine struct {
	blocking atomic.Int64
	done     chan struct{}
}

type task struct{ e *engine }

type engineConn struct {
	net.Conn
	mine atomic.Bool
}

func newEngine() *engine                                   { return nil }
func (e *engine) start(func(*task))                        {}
func (e *engine) close()                                   {}
func (e *engine) wake(*task)                               {}
func (e *engine) wakeAll()                                 {}
func (e *engine) wrapConn(conn net.Conn, _ *task) net.Conn { return conn }
func (t *task) park()                                      {}
func (c *engineConn) detach() error                        { return nil }
