//go:build !linux

package replay

import (
	"net"
	"sync/atomic"
	"time"
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
func (t *task) onLoop() bool                               { return false }
func (t *task) sleepUntil(time.Time, <-chan struct{}) bool { return false }
func (c *engineConn) detach() error                        { return nil }
